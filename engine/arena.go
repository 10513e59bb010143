package engine

/*
#include "engine.h"
*/
import "C"

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// arenaAt is jp_arena_at (engine.h) in Go: element i of an arena, found
// without a cgo call, because reports read millions of nodes. Tests check
// it against the C one.
func arenaAt(a *C.jp_arena, i uint32) unsafe.Pointer {
	k, off := arenaSlot(i)
	return unsafe.Add(unsafe.Pointer(a.chunks[k]), uintptr(off)*uintptr(a.stride))
}

// arenaSlot is where element i lives: chunk k holds 8<<k elements.
func arenaSlot(i uint32) (chunk int, off uint64) {
	j := uint64(i) + 1<<chunk0Shift
	k := 63 - bits.LeadingZeros64(j)
	return k - chunk0Shift, j - 1<<k
}

const chunk0Shift = C.JP_CHUNK0_SHIFT

// arenaLen is the arena's published length.
func arenaLen(a *C.jp_arena) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&a.n)))
}

// cString is a view of a NUL-terminated C string, without a copy or a
// cgo call; valid while the C memory is.
func cString(p *C.char) []byte {
	if p == nil {
		return nil
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
}
