package ptt_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/ptttest"
	"github.com/libjprof/libjprof/ptt"
)

// checkCounts runs a busy and a sleeping thread on the configured bpf
// backend: the busy one's PTT time tracks its CPU time, the sleeping
// one is dispatched once per sleep and not charged the sleep.
func checkCounts(t *testing.T) {
	t.Helper()
	s0 := stealTicks(t)
	r := onThread(func() ptttest.ThreadResult { return ptttest.BusyThread(100) })
	steal := stealBound(s0, stealTicks(t))
	require.Zero(t, r.Err)
	require.Zero(t, r.Fallback)
	assert.Equal(t, ptt.BPF, r.Backend)
	assertTracks(t, r, steal)

	s := onThread(func() ptttest.ThreadResult { return ptttest.SleepThread(20, 1000) })
	require.Zero(t, s.Err)
	require.Zero(t, s.Fallback)
	assert.GreaterOrEqual(t, s.Dispatches, uint64(20), "one per sleep")
	assert.Less(t, s.PTT, uint64(10e6), "20 ms of sleep counted as thread time")
	assert.Zero(t, ptt.ReadCounters().Unresolved)
	t.Logf("busy: ptt %d ns, cputime %d ns; 20 sleeps of 1 ms: %d dispatches, ptt %d ns", r.PTT, r.CPU, s.Dispatches, s.PTT)
}

// The registration path of a process in a PID namespace (pending key,
// resolved by the BPF side), taken here in the initial namespace.
func TestBPFNamespacePath(t *testing.T) {
	ptttest.ForceNamespacePath(true)
	defer ptttest.ForceNamespacePath(false)
	st := setupOrSkip(t, ptt.Config{Force: ptt.BPF, Slots: 8})
	assert.Contains(t, strings.Join(st.Notes, "\n"), "runs in a PID namespace")
	checkCounts(t)
	// Slots come back: 3x the slot count registrations on one thread.
	res := onThread(func() [2]int { f, m := ptttest.CycleThread(24); return [2]int{f, m} })
	assert.Zero(t, res[0], "registrations failed")
	assert.Zero(t, ptt.ReadCounters().SlotsInUse)
}

// This test binary, run again inside a new PID namespace (as in any
// container): gettid() there is not the tid the eBPF programs see.
func TestBPFInPIDNamespace(t *testing.T) {
	if os.Getenv("PTT_TEST_IN_PIDNS") != "" {
		b, err := os.Readlink("/proc/self/ns/pid")
		require.NoError(t, err)
		require.NotEqual(t, "pid:[4026531836]", b, "not in a new PID namespace")
		st := setupOrSkip(t, ptt.Config{Force: ptt.BPF})
		assert.Contains(t, strings.Join(st.Notes, "\n"), "runs in a PID namespace")
		checkCounts(t)
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare to make a PID namespace")
	}
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount-proc", os.Args[0],
		"-test.run=^TestBPFInPIDNamespace$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "PTT_TEST_IN_PIDNS=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a new PID namespace:\n%s", out)
	require.NoError(t, err)
	require.Contains(t, string(out), "--- PASS: TestBPFInPIDNamespace")
}
