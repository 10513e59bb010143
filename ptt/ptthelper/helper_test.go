package ptthelper

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

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

	owners := map[uint32]bool{}
	for i := 0; i < 2; i++ { // the server keeps serving
		l, err := Fetch(path)
		require.NoError(t, err)
		defer l.Close()
		assert.GreaterOrEqual(t, l.Owner, uint32(2))
		owners[l.Owner] = true
		m, err := ebpf.NewMapFromFD(l.SlotsFD)
		require.NoError(t, err)
		assert.EqualValues(t, 9, m.MaxEntries())
		assert.Equal(t, ebpf.Array, m.Type())
		assert.NoError(t, m.Close())
		h, err := ebpf.NewMapFromFD(l.TidsFD)
		require.NoError(t, err)
		assert.Equal(t, ebpf.Hash, h.Type())
		assert.NoError(t, h.Close())
	}
	assert.Len(t, owners, 2, "each client its own owner token")
}

// A client that goes away with slots still claimed (a crash, threads
// alive at exit): closing its connection frees them, their tid->slot
// entries (global and pending) and the pending count they held; a
// slot of another client is left alone.
func TestReclaimOnClose(t *testing.T) {
	o := load(t)
	type freed struct {
		owner uint32
		n     int
		err   error
	}
	ch := make(chan freed, 4)
	path := serve(t, &Server{Objects: o, Reclaimed: func(owner uint32, n int, err error) { ch <- freed{owner, n, err} }})

	gone, err := Fetch(path)
	require.NoError(t, err)
	stays, err := Fetch(path)
	require.NoError(t, err)
	defer stays.Close()

	area, err := unix.Mmap(gone.SlotsFD, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(area)
	u32 := func(off int) *uint32 { return (*uint32)(unsafe.Pointer(&area[off])) }
	u64 := func(off int) *uint64 { return (*uint64)(unsafe.Pointer(&area[off])) }
	const slot, tid, owner = 64, 56, 60 // ptt_slot.h
	// What two registered threads of the departing client and one of
	// the other client leave in the area.
	atomic.StoreUint32(u32(3*slot+owner), gone.Owner)
	atomic.StoreUint32(u32(3*slot+tid), 4242)
	atomic.StoreUint32(u32(5*slot+owner), gone.Owner) // pending: tid 0
	atomic.StoreUint32(u32(6*slot+owner), stays.Owner)
	atomic.StoreUint32(u32(6*slot+tid), 4343)
	atomic.StoreUint64(u64(24), 1) // header: one pending registration
	tids, err := ebpf.NewMapFromFD(gone.TidsFD)
	require.NoError(t, err)
	defer tids.Close()
	pendingKey := uint64(0xabcd)<<32 | 7
	require.NoError(t, tids.Put(uint64(4242), uint32(3)))
	require.NoError(t, tids.Put(pendingKey, uint32(5)))
	require.NoError(t, tids.Put(uint64(4343), uint32(6)))
	gen := atomic.LoadUint64(u64(8))

	require.NoError(t, gone.Close())
	f := <-ch
	require.NoError(t, f.err)
	assert.Equal(t, gone.Owner, f.owner)
	assert.Equal(t, 2, f.n)
	for _, i := range []int{3, 5} {
		assert.Zero(t, atomic.LoadUint32(u32(i*slot+owner)), "slot %d freed", i)
		assert.Zero(t, atomic.LoadUint32(u32(i*slot+tid)), "slot %d", i)
	}
	assert.Equal(t, stays.Owner, atomic.LoadUint32(u32(6*slot+owner)), "another client's slot kept")
	assert.EqualValues(t, 4343, atomic.LoadUint32(u32(6*slot+tid)))
	var v uint32
	assert.ErrorIs(t, tids.Lookup(uint64(4242), &v), ebpf.ErrKeyNotExist)
	assert.ErrorIs(t, tids.Lookup(pendingKey, &v), ebpf.ErrKeyNotExist)
	require.NoError(t, tids.Lookup(uint64(4343), &v))
	assert.EqualValues(t, 6, v)
	assert.Zero(t, atomic.LoadUint64(u64(24)), "the pending registration given back")
	assert.Greater(t, atomic.LoadUint64(u64(8)), gen, "gen bumped for the per-CPU caches")
	unix.Close(gone.SlotsFD)
	unix.Close(gone.TidsFD)
}

func TestFetchRefused(t *testing.T) {
	o := load(t)
	seen := make(chan *unix.Ucred, 1)
	path := serve(t, &Server{Objects: o, Allow: func(c *unix.Ucred) bool { seen <- c; return false }})
	_, err := Fetch(path)
	assert.Error(t, err)
	assert.EqualValues(t, os.Getpid(), (<-seen).Pid)

	_, err = Fetch(filepath.Join(t.TempDir(), "none.sock"))
	assert.Error(t, err)
}

// Something at the socket that accepts and never answers (not a helper,
// or a helper stuck) costs a starting JVM FetchTimeout, not its start.
func TestFetchSilentPeer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "silent.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(FetchTimeout + 5*time.Second)
		}
	}()
	t0 := time.Now()
	_, err = Fetch(path)
	require.Error(t, err)
	assert.Less(t, time.Since(t0), FetchTimeout+2*time.Second)
	assert.Contains(t, err.Error(), "i/o timeout")
}
