package main

import (
	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/ptt"
)

// calibrator removes the profiler's overhead from the trees' metrics
// with the final minima: a node's calibrated base is its raw sum minus
// Σ_s count(node, s)·(min[s] − kept[s]), where kept is the glue that runs
// without profiling too less the key's typical excess over its minimum
// (calibration.Entry.Kept), never below zero (report.go).
type calibrator struct {
	// removed[k][key] = min − kept for metric k, 0 where never seen.
	removed [][]uint64
}

// keyCounts sums, per calibration key, the events since the baseline (b
// may be nil) of the threads calibrated with one set of minima: those
// whose PTT reads fell back to the clock (fallback), or the others.
func keyCounts(ts []engine.Thread, b baseline, fallback bool) []uint64 {
	counts := make([]uint64, engine.NKeys)
	var scratch engine.Scratch
	for _, t := range ts {
		if t.Fallback() != fallback {
			continue
		}
		tb := b[t.ID()]
		t, err := t.Unpacked(&scratch)
		if err != nil {
			continue
		}
		for i, n := 0, t.NSeqs(); i < n; i++ {
			_, key, c := t.Seq(i)
			counts[key] += c - tb.seq(i)
		}
		for i, n := 0, t.Len(); i < n; i++ {
			if key, c := t.Node(i).Seq0(); c > 0 {
				counts[key] += c - tb.seq0(i)
			}
		}
	}
	return counts
}

// calibrator returns nil when not calibrating.
func (a *agent) calibrator(ts []engine.Thread) *calibrator {
	mins := engine.Minima()
	if mins == nil || !engine.Calibrating() {
		return nil
	}
	return newCalibrator(mins, keyCounts(ts, a.base, false), a.tables, a.kept)
}

// fallbackCalibrator is the calibrator of the threads whose PTT reads
// did not use the process's backend (engine.Thread.Fallback): their own
// minima; and where every fallback thread of the run read its own perf
// event (a bpf run past its slots: the process-wide counts say so, freed
// threads included, whose events lowered the same minima), the built-in
// perf table's minima for rare keys and its typical excess, which their
// reads share. Not with CALTABLE=, whose tables are the process
// backend's: the fallback threads then have their own minima only. Nil
// when there are none.
func (a *agent) fallbackCalibrator(ts []engine.Thread) *calibrator {
	mins := engine.MinimaFallback()
	if mins == nil || !engine.Calibrating() {
		return nil
	}
	c := ptt.ReadCounters()
	var tables []*calibration.Table
	kept := a.kept
	if c.Fallbacks > 0 && c.PerfFallbacks == c.Fallbacks && a.opts.CalTable == "" {
		tables = make([]*calibration.Table, len(a.metrics))
		kept = make([][]int64, len(a.metrics))
		for k, m := range a.metrics {
			kept[k] = a.kept[k]
			if tab, ok := calibration.DefaultFor(a.calPath(), a.jvm.name, a.jvm.version, m.String(), "perf"); ok {
				tables[k], kept[k] = tab, tab.Kept()
			}
		}
	}
	return newCalibrator(mins, keyCounts(ts, a.base, true), tables, kept)
}

// newCalibrator works out what to remove per metric and key from the
// run's minima and event counts, the calibration tables (nil entries for
// metrics without one; see calibration.FinalMinimum) and the
// part of each minimum calibration keeps.
func newCalibrator(mins [][]uint64, counts []uint64, tables []*calibration.Table, kept [][]int64) *calibrator {
	c := &calibrator{removed: make([][]uint64, len(mins))}
	for k, mk := range mins {
		c.removed[k] = make([]uint64, len(mk))
		var tab *calibration.Table
		if k < len(tables) {
			tab = tables[k]
		}
		for key, m := range mk {
			m = calibration.FinalMinimum(m, counts[key], tab, calibration.Key(key))
			c.removed[k][key] = calibration.Overhead(m, kept[k][key])
		}
	}
	return c
}
