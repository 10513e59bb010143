package main

import "github.com/libjprof/libjprof/engine"

// baseline holds the numbers of every thread at the last reset, or as
// the last interval flush read them (rtdriver flush=interval): later
// reports show what happened since. The event path is never touched by a
// reset (no counter is zeroed under a running thread's feet); nodes and
// sequence counts are append-only, so a node's index is the same then and
// now, and a frame still open at the reset keeps its place in the tree.
// Only numbers are kept: 8·(4+metrics) bytes per node (8 more when
// calibrating: the node's own sequence count), 8 per sequence count.
type baseline map[uint32]*threadBase

type threadBase struct {
	counters engine.Counters
	nodes    []uint64 // per node: calls, excs, ds, in, base[metrics]
	seqs     []uint64 // per sequence count
	nodeSeqs []uint64 // per node: its own sequence count (engine.Node.Seq0), when calibrating
}

// nodeFields is the stride of threadBase.nodes.
func nodeFields(nm int) int { return 4 + nm }

func newBaseline(ts []engine.Thread, nm int) baseline {
	b := baseline{}
	stride := nodeFields(nm)
	var scratch engine.Scratch
	for _, t := range ts {
		tb := &threadBase{counters: t.Counters()}
		t, err := t.Unpacked(&scratch)
		if err != nil {
			continue // a broken record reads as all zero: shown as it is
		}
		// Sequence counts first, as the reports read them: never more
		// than the node values read after them account for.
		tb.seqs = make([]uint64, t.NSeqs())
		for i := range tb.seqs {
			_, _, tb.seqs[i] = t.Seq(i)
		}
		n := t.Len()
		if engine.Calibrating() {
			tb.nodeSeqs = make([]uint64, n)
			for i := range tb.nodeSeqs {
				_, tb.nodeSeqs[i] = t.Node(i).Seq0()
			}
		}
		tb.nodes = make([]uint64, n*stride)
		for i := 0; i < n; i++ {
			nd := t.Node(i)
			v := tb.nodes[i*stride : (i+1)*stride]
			v[0], v[1], v[2], v[3] = nd.Calls(), nd.Excs(), nd.DS(), nd.IN()
			for k := 0; k < nm; k++ {
				v[4+k] = nd.Base(k)
			}
		}
		b[t.ID()] = tb
	}
	return b
}

// counters is t's counters since the baseline.
func (b baseline) counters(t engine.Thread) engine.Counters {
	c := t.Counters()
	if old, ok := b[t.ID()]; ok {
		c.Events -= old.counters.Events
		c.UnmatchedExits -= old.counters.UnmatchedExits
		c.MissedExits -= old.counters.MissedExits
		c.AllocFailures -= old.counters.AllocFailures
	}
	return c
}

// node returns node i's numbers at the baseline, or nil (all zero).
func (tb *threadBase) node(i, nm int) []uint64 {
	s := nodeFields(nm)
	if tb == nil || (i+1)*s > len(tb.nodes) {
		return nil
	}
	return tb.nodes[i*s : (i+1)*s]
}

// seq0 returns node i's own sequence count at the baseline.
func (tb *threadBase) seq0(i int) uint64 {
	if tb == nil || i >= len(tb.nodeSeqs) {
		return 0
	}
	return tb.nodeSeqs[i]
}

// seq returns sequence count i at the baseline.
func (tb *threadBase) seq(i int) uint64 {
	if tb == nil || i >= len(tb.seqs) {
		return 0
	}
	return tb.seqs[i]
}
