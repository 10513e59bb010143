// Package ctest exposes the engine's C inline functions to the engine's
// tests (cgo is not allowed in _test.go files). Only tests import it, so
// none of it ships in libjprof.so.
package ctest

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../.. -I${SRCDIR}/../../../ptt
#include "engine.h"

// jp_test_arena_slot says where jp_arena_at puts element i: which chunk,
// at which element offset. The chunk pointers of the fake arena are never
// dereferenced; each is its chunk number in the bits above 40, so the
// address jp_arena_at returns spells both out.
static void jp_test_arena_slot(uint32_t i, int *chunk, uint64_t *off)
{
	jp_arena a = { .n = 0, .stride = 1 };
	for (int k = 0; k < JP_NCHUNKS; k++)
		a.chunks[k] = (char *)((uintptr_t)(k + 1) << 40);
	uintptr_t p = (uintptr_t)jp_arena_at(&a, i);
	*chunk = (int)(p >> 40) - 1;
	*off = p & ((1ull << 40) - 1);
}
*/
import "C"

// Key is the event path's calibration key.
func Key(a, t1, b, t2, c int) int {
	return int(C.jp_key(C.uint32_t(a), C.uint32_t(t1), C.uint32_t(b), C.uint32_t(t2), C.uint32_t(c)))
}

// ArenaSlot is the event path's arena addressing.
func ArenaSlot(i uint32) (chunk int, off uint64) {
	var k C.int
	var o C.uint64_t
	C.jp_test_arena_slot(C.uint32_t(i), &k, &o)
	return int(k), uint64(o)
}

// Count32 is jp_count32 applied to c.
func Count32(c uint32, d uint64) uint32 {
	v := C.uint32_t(c)
	C.jp_count32(&v, C.uint64_t(d))
	return uint32(v)
}

// Overhead is jp_overhead.
func Overhead(min uint64, kept int64) uint64 {
	return uint64(C.jp_overhead(C.uint64_t(min), C.int64_t(kept)))
}

const (
	Chunk0Shift = C.JP_CHUNK0_SHIFT
	NChunks     = C.JP_NCHUNKS
	NTypes      = C.JP_NTYPES
	NTrans      = C.JP_NTRANSITIONS
)
