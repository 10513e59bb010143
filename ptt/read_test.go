package ptt_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libjprof/libjprof/internal/ptttest"
)

// The PTT read (seed 000 §3) over one slot, with the clock scripted and
// the BPF side's updates injected between the snapshot and the re-read
// of seq: a change there must force a retry, and the retried reading
// must be the one computed from the changed slot.
func TestSlotReadRetry(t *testing.T) {
	onCPU := ptttest.SlotState{Seq: 4, Dispatches: 2, Interrupts: 1, RunNs: 1000, LastIn: 10000, IrqNs: 100}
	offCPU := onCPU
	offCPU.LastIn = 0
	inUpdate := onCPU
	inUpdate.Seq = 5
	irqRunning := onCPU
	irqRunning.IrqStart = 10400

	for _, tc := range []struct {
		name    string
		slot    ptttest.SlotState
		clock   []uint64
		changes []ptttest.Change
		want    ptttest.Reading
		retries int
	}{
		{"on cpu", onCPU, []uint64{10500}, nil,
			rd(1000+500-100, 2, 1), 0},
		{"off cpu", offCPU, []uint64{10500}, nil,
			rd(1000-100, 2, 1), 0},
		{"dispatched between count reads", onCPU, []uint64{10500, 12000},
			[]ptttest.Change{{Attempt: 0, Kind: ptttest.ChSwitch, A: 700, B: 11900}},
			rd(1700+100-100, 3, 1), 1},
		{"interrupted between count reads", onCPU, []uint64{10500, 10600},
			[]ptttest.Change{{Attempt: 0, Kind: ptttest.ChIRQ, A: 50}},
			rd(1000+600-150, 2, 2), 1},
		{"update in progress (odd seq)", inUpdate, []uint64{10500, 10700},
			[]ptttest.Change{{Attempt: 0, Kind: ptttest.ChEnd}},
			rd(1000+700-100, 2, 1), 1},
		{"dispatched, then interrupted", onCPU, []uint64{10500, 12000, 12100},
			[]ptttest.Change{{Attempt: 0, Kind: ptttest.ChSwitch, A: 700, B: 11900}, {Attempt: 1, Kind: ptttest.ChIRQ, A: 30}},
			rd(1700+200-130, 3, 2), 2},
		{"update begun and ended across attempts", onCPU, []uint64{10500, 10600, 10700},
			[]ptttest.Change{{Attempt: 0, Kind: ptttest.ChBegin}, {Attempt: 1, Kind: ptttest.ChEnd}},
			rd(1000+700-100, 2, 1), 2},
		{"interrupt in progress (reader on another thread)", irqRunning, []uint64{10500}, nil,
			rd(1000+500-100-100, 2, 1), 0},
		{"clock a few ns behind the switch-in", onCPU, []uint64{9990}, nil,
			rd(1000-100, 2, 1), 0},
		{"interrupt time above run time", ptttest.SlotState{IrqNs: 100}, []uint64{10}, nil,
			rd(0, 0, 0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, retries, after := ptttest.SlotReadScripted(tc.slot, tc.clock, tc.changes)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.retries, retries)
			assert.Zero(t, after.Seq&1, "the script leaves seq even")
		})
	}
}

func rd(time, dispatches, interrupts uint64) ptttest.Reading {
	return ptttest.Reading{Time: time, Dispatches: dispatches, Interrupts: interrupts}
}
