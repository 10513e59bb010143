package jvmti

/*
#include "jp.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// atomicLoad reads a value other threads lower with CAS.
func atomicLoad(p *uint64) uint64 { return atomic.LoadUint64(p) }

// TypeLetters are JProf's method-type letters, indexed by method type:
// interpreted, JIT-compiled, native (lower case static), Compiling, Other.
const TypeLetters = "iIjJnNCO"

// Node is a copy of one calling context of a thread's tree. Nodes of a
// thread are in creation order, so a node's parent always comes before it
// and children appear in first-call order.
type Node struct {
	Parent int    // index of the caller's node; -1 for the root
	Type   byte   // JProf type letter, see TypeLetters
	Method string // "class/Name.method(sig)ret"; "" for the root
	Calls  uint64
	Excs   uint64 // exits by exception
	DS, IN uint64
	Base   []uint64 // per metric
}

// Thread is a copy of one thread's tree and counters.
type Thread struct {
	ID             uintptr // identifies the thread record across snapshots
	TID            int
	Name           string
	Ended          bool
	Events         uint64
	UnmatchedExits uint64 // exits whose entry was never seen (Other type)
	MissedExits    uint64
	AllocFailures  uint64
	ExceptionExits uint64 // exits by exception, over all nodes
	StartNS, EndNS uint64 // CLOCK_MONOTONIC; EndNS is 0 while it runs
	Nodes          []Node
	// Seqs counts, per node and calibration key, the events whose delta
	// was attributed to that node (only when calibrating).
	Seqs []SeqCount
}

// RootName is the name of a thread's root in log-rt and log-gen: the
// thread id in hex, then the thread's name, as JProf wrote it
// ("0000b718_main").
func RootName(tid int, name string) string { return fmt.Sprintf("%08x_%s", tid, name) }

// RootName is t's root name (see the function RootName).
func (t Thread) RootName() string { return RootName(t.TID, t.Name) }

// SeqCount is how many events of one calibration key went to one node.
type SeqCount struct {
	Node  int
	Key   int
	Count uint64
}

// Snapshot copies every thread's tree. Threads keep running while it
// reads: each node read is one that was fully published, but counters of
// a running thread may be a few events apart from each other.
func Snapshot() []Thread { return snapshot(true) }

// ThreadCounters is Snapshot without the trees: thread ids, names, times
// and counters, for callers that need no nodes (a tree can hold millions).
func ThreadCounters() []Thread { return snapshot(false) }

func snapshot(trees bool) []Thread {
	names := map[*C.jp_method]string{}
	nmetrics := int(C.jp.nmetrics)
	var out []Thread
	for t := C.jp_threads(); t != nil; t = t.next {
		n := uint32(C.jp_arena_len(&t.nodes))
		if !trees {
			n = 0
		}
		th := Thread{
			ID:             uintptr(unsafe.Pointer(t)),
			StartNS:        uint64(t.start_ns),
			EndNS:          uint64(t.end_ns),
			TID:            int(t.tid),
			Name:           C.GoString(t.name),
			Ended:          t.ended != 0,
			Events:         uint64(t.events),
			UnmatchedExits: uint64(t.unmatched_exits),
			MissedExits:    uint64(t.missed_exits),
			AllocFailures:  uint64(t.alloc_failures),
			Nodes:          make([]Node, n),
		}
		base := make([]uint64, int(n)*nmetrics)
		for i := uint32(0); i < n; i++ {
			nd := C.jp_node_at(t, C.uint32_t(i))
			g := &th.Nodes[i]
			g.Parent = int(nd.parent)
			if i == 0 {
				g.Parent = -1
			}
			g.Type = TypeLetters[nd._type&7]
			if nd.m != nil {
				name, ok := names[nd.m]
				if !ok {
					name = C.GoString(nd.m.name)
					names[nd.m] = name
				}
				g.Method = name
			}
			g.Calls = uint64(nd.calls)
			g.Excs = uint64(nd.excs)
			th.ExceptionExits += g.Excs
			g.DS = uint64(nd.ds)
			g.IN = uint64(nd.in)
			if nmetrics > 0 {
				g.Base = base[int(i)*nmetrics : int(i+1)*nmetrics : int(i+1)*nmetrics]
				// base[] is a flexible array member, invisible to cgo: it starts
				// right after the fixed part.
				src := unsafe.Slice((*uint64)(unsafe.Add(unsafe.Pointer(nd), C.sizeof_jp_node)), nmetrics)
				copy(g.Base, src)
			}
		}
		ns := uint32(C.jp_arena_len(&t.seqs))
		if !trees {
			ns = 0
		}
		th.Seqs = make([]SeqCount, ns)
		for i := uint32(0); i < ns; i++ {
			sc := C.jp_seq_at(t, C.uint32_t(i))
			th.Seqs[i] = SeqCount{Node: int(sc.node), Key: int(sc.key), Count: uint64(sc.count)}
		}
		out = append(out, th)
	}
	// The list is newest first; reports want threads in start order.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// NKeys is the number of calibration keys (sequences of method types and
// transitions); package calibration uses the same encoding.
const NKeys = C.JP_NKEYS

// Minima copies the calibration minima: [metric][key], math.MaxUint64
// where a key was never seen. Nil when not calibrating.
func Minima() [][]uint64 {
	nm := int(C.jp.nmetrics)
	if C.jp.minima == nil || nm == 0 {
		return nil
	}
	all := unsafe.Slice((*uint64)(unsafe.Pointer(C.jp.minima)), NKeys*nm)
	out := make([][]uint64, nm)
	for k := range out {
		out[k] = make([]uint64, NKeys)
		for key := 0; key < NKeys; key++ {
			out[k][key] = atomicLoad(&all[key*nm+k])
		}
	}
	return out
}

// Calibrating says whether the hot path keeps minima and sequence counts.
func Calibrating() bool { return C.jp.calibrate != 0 }

// MethodOverflow is the number of method lookups that could not be cached.
func MethodOverflow() uint64 { return uint64(C.jp.method_overflow) }
