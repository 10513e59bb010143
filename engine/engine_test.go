package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/engine/internal/ctest"
)

// The C event path and package calibration must encode sequences the
// same way: tables written by one are read by the other.
func TestKeyEncodingMatchesCalibration(t *testing.T) {
	require.Equal(t, calibration.NKeys, NKeys)
	require.Equal(t, len(calibration.TypeLetters), ctest.NTypes)
	require.Equal(t, TypeLetters, calibration.TypeLetters)
	seen := map[int]bool{}
	for a := 0; a < ctest.NTypes; a++ {
		for t1 := 0; t1 < ctest.NTrans; t1++ {
			for b := 0; b < ctest.NTypes; b++ {
				for t2 := 0; t2 < ctest.NTrans; t2++ {
					for c := 0; c < ctest.NTypes; c++ {
						k := ctest.Key(a, t1, b, t2, c)
						want := calibration.MakeKey(calibration.Type(a), calibration.Transition(t1),
							calibration.Type(b), calibration.Transition(t2), calibration.Type(c))
						require.Equal(t, int(want), k)
						require.False(t, seen[k])
						seen[k] = true
					}
				}
			}
		}
	}
	assert.Len(t, seen, NKeys)
}

// The C and Go rules for what calibration removes agree.
func TestOverheadMatchesCalibration(t *testing.T) {
	for _, c := range []struct {
		min  uint64
		kept int64
	}{{300, 100}, {100, 300}, {100, 100}, {0, 0}, {100, -30}, {math.MaxUint64, 5}} {
		want := calibration.Overhead(c.min, c.kept)
		if c.min == math.MaxUint64 {
			want = c.min - uint64(c.kept) // C never sees Unseen: only minima of events
		}
		assert.Equal(t, want, ctest.Overhead(c.min, c.kept), "min %d kept %d", c.min, c.kept)
	}
	assert.Equal(t, uint64(130), calibration.Overhead(100, -30), "an excess above the glue removes more than the minimum")
}

// Arena chunks double in size and never move: element i is in exactly
// one chunk, consecutive elements fill each chunk from 0, the chunks
// cover 2^32 elements, and the Go readers address them as C does.
func TestArenaAddressing(t *testing.T) {
	last := uint32(math.MaxUint32 - 1<<ctest.Chunk0Shift)
	chunk, off := ctest.ArenaSlot(last)
	assert.Equal(t, ctest.NChunks-1, chunk)
	assert.Equal(t, uint64(1)<<(ctest.NChunks-1+ctest.Chunk0Shift)-1, off)
	prevChunk, prevOff := 0, uint64(0)
	check := func(i uint32) {
		chunk, off := ctest.ArenaSlot(i)
		gc, goff := arenaSlot(i)
		require.Equal(t, chunk, gc, "element %d", i)
		require.Equal(t, off, goff, "element %d", i)
	}
	for i := uint32(1); i < 100000; i++ {
		check(i)
		chunk, off := ctest.ArenaSlot(i)
		if chunk == prevChunk {
			require.Equal(t, prevOff+1, off)
		} else {
			require.Equal(t, prevChunk+1, chunk)
			require.Equal(t, uint64(1)<<(prevChunk+ctest.Chunk0Shift)-1, prevOff, "chunk %d full", prevChunk)
			require.Zero(t, off)
		}
		prevChunk, prevOff = chunk, off
	}
	for _, i := range []uint32{last, 1 << 31, 1<<32 - 1 - 1<<ctest.Chunk0Shift} {
		check(i)
	}
}

// A node's 32-bit counts stop at their limit instead of wrapping to a
// small number, and the reports' limit is theirs.
func TestCount32Saturates(t *testing.T) {
	assert.Equal(t, uint32(7), ctest.Count32(5, 2))
	assert.Equal(t, uint32(math.MaxUint32), ctest.Count32(math.MaxUint32-1, 1))
	assert.Equal(t, uint32(math.MaxUint32), ctest.Count32(math.MaxUint32, 1))
	assert.Equal(t, uint32(math.MaxUint32), ctest.Count32(10, 1<<40))
	assert.Equal(t, uint64(math.MaxUint32), uint64(CountMax))
}

// Every event's calibration key is counted once for its node, whichever
// place holds the count: the node itself (its first key), its group, the
// thread's map, or the group again once the node's own count is full;
// key 0 is a key like any other.
func TestSeqCountsAddUp(t *testing.T) {
	const nn, nk = 3000, 41
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([][]uint32, nn) // each node's keys, the first the most frequent
	for i := range keys {
		n := 1 + r.IntN(8)
		if i%5 == 0 {
			n = 1 + r.IntN(nk) // past the group, into the map
		}
		for _, k := range r.Perm(nk)[:n] {
			keys[i] = append(keys[i], uint32(k))
		}
		if i%7 == 0 {
			keys[i][0] = 0
		}
	}
	events := make([][2]uint32, 0, 600000)
	want := make([]uint64, nn*nk)
	for len(events) < cap(events) {
		n := r.IntN(nn)
		k := keys[n][0]
		if r.IntN(3) == 0 {
			k = keys[n][r.IntN(len(keys[n]))]
		}
		if n == 0 {
			k = keys[0][0] // node 0 overflows its own count below
		}
		events = append(events, [2]uint32{uint32(n), k})
		want[n*nk+int(k)]++
	}
	got, failures := ctest.Seqs(events, nn, nk, keys[0][0], math.MaxUint32-5)
	require.Equal(t, 0, failures)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("node %d key %d: counted %d, want %d", i/nk, i%nk, got[i], want[i])
		}
	}
}
