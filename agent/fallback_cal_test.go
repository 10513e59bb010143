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

// Threads the bpf work area has no slot for (here: PTTSLOTS=1, taken by
// main) read their own perf event, a read of tens of ns like a bpf one,
// and are calibrated with minima of their own: the header names them and
// how they were read, and their roots carry reports.FallbackMark. Where perf is
// refused too (the test-only shim fails perf_event_open), they read the
// clock, a syscall per read: the header says so, their roots carry the
// clock's mark in every report, and calibration with their own
// minima removes the clock's cost, several times what main's leaf had
// removed.
func TestFallbackThreads(t *testing.T) {
	run := func(t *testing.T, env []string) (*reports.Profile, string) {
		r := jvmtest.Start(t, jvmtest.Run{Class: "FallbackCal", Env: env,
			Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTTSLOTS=1"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		p := jvmtest.ParseLogRT(t, r.File("rt.1"))
		notes := strings.Join(p.Notes, "\n")
		require.Contains(t, notes, "PTT backend bpf:")
		require.Contains(t, notes, "PTT bpf: 1 thread slots")
		return p, notes
	}
	t.Run("perf", func(t *testing.T) {
		p, notes := run(t, nil)
		require.Regexp(t, `PTT: \d+ threads read perf instead of the bpf backend \(.*calibrated with minima of their own\): .*_fallback-0 \[PTT perf\]`, notes)
		require.NotContains(t, notes, "_main, ", "main holds the one slot")
		assert.NotContains(t, notes, "read clock")
		for _, w := range []string{"fallback-0", "fallback-1"} {
			require.Nil(t, p.Thread(w), "the root is marked")
			cal, raw := leafPerCall(t, p, w+reports.FallbackMark("perf"))
			assert.Greater(t, raw, cal, "%s: calibrated", w)
		}
	})
	t.Run("clock", func(t *testing.T) {
		p, notes := run(t, []string{"LD_PRELOAD=" + jvmtest.FaultShim(t), "JP_FAIL_PERF_OPEN=1"})
		require.Regexp(t, `PTT: \d+ threads read clock instead of the bpf backend \(a syscall per read.*\): .*_fallback-0 \[PTT clock\]`, notes)
		assert.NotContains(t, notes, "read perf")
		mainCal, mainRaw := leafPerCall(t, p, "main")
		for _, w := range []string{"fallback-0", "fallback-1"} {
			require.Nil(t, p.Thread(w), "the root is marked")
			cal, raw := leafPerCall(t, p, w+reports.FallbackMark("clock"))
			t.Logf("leaf per call: main %.0f ns calibrated (%.0f raw, bpf); %s %.0f ns calibrated (%.0f raw, clock)", mainCal, mainRaw, w, cal, raw)
			// What calibration removed per call: the keys' minima less
			// the environment. With main's (bpf) minima it would be
			// what main's leaf had removed, the same keys; with minima
			// of their own it holds the clock's syscalls, several times
			// more. (A ratio of the removed amounts, not a bound on the
			// calibrated time: the clock's cost per read varies with
			// the machine's load.)
			require.Greater(t, raw, mainRaw, "%s: reads the clock", w)
			assert.Greater(t, raw-cal, 2*(mainRaw-mainCal), "%s: calibrated with the bpf threads' minima", w)
		}
	})
}
