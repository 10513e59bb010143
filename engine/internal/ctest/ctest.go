// Package ctest exposes the engine's C inline functions to the engine's
// tests (cgo is not allowed in _test.go files). Only tests import it, so
// none of it ships in libjprof.so.
package ctest

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../.. -I${SRCDIR}/../../../ptt
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "seqcount.h"

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

// jp_test_seqs counts nev events (ev: node, key pairs) with the event
// path's jp_seq_count on a thread of nn nodes, node 0's first key
// (key0) counted seqn0 times already (0: none), and adds up what it counted per (node,
// key) into out[node * nk + key]: the node's own count and every count
// in the thread's arena, as readers do. Returns the allocation
// failures, or -1.
static int jp_test_seqs(const uint32_t *ev, uint32_t nev, uint32_t nn, uint32_t nk, uint32_t key0, uint32_t seqn0, uint64_t *out)
{
	jp_thread t;
	memset(&t, 0, sizeof t);
	t.seqs.stride = sizeof(jp_seqcount);
	jp_node *nodes = calloc(nn, sizeof(jp_node));
	if (nodes == NULL || jp_map_init(&t.seqmap, 64) != 0) {
		free(nodes);
		return -1;
	}
	for (uint32_t i = 0; i < nn; i++)
		nodes[i].seqkey = JP_NOKEY;
	if (seqn0 != 0) {
		nodes[0].seqkey = (uint16_t)key0;
		nodes[0].seqn = seqn0;
		out[key0] -= seqn0; // only what the events added
	}
	for (uint32_t e = 0; e < nev; e++)
		jp_seq_count(&t, &nodes[ev[2 * e]], ev[2 * e], ev[2 * e + 1]);
	for (uint32_t i = 0; i < nn; i++)
		if (nodes[i].seqn != 0)
			out[(size_t)i * nk + nodes[i].seqkey] += nodes[i].seqn;
	for (uint32_t i = 0; i < t.seqs.n; i++) {
		const jp_seqcount *sc = jp_seq_at(&t, i);
		if (sc->count != 0)
			out[(size_t)sc->node * nk + sc->key] += sc->count;
	}
	int failures = (int)t.alloc_failures;
	jp_arena_free(&t.seqs);
	jp_map_free(&t.seqmap);
	free(nodes);
	return failures;
}
*/
import "C"

import "unsafe"

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

// Seqs runs the event path's calibration-key counting over events
// (node, key pairs) on nn nodes, node 0's first key (key0) already
// counted seqn0 times, and returns what the counts add up to per node*nk+key, as
// the reports read them (its own count and the thread's others), less
// seqn0; and the allocation failures.
func Seqs(events [][2]uint32, nn, nk int, key0, seqn0 uint32) ([]uint64, int) {
	flat := make([]C.uint32_t, 0, 2*len(events)+2)
	for _, e := range events {
		flat = append(flat, C.uint32_t(e[0]), C.uint32_t(e[1]))
	}
	flat = append(flat, 0, 0) // never empty, for &flat[0]
	out := make([]uint64, nn*nk)
	f := C.jp_test_seqs(&flat[0], C.uint32_t(len(events)), C.uint32_t(nn), C.uint32_t(nk), C.uint32_t(key0), C.uint32_t(seqn0), (*C.uint64_t)(unsafe.Pointer(&out[0])))
	return out, int(f)
}
