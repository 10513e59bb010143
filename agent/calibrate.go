package main

import (
	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// calibrator removes the profiler's overhead from a snapshot's metrics
// with the final minima: an event of key s had delta d ≥ min[s] (the
// minimum is over every event, this one included), so its calibrated
// value d − (min[s] − env[s]) is never negative, and a node's calibrated
// base is its raw sum minus Σ_s count(node, s)·(min[s] − env[s]).
type calibrator struct {
	// removed[k][key] = min − env for metric k, 0 where never seen.
	removed [][]uint64
}

// calibrator returns nil when not calibrating.
func (a *agent) calibrator(threads []jvmti.Thread) *calibrator {
	mins := jvmti.Minima()
	if mins == nil || !jvmti.Calibrating() {
		return nil
	}
	counts := make([]uint64, jvmti.NKeys)
	for _, t := range threads {
		for _, s := range t.Seqs {
			counts[s.Key] += s.Count
		}
	}
	return newCalibrator(mins, counts, a.tables, a.env)
}

// newCalibrator works out what to remove per metric and key from the
// run's minima and event counts, the calibration tables (nil entries for
// metrics without one; see calibration.FinalMinimum) and the
// environmental overheads.
func newCalibrator(mins [][]uint64, counts []uint64, tables []*calibration.Table, env [][]uint64) *calibrator {
	c := &calibrator{removed: make([][]uint64, len(mins))}
	for k, mk := range mins {
		c.removed[k] = make([]uint64, len(mk))
		var tab *calibration.Table
		if k < len(tables) {
			tab = tables[k]
		}
		for key, m := range mk {
			m = calibration.FinalMinimum(m, counts[key], tab, calibration.Key(key))
			if m == calibration.Unseen {
				continue
			}
			c.removed[k][key] = m - min(env[k][key], m)
		}
	}
	return c
}

// apply moves the overhead of every counted event from BASE to DELTA.
func (c *calibrator) apply(seqs []jvmti.SeqCount, nodes []reports.Node) {
	for _, s := range seqs {
		n := &nodes[s.Node]
		for k := range c.removed {
			r := s.Count * c.removed[k][s.Key]
			n.Base[k] -= r
			n.Delta[k] += r
		}
	}
	// A concurrent snapshot of a running thread can see a count before
	// the delta it belongs to: never let that show as a wrapped value.
	for i := range nodes {
		n := &nodes[i]
		for k := range n.Base {
			if int64(n.Base[k]) < 0 {
				n.Delta[k] += n.Base[k]
				n.Base[k] = 0
			}
		}
	}
}
