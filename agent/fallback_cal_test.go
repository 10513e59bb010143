package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// leafPerCall is the calibrated and raw time per call of FallbackCal's
// leaf on one thread.
func leafPerCall(t *testing.T, p *reports.Profile, thread string) (cal, raw float64) {
	t.Helper()
	n := findNode(t, p, thread, "i:FallbackCal.leaf(")
	require.NotZero(t, n.Calls)
	return float64(n.Base[0]) / float64(n.Calls), float64(n.Base[0]+n.Delta[0]) / float64(n.Calls)
}

// A thread whose PTT reads fall back to the clock (here: the pttd has one
// bpf slot, taken by main) pays a syscall per read, hundreds of ns per
// event more than a bpf read. Calibrated with the bpf threads' minima, its
// leaf would keep that difference; with minima of its own calibration
// removes the clock's cost too.
func TestFallbackThreadsOwnMinima(t *testing.T) {
	sock, _ := startPttd(t, "-slots", "1")
	r := jvmtest.Start(t, jvmtest.Run{Class: "FallbackCal",
		Options: "METRICS=PTT_TIME,START,NORTDRIVER,CALTABLE=none,PTTD=" + sock})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	notes := strings.Join(p.Notes, "\n")
	require.Contains(t, notes, "PTT backend bpf:")
	require.Regexp(t, `PTT: \d+ threads read the clock instead of the bpf backend \(.*fallback-0.*\): calibrated with their own minima`, notes)
	require.NotContains(t, notes, "_main, ", "main holds the one slot")

	mainCal, mainRaw := leafPerCall(t, p, "main")
	for _, w := range []string{"fallback-0", "fallback-1"} {
		cal, raw := leafPerCall(t, p, w)
		t.Logf("leaf per call: main %.0f ns calibrated (%.0f raw, bpf); %s %.0f ns calibrated (%.0f raw, clock)", mainCal, mainRaw, w, cal, raw)
		// What calibration removed per call: the keys' minima less the
		// environment. With main's (bpf) minima it would be what main's
		// leaf had removed, the same keys; with minima of their own it
		// holds the clock's syscalls, several times more. (A ratio of
		// the removed amounts, not a bound on the calibrated time: the
		// clock's cost per read varies with the machine's load.)
		require.Greater(t, raw, mainRaw, "%s: reads the clock", w)
		assert.Greater(t, raw-cal, 2*(mainRaw-mainCal), "%s: calibrated with the bpf threads' minima", w)
	}
}
