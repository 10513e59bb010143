package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

const unseen = calibration.Unseen

func TestNewCalibrator(t *testing.T) {
	// Keys 0..3 of one metric; the run saw keys 0 and 3 often, key 1
	// rarely, key 2 never.
	runMins := make([]uint64, jvmti.NKeys)
	for i := range runMins {
		runMins[i] = unseen
	}
	copy(runMins, []uint64{300, 250, unseen, 200})
	counts := make([]uint64, jvmti.NKeys)
	copy(counts, []uint64{5000, 10, 0, 5000})
	envOf := func(v ...uint64) []uint64 { out := make([]uint64, jvmti.NKeys); copy(out, v); return out }

	for _, c := range []struct {
		name  string
		table []uint64 // minima of keys 0..3; nil: no table
		env   []uint64
		want  [4]uint64
	}{
		{"no table: the run's own minima", nil, envOf(), [4]uint64{300, 250, 0, 200}},
		{"table used only for rare keys, where lower", []uint64{180, 100, 90, 150}, envOf(), [4]uint64{300, 100, 90, 200}},
		{"a rare key's own minimum wins when lower", []uint64{180, 400, unseen, 150}, envOf(), [4]uint64{300, 250, 0, 200}},
		{"environmental overhead stays with the program", nil, envOf(100, 50, 0, 300), [4]uint64{200, 200, 0, 0}},
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
			cal := newCalibrator([][]uint64{runMins}, counts, tables, [][]uint64{c.env})
			for key, w := range c.want {
				assert.Equal(t, w, cal.removed[0][key], "key %d", key)
			}
		})
	}
}

func TestCalibratorApply(t *testing.T) {
	cal := &calibrator{removed: [][]uint64{make([]uint64, jvmti.NKeys)}}
	cal.removed[0][7] = 100
	nodes := []reports.Node{{Base: []uint64{1000}, Delta: []uint64{0}}, {Base: []uint64{50}, Delta: []uint64{0}}}
	cal.apply([]jvmti.SeqCount{{Node: 0, Key: 7, Count: 3}, {Node: 1, Key: 7, Count: 1}}, nodes)
	assert.Equal(t, uint64(700), nodes[0].Base[0])
	assert.Equal(t, uint64(300), nodes[0].Delta[0])
	// Never below zero: what cannot be removed is not.
	assert.Equal(t, uint64(0), nodes[1].Base[0])
	assert.Equal(t, uint64(50), nodes[1].Delta[0])
}
