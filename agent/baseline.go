package main

import "github.com/libjprof/libjprof/jvmti"

// baseline is a snapshot taken at reset: later reports show what happened
// since. The hot path is never touched by a reset (no counter is zeroed
// under a running thread's feet); nodes and sequence counts are
// append-only, so a node's index is the same in both snapshots, and a
// frame still open at the reset keeps its place in the tree.
type baseline map[uintptr]*jvmti.Thread

func newBaseline(threads []jvmti.Thread) baseline {
	b := baseline{}
	for i := range threads {
		b[threads[i].ID] = &threads[i]
	}
	return b
}

// since subtracts the baseline from a fresh snapshot, in place.
func (b baseline) since(threads []jvmti.Thread) {
	for i := range threads {
		t := &threads[i]
		old, ok := b[t.ID]
		if !ok {
			continue
		}
		for j := range old.Nodes {
			if j >= len(t.Nodes) {
				break
			}
			n, o := &t.Nodes[j], &old.Nodes[j]
			n.Calls -= o.Calls
			n.Excs -= o.Excs
			n.DS -= o.DS
			n.IN -= o.IN
			for k := range n.Base {
				n.Base[k] -= o.Base[k]
			}
		}
		for j := range old.Seqs {
			if j < len(t.Seqs) {
				t.Seqs[j].Count -= old.Seqs[j].Count
			}
		}
		t.Events -= old.Events
		t.UnmatchedExits -= old.UnmatchedExits
		t.MissedExits -= old.MissedExits
		t.ExceptionExits -= old.ExceptionExits
	}
}
