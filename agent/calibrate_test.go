package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/engine"
)

const unseen = calibration.Unseen

func TestNewCalibrator(t *testing.T) {
	// Keys 0..3 of one metric; the run saw keys 0 and 3 often, key 1
	// rarely, key 2 never.
	runMins := make([]uint64, engine.NKeys)
	for i := range runMins {
		runMins[i] = unseen
	}
	copy(runMins, []uint64{300, 250, unseen, 200})
	counts := make([]uint64, engine.NKeys)
	copy(counts, []uint64{5000, 10, 0, 5000})
	keptOf := func(v ...int64) []int64 { out := make([]int64, engine.NKeys); copy(out, v); return out }

	for _, c := range []struct {
		name  string
		table []uint64 // minima of keys 0..3; nil: no table
		kept  []int64
		want  [4]uint64
	}{
		{"no table: the run's own minima", nil, keptOf(), [4]uint64{300, 250, 0, 200}},
		{"table used only for rare keys, where lower", []uint64{180, 100, 90, 150}, keptOf(), [4]uint64{300, 100, 90, 200}},
		{"a rare key's own minimum wins when lower", []uint64{180, 400, unseen, 150}, keptOf(), [4]uint64{300, 250, 0, 200}},
		{"environmental overhead stays with the program", nil, keptOf(100, 50, 0, 300), [4]uint64{200, 200, 0, 0}},
		{"an excess above the glue is removed too", nil, keptOf(-20, 0, -5, 0), [4]uint64{320, 250, 0, 200}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tables []*calibration.Table
			if c.table != nil {
				tab := calibration.NewTable(calibration.Provenance{Metric: "PTT_TIME"})
				for key, m := range c.table {
					if m != unseen {
						tab.Entries[calibration.Key(key)] = calibration.Entry{Min: m}
					}
				}
				tables = []*calibration.Table{tab}
			}
			cal := newCalibrator([][]uint64{runMins}, counts, tables, [][]int64{c.kept})
			for key, w := range c.want {
				assert.Equal(t, w, cal.removed[0][key], "key %d", key)
			}
		})
	}
}
