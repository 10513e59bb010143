package ptt

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/libjprof/libjprof/ptt/pttbpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests share the process-wide backend, so none runs in parallel.

func TestParseBackend(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Backend
		err  bool
	}{
		{"bpf", BPF, false},
		{"eBPF", BPF, false},
		{"perf", Perf, false},
		{"CLOCK", Clock, false},
		{"auto", None, false},
		{"", None, false},
		{"pmu", None, true},
	} {
		got, err := ParseBackend(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestParseMetric(t *testing.T) {
	for in, want := range map[string]Metric{"PTT_TIME": Time, "ptt_insts": Insts, "PTT_CYCLES": Cycles} {
		got, err := ParseMetric(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, strings.ToUpper(in), got.String())
	}
	_, err := ParseMetric("PTT_BOGUS")
	assert.Error(t, err)
}

// setupOrSkip configures backend b for PTT_TIME. Only a missing
// capability skips (visibly); any other failure fails the test.
func setupOrSkip(t *testing.T, cfg Config) Status {
	t.Helper()
	if len(cfg.Metrics) == 0 {
		cfg.Metrics = []Metric{Time}
	}
	st, err := Setup(cfg)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("backend %s not loadable here (needs CAP_BPF+CAP_PERFMON): %v", cfg.Force, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, Close()) })
	for _, n := range st.Notes {
		t.Log(n)
	}
	return st
}

// onThread runs f on a locked OS thread, as the agent's callbacks run
// on a Java thread.
func onThread[T any](f func() T) T {
	ch := make(chan T)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ch <- f()
	}()
	return <-ch
}

func TestSetupForced(t *testing.T) {
	for _, tc := range []struct {
		b                      Backend
		dispatches, interrupts bool
	}{
		{Clock, false, false},
		{Perf, true, false},
		{BPF, true, true},
	} {
		t.Run(tc.b.String(), func(t *testing.T) {
			st := setupOrSkip(t, Config{Force: tc.b})
			assert.Equal(t, tc.b, st.Backend)
			assert.Equal(t, tc.dispatches, st.HasDispatches)
			assert.Equal(t, tc.interrupts, st.HasInterrupts)
			require.NotEmpty(t, st.Notes)
			assert.Contains(t, st.Notes[0], "PTT backend "+tc.b.String()+":")

			// Monotone, sane readings: 200k reads with a sleep every
			// 1000, against the thread's CPU time over the same span.
			r := onThread(func() threadResult { return monotoneThread(200000) })
			require.Zero(t, r.Err)
			require.Zero(t, r.Fallback, "thread fell back to the clock")
			assert.Zero(t, r.Backwards, "readings went backwards")
			assert.Greater(t, r.PTT, uint64(0))
			// Same span within 20% + 1 ms (the clock read itself, the
			// registration offset and interrupts removed by bpf).
			assert.InDelta(t, float64(r.CPU), float64(r.PTT), 0.2*float64(r.CPU)+1e6,
				"ptt %d ns vs thread cputime %d ns", r.PTT, r.CPU)
			if tc.dispatches {
				// A 20 µs sleep can end before the switch (the wakeup races
				// schedule()): most, not all, sleeps are a dispatch.
				assert.GreaterOrEqual(t, r.Dispatches, uint64(180), "one per sleep")
			} else {
				assert.Zero(t, r.Dispatches)
			}
			t.Logf("%s: %d reads, ptt %d ns, cputime %d ns, %d dispatches", tc.b, r.Reads, r.PTT, r.CPU, r.Dispatches)
		})
	}
}

func TestSetupAutoPicksBest(t *testing.T) {
	st := setupOrSkip(t, Config{})
	assert.Equal(t, BPF, st.Backend)
}

func TestSetupNoMetrics(t *testing.T) {
	st, err := Setup(Config{})
	require.NoError(t, err)
	assert.Equal(t, None, st.Backend)
	require.NoError(t, Close())
}

func hasPMU() bool {
	_, err := os.Stat("/sys/bus/event_source/devices/cpu")
	return err == nil
}

