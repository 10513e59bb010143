package engine

/*
#include "engine.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// listMu serialises every Go walk of the thread list with retirement,
// which unlinks and frees records. C threads only push at the head.
var listMu sync.Mutex

// Thread is a view of one thread's record in C, valid only inside the
// callback of [WithThreads]. The thread may be running: each node read
// is one that was fully published, but its counters may be a few events
// apart from each other.
type Thread struct{ t *C.jp_thread }

// WithThreads calls f with every thread record, in start order, with
// the list locked: no record is freed while f runs.
func WithThreads(f func(ts []Thread)) {
	listMu.Lock()
	defer listMu.Unlock()
	f(threadsLocked())
}

func threadsLocked() []Thread {
	var out []Thread
	for t := C.jp_threads(); t != nil; t = t.next {
		out = append(out, Thread{t})
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// ID identifies the record: dense, in creation order, never reused.
func (t Thread) ID() uint32 { return uint32(t.t.id) }

// TID is the thread's OS thread id.
func (t Thread) TID() int { return int(t.t.tid) }

// Name is the thread's name as the VM gave it.
func (t Thread) Name() string {
	p := (*C.char)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.t.name))))
	return string(cString(p))
}

// Ended says whether the thread has ended.
func (t Thread) Ended() bool { return atomic.LoadInt32((*int32)(unsafe.Pointer(&t.t.ended))) != 0 }

// Fallback says whether the thread's events are calibrated with
// MinimaFallback: its PTT reads use the clock while the process's backend
// is bpf or perf (no free slot, perf refused, ...).
func (t Thread) Fallback() bool { return C.jp.minima_fb != nil && t.t.minima == C.jp.minima_fb }

// Virtual says whether the record is a virtual thread's (its TID is then
// the JVM's thread id, not an OS thread's).
func (t Thread) Virtual() bool { return t.t.virt != 0 }

// StartNS and EndNS are CLOCK_MONOTONIC; EndNS is 0 while it runs.
func (t Thread) StartNS() uint64 { return uint64(t.t.start_ns) }
func (t Thread) EndNS() uint64   { return uint64(t.t.end_ns) }

// Counters are a thread's event counts.
type Counters struct {
	Events         uint64
	UnmatchedExits uint64 // exits whose entry was never seen (Other type)
	MissedExits    uint64 // frames popped without their own exit
	AllocFailures  uint64
}

// Counters reads the thread's event counts.
func (t Thread) Counters() Counters {
	return Counters{
		Events:         uint64(t.t.events),
		UnmatchedExits: uint64(t.t.unmatched_exits),
		MissedExits:    uint64(t.t.missed_exits),
		AllocFailures:  uint64(t.t.alloc_failures),
	}
}

// Len is the number of nodes published; node 0 is the root. A node's
// parent always comes before it, so children are in first-call order.
func (t Thread) Len() int { return int(arenaLen(&t.t.nodes)) }

// Node is a view of one calling context in C.
type Node struct{ p *C.jp_node }

// Node returns node i < Len().
func (t Thread) Node(i int) Node { return Node{(*C.jp_node)(arenaAt(&t.t.nodes, uint32(i)))} }

// Parent is the caller's node; the root is its own parent.
func (n Node) Parent() int { return int(n.p.parent) }

// Type is the JProf type letter of the method in this context.
func (n Node) Type() byte { return TypeLetters[n.p._type&7] }

// Method is the registry handle of the node's method (not the root's).
func (n Node) Method() uint32 { return uint32(n.p.method) }

// Calls, Excs, DS and IN: entries, exits by exception, dispatches and
// interrupts while it ran.
func (n Node) Calls() uint64 { return uint64(n.p.calls) }
func (n Node) Excs() uint64  { return uint64(n.p.excs) }
func (n Node) DS() uint64    { return uint64(n.p.ds) }
func (n Node) IN() uint64    { return uint64(n.p.in) }

// Base is metric k spent running this method in this context.
func (n Node) Base(k int) uint64 {
	// base[] is a flexible array member, invisible to cgo: it starts
	// right after the fixed part.
	return *(*uint64)(unsafe.Add(unsafe.Pointer(n.p), C.sizeof_jp_node+8*k))
}

// NSeqs is the number of sequence counts published.
func (t Thread) NSeqs() int { return int(arenaLen(&t.t.seqs)) }

// Seq returns sequence count i < NSeqs(): how many events of a
// calibration key were attributed to a node.
func (t Thread) Seq(i int) (node, key int, count uint64) {
	sc := (*C.jp_seqcount)(arenaAt(&t.t.seqs, uint32(i)))
	return int(sc.node), int(sc.key), uint64(sc.count)
}

// MethodName is a view of a registered method's name (no copy): valid
// for the life of the process.
func MethodName(h uint32) []byte {
	if h >= ^uint32(0)-C.JP_NTYPES {
		return cString(C.jp_method_at(C.uint32_t(h)).name)
	}
	m := (*C.jp_method)(arenaAt((*C.jp_arena)(unsafe.Pointer(C.jp_methods_arena())), h))
	return cString(m.name)
}

// Retire goes over the ended threads: those done says are done with
// (their counts are reported and can never change) are unlinked and
// freed; the others are packed into exact blocks. It returns how many
// it freed.
func Retire(done func(Thread) bool) int {
	listMu.Lock()
	defer listMu.Unlock()
	n := 0
	var prev *C.jp_thread
	for t := C.jp_threads(); t != nil; {
		next := t.next
		v := Thread{t}
		if v.Ended() {
			if done(v) {
				C.jp_thread_retire(t, prev)
				n++
				t = next
				continue
			}
			C.jp_thread_compact(t)
		}
		prev = t
		t = next
	}
	return n
}

// waitIdle waits, a bounded time, until no event runs on t: collection
// is off, but a callback that started before may still be running.
func waitIdle(t *C.jp_thread) bool {
	for i := 0; i < 1000; i++ {
		if atomic.LoadInt32((*int32)(unsafe.Pointer(&t.busy))) == 0 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}
