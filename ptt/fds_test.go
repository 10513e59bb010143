package ptt_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/ptt/pttbpf"
	"github.com/libjprof/libjprof/ptt/ptthelper"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/ptttest"
	"github.com/libjprof/libjprof/ptt"
)

// Programs loaded by someone else (here: this test, as a privileged
// helper would), the agent given only the two map FDs. Also runs the
// raw_tp program set end to end.
func TestSetupFromFDs(t *testing.T) {
	for _, mode := range []string{"tp_btf", "raw_tp"} {
		t.Run(mode, func(t *testing.T) {
			objs, err := pttbpf.Load(pttbpf.Options{Slots: 8, Mode: mode})
			if errors.Is(err, os.ErrPermission) {
				t.Skipf("cannot load eBPF here (needs CAP_BPF+CAP_PERFMON): %v", err)
			}
			require.NoError(t, err)
			defer objs.Close()

			st, err := ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, objs.Slots.FD(), objs.Tids.FD(), 2)
			require.NoError(t, err)
			defer func() { assert.NoError(t, ptt.Close()) }()
			assert.Equal(t, ptt.BPF, st.Backend)
			assert.EqualValues(t, 8, ptt.ReadCounters().Slots)

			r, steal := busyTracking(t, 100)
			require.Zero(t, r.Err)
			require.Zero(t, r.Fallback)
			t.Logf("%s: ptt %d ns, cputime %d ns, irq %d ns in %d interrupts, steal <= %d ns", mode, r.PTT, r.CPU, r.IrqNs, r.Interrupts, steal)
			assertTracks(t, r, steal)
			assert.Greater(t, r.Interrupts, uint64(0))

			s := onThread(func() ptttest.ThreadResult { return ptttest.SleepThread(20, 1000) })
			assert.GreaterOrEqual(t, s.Dispatches, uint64(20))
		})
	}
}

func TestSetupFromFDsRejects(t *testing.T) {
	objs, err := pttbpf.Load(pttbpf.Options{Slots: 8})
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot load eBPF here: %v", err)
	}
	require.NoError(t, err)
	defer objs.Close()

	// The hash map is not mmapable; a closed FD is not a map.
	_, err = ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, objs.Tids.FD(), objs.Tids.FD(), 2)
	assert.Error(t, err)
	_, err = ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, 1<<20, objs.Tids.FD(), 2)
	assert.Error(t, err)
	_, err = ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Cycles}}, objs.Slots.FD(), objs.Tids.FD(), 2)
	assert.ErrorContains(t, err, "counts only PTT_TIME")
	_, err = ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, objs.Slots.FD(), objs.Tids.FD(), 0)
	assert.ErrorContains(t, err, "owner token 0")
	require.NoError(t, ptt.Close())
}

// The unprivileged path end to end: a helper serves the FDs over a unix
// socket, the "agent" fetches them and sets up from them.
func TestSetupFromHelper(t *testing.T) {
	objs, err := pttbpf.Load(pttbpf.Options{Slots: 8})
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot load eBPF here (needs CAP_BPF+CAP_PERFMON): %v", err)
	}
	require.NoError(t, err)
	defer objs.Close()
	srv := &ptthelper.Server{Objects: objs}
	path := filepath.Join(t.TempDir(), "ptt.sock")
	require.NoError(t, srv.Listen(path))
	go srv.Serve()
	defer srv.Close()

	lease, err := ptthelper.Fetch(path)
	require.NoError(t, err)
	defer unix.Close(lease.SlotsFD)
	defer unix.Close(lease.TidsFD)
	defer lease.Close()
	assert.GreaterOrEqual(t, lease.Owner, uint32(2), "0 is free, 1 a private area")
	st, err := ptt.SetupFromFDs(ptt.Config{Metrics: []ptt.Metric{ptt.Time}}, lease.SlotsFD, lease.TidsFD, lease.Owner)
	require.NoError(t, err)
	defer func() { assert.NoError(t, ptt.Close()) }()
	assert.Equal(t, ptt.BPF, st.Backend)

	r := onThread(func() ptttest.ThreadResult { return ptttest.SleepThread(20, 1000) })
	require.Zero(t, r.Fallback)
	assert.GreaterOrEqual(t, r.Dispatches, uint64(20))
}
