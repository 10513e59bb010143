package jvmti

/*
#include <stdlib.h>
#include "jp.h"

// jp_test_arena_slot says where element i of an arena lives: which chunk
// and at which element offset in it.
static void jp_test_arena_slot(uint32_t i, int *chunk, uint64_t *off)
{
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j);
	*chunk = k - JP_CHUNK0_SHIFT;
	*off = j - (1ull << k);
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