func TestSetupHardwareMetrics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		errIs error  // on a machine without a PMU
		msg   string // error text, always
	}{
		{"insts auto", Config{Metrics: []Metric{Insts}}, ErrNoPMU, "ENOENT"},
		{"cycles perf", Config{Metrics: []Metric{Time, Cycles}, Force: Perf}, ErrNoPMU, "ENOENT"},
		{"insts bpf", Config{Metrics: []Metric{Insts}, Force: BPF}, nil, "counts only PTT_TIME"},
		{"insts clock", Config{Metrics: []Metric{Insts}, Force: Clock}, nil, "counts only PTT_TIME"},
		{"too many", Config{Metrics: make([]Metric, MaxMetrics+1)}, nil, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Setup(tc.cfg)
			defer Close()
			if tc.errIs == ErrNoPMU && hasPMU() {
				require.NoError(t, err)
				assert.Equal(t, Perf, st.Backend)
				return
			}
			require.Error(t, err)
			t.Log(err)
			if tc.errIs != nil {
				assert.ErrorIs(t, err, tc.errIs)
			}
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// A busy thread's PTT time is its CPU time minus the interrupt time the
// work area measured (CONFIG_IRQ_TIME_ACCOUNTING is off on this kernel,
// so CLOCK_THREAD_CPUTIME_ID includes interrupts). Time the hypervisor
// steals from the vCPU is the one difference the other way: the
// scheduler leaves it out of CLOCK_THREAD_CPUTIME_ID
// (PARAVIRT_TIME_ACCOUNTING), the PTT cannot see it and counts it.
func TestBPFBusyThread(t *testing.T) {
	setupOrSkip(t, Config{Force: BPF})
	before := ReadCounters().BPF
	s0 := stealTicks(t)
	r := onThread(func() threadResult { return busyThread(300) })
	steal := stealBound(s0, stealTicks(t))
	t.Logf("bpf counters over the run: %+v", diffStats(ReadCounters().BPF, before))
	require.Zero(t, r.Err)
	require.Zero(t, r.Fallback)
	t.Logf("ptt %d ns, cputime %d ns, irq %d ns in %d interrupts, %d dispatches (schedstat %d), host steal <= %d ns",
		r.PTT, r.CPU, r.IrqNs, r.Interrupts, r.Dispatches, r.Pcount, steal)
	assertTracks(t, r, steal)
	assert.Greater(t, r.Interrupts, uint64(0), "300 ms busy without a timer tick")
	assert.Greater(t, r.IrqNs, uint64(0))
	assert.Less(t, r.IrqNs, r.CPU/10, "interrupt time is a small share")
	assert.InDelta(t, float64(r.Pcount), float64(r.Dispatches), 1, "dispatches vs schedstat")
}

// assertTracks checks PTT = cputime - interrupts within 1% + 0.5 ms
// (the reads are a syscall apart; the scheduler clock and
// CLOCK_MONOTONIC drift by ppm on a VM), plus up to the host steal
// observed over the run on the PTT side.
func assertTracks(t *testing.T, r threadResult, steal uint64) {
	t.Helper()
	want := float64(r.CPU) - float64(r.IrqNs)
	tol := 0.01*want + 5e5
	diff := float64(r.PTT) - want
	assert.True(t, diff >= -tol && diff <= tol+float64(steal),
		"ptt %d ns vs cputime-irq %.0f ns: %+.0f ns outside [-%.0f, +%.0f] (steal %d ns)", r.PTT, want, diff, tol, tol+float64(steal), steal)
}

// stealTicks is the host steal time of all CPUs so far, in USER_HZ
// (100 Hz) ticks from /proc/stat.
func stealTicks(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/stat")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 8 && f[0] == "cpu" {
			v, err := strconv.ParseUint(f[8], 10, 64)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

// stealBound bounds, in ns, the steal between two stealTicks readings:
// the ticks seen plus one for the part below the 10 ms resolution, on
// a host that steals at all.
func stealBound(before, after uint64) uint64 {
	if after == 0 {
		return 0
	}
	return (after - before + 1) * 10_000_000
}

// Each 1 ms sleep is a switch-out; the next dispatch is counted.
func TestDispatchesCounted(t *testing.T) {
	for _, b := range []Backend{BPF, Perf} {
		t.Run(b.String(), func(t *testing.T) {
			setupOrSkip(t, Config{Force: b})
			r := onThread(func() threadResult { return sleepThread(50, 1000) })
			require.Zero(t, r.Err)
			require.Zero(t, r.Fallback)
			assert.GreaterOrEqual(t, r.Dispatches, uint64(50))
			// Sleeping is not on CPU: the time is what the loop ran.
			assert.Less(t, r.PTT, uint64(25e6), "50 ms of sleep counted as thread time")
			t.Logf("%s: %d dispatches, %d interrupts, ptt %d ns, cputime %d ns", b, r.Dispatches, r.Interrupts, r.PTT, r.CPU)
		})
	}
}

func TestBPFSlotRecycle(t *testing.T) {
	const slots = 16
	setupOrSkip(t, Config{Force: BPF, Slots: slots})

	// One thread, 3x the slot count registrations: each fini frees.
	res := onThread(func() [2]int { f, m := cycleThread(3 * slots); return [2]int{f, m} })
	assert.Zero(t, res[0], "registrations failed")
	assert.LessOrEqual(t, res[1], slots)
	assert.Zero(t, ReadCounters().SlotsInUse)

	// slots+1 threads at once, 3 rounds: all slots handed out, one
	// thread falls back each round, all come back after fini.
	before := ReadCounters()
	for round := 0; round < 3; round++ {
		distinct, fallbacks, inUse := poolRound(slots + 1)
		assert.Equal(t, slots, distinct, "round %d", round)
		assert.Equal(t, 1, fallbacks, "round %d", round)
		assert.EqualValues(t, slots, inUse, "round %d", round)
		assert.Zero(t, ReadCounters().SlotsInUse, "round %d", round)
	}
	after := ReadCounters()
	assert.EqualValues(t, 3, after.NoSlot-before.NoSlot)
	assert.EqualValues(t, 3, after.Fallbacks-before.Fallbacks)
	assert.EqualValues(t, slots, after.Slots)
}

// A thread that died without fini leaves its tid->slot entry; a new
// thread with the same tid takes it over and the old slot is freed.
func TestBPFStaleTid(t *testing.T) {
	setupOrSkip(t, Config{Force: BPF, Slots: 4})
	r := onThread(func() [3]uint64 { e, m, n := reregister(); return [3]uint64{uint64(e), m, n} })
	assert.Zero(t, r[0])
	assert.EqualValues(t, 1, r[1], "the dead thread's slot was freed")
	assert.EqualValues(t, 0, r[2])
}

func diffStats(a, b pttbpf.Stats) pttbpf.Stats {
	return pttbpf.Stats{
		HealedSwitchIns:    a.HealedSwitchIns - b.HealedSwitchIns,
		LostSwitchOuts:     a.LostSwitchOuts - b.LostSwitchOuts,
		UnbalancedIRQExits: a.UnbalancedIRQExits - b.UnbalancedIRQExits,
		StrayIRQs:          a.StrayIRQs - b.StrayIRQs,
	}
}
