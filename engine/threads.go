package engine

/*
#include "engine.h"
*/
import "C"

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// listMu serialises every Go walk of the thread lists with retirement
// and packing, which unlink and free records: it is the C lock that an
// ending thread also takes (when free) to pack itself. C threads
// otherwise only push at the head.
var listMu cLock

type cLock struct{}

func (cLock) Lock()   { C.jp_list_lock() }
func (cLock) Unlock() { C.jp_list_unlock() }

// Thread is a view of one thread's record in C, live or packed, valid
// only inside the callback of [WithThreads]. A live thread may be
// running: each node read is one that was fully published, but its
// counters may be a few events apart from each other.
type Thread struct {
	t  *C.jp_thread // live record, or nil
	e  *C.jp_ended  // packed ended thread, or nil
	un *Scratch     // e's tree, decoded by Unpacked
}

// Scratch holds a packed thread's decoded tree; reuse one for every
// thread of a walk so that only one is decoded at a time.
type Scratch struct {
	nodes []byte // jp_node records of jp.node_stride bytes
	seqs  []C.jp_seqcount
}

// Unpacked returns t ready for Node and Seq: a packed thread's tree is
// decoded into s (which the returned view then uses); a live thread is
// returned as it is.
func (t Thread) Unpacked(s *Scratch) (Thread, error) {
	if t.e == nil {
		return t, nil
	}
	stride := int(C.jp.node_stride)
	nm := NMetrics()
	nn, ns := int(t.e.nnodes), int(t.e.nseqs)
	s.nodes = growBytes(s.nodes, nn*stride)
	if cap(s.seqs) < ns {
		s.seqs = make([]C.jp_seqcount, ns)
	}
	s.seqs = s.seqs[:ns]
	data := unsafe.Slice((*byte)(unsafe.Pointer(t.e.packed)), int(t.e.packed_len))
	uv := func() uint64 {
		v, n := binary.Uvarint(data)
		if n <= 0 {
			data = nil
			return 0
		}
		data = data[n:]
		return v
	}
	for i := 0; i < nn; i++ {
		nd := (*C.jp_node)(unsafe.Pointer(&s.nodes[i*stride]))
		nd.parent = C.uint32_t(uint64(i) - uv())
		if len(data) == 0 {
			return t, fmt.Errorf("engine: packed thread %d cut short", t.ID())
		}
		nd._type = C.uint8_t(data[0])
		data = data[1:]
		nd.method = C.uint32_t(uv())
		nd.calls, nd.excs, nd.ds, nd.in = C.uint64_t(uv()), C.uint32_t(uv()), C.uint32_t(uv()), C.uint32_t(uv())
		nd.seqn, nd.seqkey = C.uint32_t(uv()), C.JP_NOKEY
		if nd.seqn != 0 {
			nd.seqkey = C.uint16_t(uv())
		}
		for k := 0; k < nm; k++ {
			*(*uint64)(unsafe.Add(unsafe.Pointer(nd), C.sizeof_jp_node+8*k)) = uv()
		}
	}
	for i := 0; i < ns; i++ {
		s.seqs[i].node, s.seqs[i].key, s.seqs[i].count = C.uint32_t(uv()), C.uint32_t(uv()), C.uint64_t(uv())
	}
	if data == nil {
		return t, fmt.Errorf("engine: packed thread %d cut short", t.ID())
	}
	t.un = s
	return t, nil
}

func growBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// WithThreads calls f with every thread record, in start order, with
// the list locked: no record is freed or packed while f runs.
func WithThreads(f func(ts []Thread)) {
	listMu.Lock()
	defer listMu.Unlock()
	f(threadsLocked())
}

func threadsLocked() []Thread {
	var out []Thread
	for t := C.jp_threads(); t != nil; t = t.next {
		out = append(out, Thread{t: t})
	}
	for e := C.jp.ended; e != nil; e = e.next {
		out = append(out, Thread{e: e})
	}
	slices.SortFunc(out, func(a, b Thread) int { return cmp.Compare(a.ID(), b.ID()) })
	return out
}

// ID identifies the record: dense, in creation order, never reused.
func (t Thread) ID() uint32 {
	if t.e != nil {
		return uint32(t.e.id)
	}
	return uint32(t.t.id)
}

// TID is the thread's OS thread id.
func (t Thread) TID() int {
	if t.e != nil {
		return int(t.e.tid)
	}
	return int(t.t.tid)
}

