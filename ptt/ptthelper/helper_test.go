package ptthelper

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/ptt/pttbpf"
)

func load(t *testing.T) *pttbpf.Objects {
	t.Helper()
	o, err := pttbpf.Load(pttbpf.Options{Slots: 8})
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("cannot load eBPF here (needs CAP_BPF+CAP_PERFMON): %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { o.Close() })
	return o
}

func serve(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ptt.sock")
	require.NoError(t, s.Listen(path))
	done := make(chan error)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.NoError(t, <-done)
	})
	return path
}

func TestFetch(t *testing.T) {
	o := load(t)
	path := serve(t, &Server{Objects: o})

	for i := 0; i < 2; i++ { // the server keeps serving
		slots, tids, err := Fetch(path)
		require.NoError(t, err)
		m, err := ebpf.NewMapFromFD(slots)
		require.NoError(t, err)
		assert.EqualValues(t, 9, m.MaxEntries())
		assert.Equal(t, ebpf.Array, m.Type())
		assert.NoError(t, m.Close())
		h, err := ebpf.NewMapFromFD(tids)
		require.NoError(t, err)
		assert.Equal(t, ebpf.Hash, h.Type())
		assert.NoError(t, h.Close())
	}
}

func TestFetchRefused(t *testing.T) {
	o := load(t)
	seen := make(chan *unix.Ucred, 1)
	path := serve(t, &Server{Objects: o, Allow: func(c *unix.Ucred) bool { seen <- c; return false }})
	_, _, err := Fetch(path)
	assert.Error(t, err)
	assert.EqualValues(t, os.Getpid(), (<-seen).Pid)

	_, _, err = Fetch(filepath.Join(t.TempDir(), "none.sock"))
	assert.Error(t, err)
}
