package jvmti

/*
#include <stdlib.h>
#include "jp.h"

// jp_test_arena_slot says where the hot path's jp_arena_at puts element
// i: which chunk, at which element offset. The chunk pointers of the fake
// arena are never dereferenced; each is its chunk number in the bits
// above 40, so the address jp_arena_at returns spells both out.
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

// cKey is the hot path's calibration key, for tests.
func cKey(a, t1, b, t2, c int) int {
	return int(C.jp_key(C.uint32_t(a), C.uint32_t(t1), C.uint32_t(b), C.uint32_t(t2), C.uint32_t(c)))
}

// cArenaSlot is the hot path's arena addressing, for tests.
func cArenaSlot(i uint32) (chunk int, off uint64) {
	var k C.int
	var o C.uint64_t
	C.jp_test_arena_slot(C.uint32_t(i), &k, &o)
	return int(k), uint64(o)
}

const (
	cChunk0Shift = C.JP_CHUNK0_SHIFT
	cNChunks     = C.JP_NCHUNKS
	cNTypes      = C.JP_NTYPES
	cNTrans      = C.JP_NTRANSITIONS
)
