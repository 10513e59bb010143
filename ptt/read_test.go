package ptt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The PTT read (seed 000 §3) over one slot, with the clock scripted and
// the BPF side's updates injected between the snapshot and the re-read
// of seq: a change there must force a retry, and the retried reading
// must be the one computed from the changed slot.
func TestSlotReadRetry(t *testing.T) {
	onCPU := slotState{Seq: 4, Dispatches: 2, Interrupts: 1, RunNs: 1000, LastIn: 10000, IrqNs: 100}
	offCPU := onCPU
	offCPU.LastIn = 0
	inUpdate := onCPU
	inUpdate.Seq = 5
	irqRunning := onCPU
	irqRunning.IrqStart = 10400

	for _, tc := range []struct {
		name    string
		slot    slotState
		clock   []uint64
		changes []change
		want    reading
		retries int
	}{
		{"on cpu", onCPU, []uint64{10500}, nil,
			reading{1000 + 500 - 100, 2, 1}, 0},
		{"off cpu", offCPU, []uint64{10500}, nil,
			reading{1000 - 100, 2, 1}, 0},
		{"dispatched between count reads", onCPU, []uint64{10500, 12000},
			[]change{{Attempt: 0, Kind: chSwitch, A: 700, B: 11900}},
			reading{1700 + 100 - 100, 3, 1}, 1},
		{"interrupted between count reads", onCPU, []uint64{10500, 10600},
			[]change{{Attempt: 0, Kind: chIRQ, A: 50}},
			reading{1000 + 600 - 150, 2, 2}, 1},
		{"update in progress (odd seq)", inUpdate, []uint64{10500, 10700},
			[]change{{Attempt: 0, Kind: chEnd}},
			reading{1000 + 700 - 100, 2, 1}, 1},
		{"dispatched, then interrupted", onCPU, []uint64{10500, 12000, 12100},
			[]change{{Attempt: 0, Kind: chSwitch, A: 700, B: 11900}, {Attempt: 1, Kind: chIRQ, A: 30}},
			reading{1700 + 200 - 130, 3, 2}, 2},
		{"update begun and ended across attempts", onCPU, []uint64{10500, 10600, 10700},
			[]change{{Attempt: 0, Kind: chBegin}, {Attempt: 1, Kind: chEnd}},
			reading{1000 + 700 - 100, 2, 1}, 2},
		{"interrupt in progress (reader on another thread)", irqRunning, []uint64{10500}, nil,
			reading{1000 + 500 - 100 - 100, 2, 1}, 0},
		{"clock a few ns behind the switch-in", onCPU, []uint64{9990}, nil,
			reading{1000 - 100, 2, 1}, 0},
		{"interrupt time above run time", slotState{IrqNs: 100}, []uint64{10}, nil,
			reading{0, 0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, retries, after := slotReadScripted(tc.slot, tc.clock, tc.changes)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.retries, retries)
			assert.Zero(t, after.Seq&1, "the script leaves seq even")
		})
	}
}
