package engine

/*
#include <linux/membarrier.h>
#include "engine.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// GenBlock is one buffer of encoded log-gen records of one thread, in
// the format of loggen.c (read back by package reports).
type GenBlock struct {
	Thread  uint32 // Thread.ID of the writer
	Records int    // records in Data
	Data    []byte // valid until the emit callback returns
}

// DrainGen passes every log-gen buffer handed over so far to emit, in
// per-thread order, and frees it. With final (collection must be off)
// it also takes each thread's partly filled buffer, once no event runs
// on that thread. emit may look threads up (WithThreads): a thread is
// listed until Retire, which callers run only after draining.
func DrainGen(final bool, emit func(GenBlock) error) error {
	var firstErr error
	put := func(b *C.jp_genbuf) {
		data := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(b), C.sizeof_jp_genbuf)), int(b.used))
		if err := emit(GenBlock{Thread: uint32(b.thread), Records: int(b.nrec), Data: data}); err != nil && firstErr == nil {
			firstErr = err
		}
		C.jp_gen_done(b)
	}
	for b := (*C.jp_genbuf)(C.jp_gen_take()); b != nil; {
		next := b.next
		put(b)
		b = next
	}
	if final {
		var partial []*C.jp_genbuf
		WithThreads(func(ts []Thread) {
			var owners []*C.jp_thread
			for _, t := range ts {
				if t.t == nil {
					continue // packed: its buffers were handed over at its end
				}
				if !waitIdle(t.t) {
					continue // still in an event after a second: leave it be
				}
				if b := C.jp_gen_take_partial(t.t); b != nil {
					partial = append(partial, b)
					owners = append(owners, t.t)
				}
			}
			// A callback already under way when events were turned off
			// stores busy = 1 and then loads its buffer pointer; the
			// CPU may let that load pass the store still sitting in its
			// store buffer, so busy read 0 above while the thread may
			// hold the buffer just taken. The fence makes such a store
			// visible (see jp_fence): look again after it, and leave
			// a buffer whose thread is still in an event unwritten and
			// unfreed rather than free it under the thread.
			genFence = fence()
			for i, t := range owners {
				if !waitIdle(t) {
					partial[i] = nil
				}
			}
		})
		for _, b := range partial {
			if b != nil {
				put(b)
			}
		}
	}
	return firstErr
}

// genFence is how the final drain made the event path's stores visible
// (GenFence).
var genFence string

const fenceNone = "none (membarrier refused): a 1 ms pause instead"

// fence makes the stores of events under way visible (jp_fence), or,
// where the kernel refuses, waits the moment such a store takes to
// land; it says which it did.
func fence() string {
	switch C.jp_fence() {
	case C.MEMBARRIER_CMD_PRIVATE_EXPEDITED:
		return "membarrier(PRIVATE_EXPEDITED)"
	case C.MEMBARRIER_CMD_GLOBAL:
		return "membarrier(GLOBAL)"
	}
	time.Sleep(time.Millisecond) // such a store lands within nanoseconds
	return fenceNone
}

// GenFence says how the final drain of log-gen synchronised with events
// still under way when collection stopped: a membarrier, or (where the
// kernel refuses it) a short pause; empty before the final drain.
func GenFence() string { return genFence }
