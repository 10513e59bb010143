package main

import (
	"fmt"
	"io"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// buildProfile turns a snapshot of the C trees into the report model.
// Threads that never ran a profiled method are left out.
func (a *agent) buildProfile(threads []jvmti.Thread, seq int) *reports.Profile {
	p := &reports.Profile{PID: a.pid, Seq: seq, Notes: append([]string(nil), a.notes...)}
	for _, m := range a.metrics {
		p.Metrics = append(p.Metrics, reports.Metric{Name: m.String(), Unit: m.Unit()})
	}
	nm := len(a.metrics)
	cal := a.calibrator(threads)
	for i := range p.Metrics {
		p.Metrics[i].Calibrated = cal != nil
	}
	if cal != nil {
		p.Notes = append(p.Notes, "Calibration: final minima (every event calibrated with the minimum over the whole run, per type/transition sequence)")
	} else if nm > 0 {
		p.Notes = append(p.Notes, "Calibration: off (NOCALIBRATE): BASE is the raw metric between events")
	}
	names := nodeNames{}
	for _, t := range threads {
		keep := keptNodes(t)
		if !keep[0] {
			continue
		}
		// A tree can hold millions of nodes: one allocation each for the
		// nodes, their metric values and their child lists, and one name
		// string per method, not per node.
		store := make([]reports.Node, len(t.Nodes))
		vals := make([]uint64, 2*nm*len(t.Nodes))
		nkids := make([]int, len(t.Nodes))
		total := 0
		for i := 1; i < len(t.Nodes); i++ {
			if keep[i] {
				nkids[t.Nodes[i].Parent]++
				total++
			}
		}
		kids := make([]*reports.Node, total)
		for i, n := range t.Nodes {
			if !keep[i] {
				continue
			}
			rn := &store[i]
			rn.Calls, rn.DS, rn.IN = n.Calls, n.DS, n.IN
			if i == 0 {
				rn.Name = t.RootName()
			} else {
				rn.Name = names.get(n.Type, n.Method)
			}
			if nm > 0 {
				v := vals[2*nm*i : 2*nm*(i+1)]
				rn.Base, rn.Delta = v[:nm:nm], v[nm:]
				copy(rn.Base, n.Base)
			}
			rn.Children, kids = kids[:0:nkids[i]], kids[nkids[i]:]
			if i > 0 {
				parent := &store[n.Parent]
				parent.Children = append(parent.Children, rn)
			}
		}
		if cal != nil {
			cal.apply(t.Seqs, store)
		}
		if t.UnmatchedExits > 0 || t.MissedExits > 0 || t.AllocFailures > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("Thread %s: %d exits without a seen entry (shown as O:), %d missed exits, %d allocation failures",
				t.RootName(), t.UnmatchedExits, t.MissedExits, t.AllocFailures))
		}
		p.Threads = append(p.Threads, &store[0])
	}
	return p
}

// nodeName is a node's method, shown with its type letter.
type nodeName struct {
	typ    byte
	method string
}

// nodeNames makes each prefixed name once.
type nodeNames map[nodeName]string

func (m nodeNames) get(typ byte, method string) string {
	k := nodeName{typ, method}
	name, ok := m[k]
	if !ok {
		name = string(typ) + ":" + method
		m[k] = name
	}
	return name
}

// keptNodes says which nodes a report shows: those entered or charged
// with a metric since the last reset, and the frames above them (a frame
// open at the reset shows with no calls of its own). The root stays if
// anything below it does. Parents come before children, so one backward
// pass suffices.
func keptNodes(t jvmti.Thread) []bool {
	keep := make([]bool, len(t.Nodes))
	for i := len(t.Nodes) - 1; i > 0; i-- {
		n := t.Nodes[i]
		if n.Calls > 0 || anyNonZero(n.Base) {
			keep[i] = true
		}
		if keep[i] {
			keep[n.Parent] = true
		}
	}
	return keep
}

func anyNonZero(v []uint64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// writeLogRT writes the next log-rt.N_<pid> from a snapshot of the trees,
// less the counts at the last reset. The caller holds a.mu.
func (a *agent) writeLogRT() (string, error) {
	seq := a.seq + 1
	threads := jvmti.Snapshot()
	if a.base != nil {
		a.base.since(threads)
	}
	events := totalEvents(threads)
	p := a.buildProfile(threads, seq)
	path := a.fileName("rt", seq)
	if err := atomicfile.Write(path, func(w io.Writer) error { return reports.WriteLogRT(w, p) }); err != nil {
		return "", fmt.Errorf("writing log-rt: %w", err)
	}
	a.seq = seq
	a.written = events
	a.files = append(a.files, path)
	return path, nil
}

// eventsSinceReset counts the events of every thread since the last reset.
func (a *agent) eventsSinceReset() uint64 {
	threads := jvmti.ThreadCounters()
	if a.base != nil {
		a.base.since(threads)
	}
	return totalEvents(threads)
}

func totalEvents(threads []jvmti.Thread) (n uint64) {
	for _, t := range threads {
		n += t.Events
	}
	return n
}
