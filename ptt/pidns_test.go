package ptt_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/ptttest"
	"github.com/libjprof/libjprof/ptt"
	"github.com/libjprof/libjprof/ptt/pttbpf"
)

// checkCounts runs a busy and a sleeping thread on the configured bpf
// backend: the busy one's PTT time tracks its CPU time, the sleeping
// one is dispatched once per sleep and not charged the sleep.
func checkCounts(t *testing.T) {
	t.Helper()
	r, steal := busyTracking(t, 100)
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
	ino, err := ptttest.OwnPIDNamespace()
	require.NoError(t, err)
	ptttest.ForcePIDNamespace(ino)
	defer ptttest.ForcePIDNamespace(0)
	st := setupOrSkip(t, ptt.Config{Force: ptt.BPF, Slots: 8})
	assert.Contains(t, strings.Join(st.Notes, "\n"), "runs in a PID namespace")
	checkCounts(t)
	// Slots come back: 3x the slot count registrations on one thread.
	res := onThread(func() [2]int { f, m := ptttest.CycleThread(24); return [2]int{f, m} })
	assert.Zero(t, res[0], "registrations failed")
	assert.Zero(t, ptt.ReadCounters().SlotsInUse)
}

// Without the task_rename trigger (a kernel without that tracepoint) a
// registration is resolved at the thread's next switch-in instead.
func TestBPFNamespacePathWithoutRenameTrigger(t *testing.T) {
	objs, err := pttbpf.Load(pttbpf.Options{Slots: 8, NoRenameTrigger: true})
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot load eBPF here (needs CAP_BPF+CAP_PERFMON): %v", err)
	}
	require.NoError(t, err)
	defer objs.Close()
	require.False(t, objs.RenameTrigger)
	ino, err := ptttest.OwnPIDNamespace()
	require.NoError(t, err)
	ptttest.ForcePIDNamespace(ino)
	defer ptttest.ForcePIDNamespace(0)
	_, err = ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, objs.Slots.FD(), objs.Tids.FD(), 2)
	require.NoError(t, err)
	defer func() { assert.NoError(t, ptt.Close()) }()
	checkCounts(t)
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

// When the BPF side never sees the registering thread (here: a PID
// namespace that is not ours, so no task ever has the pending key), the
// set-up self-test fails and Setup falls back to perf, saying why.
func TestBPFSelfTestFallsBack(t *testing.T) {
	ptttest.ForcePIDNamespace(12345)
	defer ptttest.ForcePIDNamespace(0)
	st := setupOrSkip(t, ptt.Config{})
	notes := strings.Join(st.Notes, "\n")
	t.Log(notes)
	if !strings.Contains(notes, "self-test") && strings.Contains(notes, "operation not permitted") {
		t.Skip("bpf not loadable here")
	}
	assert.Equal(t, ptt.Perf, st.Backend)
	assert.Contains(t, notes, "PTT backend bpf unavailable: ptt: eBPF self-test failed: registering a thread failed")
	assert.Contains(t, notes, "no context switch of the thread was seen")
	require.Len(t, st.Warnings, 1, "a failed self-test is worth a warning")
	assert.Contains(t, st.Warnings[0], "self-test failed")
	assert.EqualValues(t, 1, ptt.ReadCounters().Unresolved)
}
