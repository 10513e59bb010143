package ptt

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

			st, err := SetupFromFDs(Config{Metrics: []Metric{Time}}, objs.Slots.FD(), objs.Tids.FD())
			require.NoError(t, err)
			defer func() { assert.NoError(t, Close()) }()
			assert.Equal(t, BPF, st.Backend)
			assert.EqualValues(t, 8, ReadCounters().Slots)

			s0 := stealTicks(t)
			r := onThread(func() threadResult { return busyThread(100) })
			steal := stealBound(s0, stealTicks(t))
			require.Zero(t, r.Err)
			require.Zero(t, r.Fallback)
			t.Logf("%s: ptt %d ns, cputime %d ns, irq %d ns in %d interrupts, steal <= %d ns", mode, r.PTT, r.CPU, r.IrqNs, r.Interrupts, steal)
			assertTracks(t, r, steal)
			assert.Greater(t, r.Interrupts, uint64(0))

			s := onThread(func() threadResult { return sleepThread(20, 1000) })
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
	_, err = SetupFromFDs(Config{Metrics: []Metric{Time}}, objs.Tids.FD(), objs.Tids.FD())
	assert.Error(t, err)
	_, err = SetupFromFDs(Config{Metrics: []Metric{Time}}, 1<<20, objs.Tids.FD())
	assert.Error(t, err)
	_, err = SetupFromFDs(Config{Metrics: []Metric{Cycles}}, objs.Slots.FD(), objs.Tids.FD())
	assert.ErrorContains(t, err, "counts only PTT_TIME")
	require.NoError(t, Close())
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

	slots, tids, err := ptthelper.Fetch(path)
	require.NoError(t, err)
	defer unix.Close(slots)
	defer unix.Close(tids)
	st, err := SetupFromFDs(Config{Metrics: []Metric{Time}}, slots, tids)
	require.NoError(t, err)
	defer func() { assert.NoError(t, Close()) }()
	assert.Equal(t, BPF, st.Backend)

	r := onThread(func() threadResult { return sleepThread(20, 1000) })
	require.Zero(t, r.Fallback)
	assert.GreaterOrEqual(t, r.Dispatches, uint64(20))
}
