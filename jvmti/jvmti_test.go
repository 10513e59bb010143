package jvmti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
)

// The C hot path and package calibration must encode sequences the same
// way: tables written by one are read by the other.
func TestKeyEncodingMatchesCalibration(t *testing.T) {
	require.Equal(t, calibration.NKeys, NKeys)
	require.Equal(t, len(calibration.TypeLetters), cNTypes)
	require.Equal(t, TypeLetters, calibration.TypeLetters)
	seen := map[int]bool{}
	for a := 0; a < cNTypes; a++ {
		for t1 := 0; t1 < cNTrans; t1++ {
			for b := 0; b < cNTypes; b++ {
				for t2 := 0; t2 < cNTrans; t2++ {
					for c := 0; c < cNTypes; c++ {
						k := cKey(a, t1, b, t2, c)
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

// Arena chunks double in size and never move: element i is in exactly one
// chunk, consecutive elements fill each chunk from 0, and the chunks
// cover 2^32 elements.
func TestArenaAddressing(t *testing.T) {
	for _, c := range []struct {
		i     uint32
		chunk int
		off   uint64
	}{
		{0, 0, 0},
		{63, 0, 63},
		{64, 1, 0},
		{191, 1, 127},
		{192, 2, 0},
		{1<<32 - 1 - 64, cNChunks - 1, 1<<(cNChunks-1+cChunk0Shift) - 1},
	} {
		chunk, off := cArenaSlot(c.i)
		assert.Equal(t, c.chunk, chunk, "element %d", c.i)
		assert.Equal(t, c.off, off, "element %d", c.i)
	}
	prevChunk, prevOff := 0, uint64(0)
	for i := uint32(1); i < 100000; i++ {
		chunk, off := cArenaSlot(i)
		if chunk == prevChunk {
			require.Equal(t, prevOff+1, off)
		} else {
			require.Equal(t, prevChunk+1, chunk)
			require.Equal(t, uint64(1)<<(prevChunk+cChunk0Shift)-1, prevOff, "chunk %d full", prevChunk)
			require.Zero(t, off)
		}
		prevChunk, prevOff = chunk, off
	}
}