// Name is the thread's name as the VM gave it.
func (t Thread) Name() string {
	if t.e != nil {
		return string(cString(t.e.name))
	}
	p := (*C.char)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&t.t.name))))
	return string(cString(p))
}

// Ended says whether the thread has ended.
func (t Thread) Ended() bool {
	return t.e != nil || atomic.LoadInt32((*int32)(unsafe.Pointer(&t.t.ended))) != 0
}

// Fallback says whether the thread's events are calibrated with
// MinimaFallback: its PTT reads use the clock while the process's backend
// is bpf or perf (no free slot, perf refused, ...).
func (t Thread) Fallback() bool {
	if t.e != nil {
		return t.e.fallback != 0
	}
	if t.t.virt != 0 {
		return atomic.LoadInt32((*int32)(unsafe.Pointer(&t.t.vt_fallback))) != 0
	}
	return C.jp.minima_fb != nil && t.t.minima == C.jp.minima_fb
}

// FallbackBackend is what a Fallback thread's reads used: "perf" (the
// bpf backend had no slot for it) or "clock"; "" for the others.
func (t Thread) FallbackBackend() string {
	if !t.Fallback() {
		return ""
	}
	b := C.int(0)
	switch {
	case t.e != nil:
		b = C.int(t.e.fallback)
	case t.t.virt != 0:
		b = C.int(atomic.LoadInt32((*int32)(unsafe.Pointer(&t.t.vt_fallback))))
	default:
		b = C.int(t.t.ptt_used)
	}
	if b == C.JP_PTT_PERF {
		return "perf"
	}
	return "clock"
}

// Virtual says whether the record is a virtual thread's (its TID is then
// the JVM's thread id, not an OS thread's).
func (t Thread) Virtual() bool {
	if t.e != nil {
		return t.e.virt != 0
	}
	return t.t.virt != 0
}

// StartNS and EndNS are CLOCK_MONOTONIC; EndNS is 0 while it runs.
func (t Thread) StartNS() uint64 {
	if t.e != nil {
		return uint64(t.e.start_ns)
	}
	return uint64(t.t.start_ns)
}

func (t Thread) EndNS() uint64 {
	if t.e != nil {
		return uint64(t.e.end_ns)
	}
	return uint64(t.t.end_ns)
}

// Counters are a thread's event counts.
type Counters struct {
	Events         uint64
	UnmatchedExits uint64 // exits whose entry was never seen (Other type)
	MissedExits    uint64 // frames popped without their own exit
	AllocFailures  uint64
}

// Counters reads the thread's event counts.
func (t Thread) Counters() Counters {
	if t.e != nil {
		return Counters{Events: uint64(t.e.events), UnmatchedExits: uint64(t.e.unmatched_exits),
			MissedExits: uint64(t.e.missed_exits), AllocFailures: uint64(t.e.alloc_failures)}
	}
	return Counters{
		Events:         uint64(t.t.events),
		UnmatchedExits: uint64(t.t.unmatched_exits),
		MissedExits:    uint64(t.t.missed_exits),
		AllocFailures:  uint64(t.t.alloc_failures),
	}
}

// Len is the number of nodes published; node 0 is the root. A node's
// parent always comes before it, so children are in first-call order.
func (t Thread) Len() int {
	if t.e != nil {
		return int(t.e.nnodes)
	}
	return int(arenaLen(&t.t.nodes))
}

// Node is a view of one calling context in C.
type Node struct{ p *C.jp_node }

// Node returns node i < Len(); a packed thread must be Unpacked first.
func (t Thread) Node(i int) Node {
	if t.e != nil {
		if t.un == nil {
			panic("engine: Node of a packed thread that was not Unpacked")
		}
		return Node{(*C.jp_node)(unsafe.Pointer(&t.un.nodes[i*int(C.jp.node_stride)]))}
	}
	return Node{(*C.jp_node)(arenaAt(&t.t.nodes, uint32(i)))}
}

// Parent is the caller's node; the root is its own parent.
func (n Node) Parent() int { return int(n.p.parent) }

// Type is the JProf type letter of the method in this context.
func (n Node) Type() byte { return TypeLetters[n.p._type&7] }

// Method is the registry handle of the node's method (not the root's).
func (n Node) Method() uint32 { return uint32(n.p.method) }

// CountMax is where a node's exception, dispatch and interrupt counts
// stop (32 bits: a node fits a cache line); calls do not.
const CountMax = math.MaxUint32

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

// Seq0 is the node's own sequence count: how many events of its first
// calibration key were attributed to it (count 0: none yet). The
// thread's other counts are Seq's, the same key's included once this
// one is full. Like Seq, it is to be read before the node's values.
func (n Node) Seq0() (key int, count uint64) {
	c := atomic.LoadUint32((*uint32)(unsafe.Pointer(&n.p.seqn)))
	if c == 0 {
		return 0, 0
	}
	return int(n.p.seqkey), uint64(c)
}

// NSeqs is the number of sequence counts published.
func (t Thread) NSeqs() int {
	if t.e != nil {
		return int(t.e.nseqs)
	}
	return int(arenaLen(&t.t.seqs))
}

// Seq returns sequence count i < NSeqs(): how many events of a
// calibration key were attributed to a node. A packed thread must be
// Unpacked first.
func (t Thread) Seq(i int) (node, key int, count uint64) {
	var sc *C.jp_seqcount
	if t.e != nil {
		if t.un == nil {
			panic("engine: Seq of a packed thread that was not Unpacked")
		}
		sc = &t.un.seqs[i]
	} else {
		sc = (*C.jp_seqcount)(arenaAt(&t.t.seqs, uint32(i)))
	}
	return int(sc.node), int(sc.key), uint64(sc.count)
}

// MethodCompiled says whether a source that keeps the JIT on (BCI) saw
// the method compiled.
func MethodCompiled(h uint32) bool {
	if h >= ^uint32(0)-C.JP_NTYPES || h >= uint32(C.jp_methods_len()) {
		return false
	}
	return C.jp_method_at(C.uint32_t(h)).compiled != 0
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
// (their counts are reported and can never change) are freed; the others
// are packed into exact blocks, without what only a live thread needs.
// It returns how many it freed.
//
// A thread is packed once it ended packAge ago: one that ends as the VM
// dies (the main thread) is then written from its live record, not
// packed and unpacked again at once.
func Retire(done func(Thread) bool, packAge time.Duration) int {
	listMu.Lock()
	defer listMu.Unlock()
	now := uint64(C.jp_mono_ns())
	n := 0
	var prev *C.jp_thread
	for t := C.jp_threads(); t != nil; {
		next := t.next
		v := Thread{t: t}
		if v.Ended() {
			if done(v) {
				C.jp_thread_retire(t, prev)
				n++
				t = next
				continue
			}
			if now-uint64(t.end_ns) >= uint64(packAge) && C.jp_thread_pack(t, prev) != nil {
				t = next
				continue
			}
		}
		prev = t
		t = next
	}
	var eprev *C.jp_ended
	for e := C.jp.ended; e != nil; {
		next := e.next
		if done(Thread{e: e}) {
			C.jp_ended_free(e, eprev)
			n++
		} else {
			eprev = e
		}
		e = next
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

// PrepareFence readies Quiesce's fence ahead of the first stop: its
// one-time set-up waits out an RCU grace period (milliseconds), which
// a goroutine at VM start takes off the stop's path and the JVM's.
func PrepareFence() { C.jp_fence_register() }

// Quiesce, once collection is off, waits until no event is under way on
// any thread, so that a report written next holds every event of the
// collection and none after it: a JVMTI callback or a probe that began
// just before the stop still enters the event path, which marks the
// thread busy and only then looks at whether collection is on
// (jp_busy_enter). The fence (jp_fence) makes each such mark
// visible, or that look see collection off. The sampled sources (SAMPLE,
// ALLOC, LOCK) write from signal handlers and callbacks without the
// mark: their last samples may still land. Returns the threads still in
// an event after a second in all (left to run). The list lock is not
// held while it waits: an event may need it (a log-gen buffer handed
// over waits for the writer, which names threads through it).
func Quiesce() int {
	if Collecting() {
		return 0
	}
	fence()
	until := time.Now().Add(time.Second)
	for {
		busy := 0
		WithThreads(func(ts []Thread) {
			for _, t := range ts {
				if t.t != nil && atomic.LoadInt32((*int32)(unsafe.Pointer(&t.t.busy))) != 0 {
					busy++
				}
			}
		})
		if busy == 0 || time.Now().After(until) {
			return busy
		}
		time.Sleep(50 * time.Microsecond)
	}
}
