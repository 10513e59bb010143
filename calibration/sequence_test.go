package calibration

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSequencerHellop(t *testing.T) {
	// hellop (seed 000): main calls myA, which calls myC; then an
	// exception unwinds two frames; then an exit whose entry was never
	// seen (profiling started inside it).
	type ev struct {
		tr     Transition
		typ    Type
		method string
		want   string
	}
	evs := []ev{
		{En, InterpStatic, "main", "Other-En-Other-En-interp"},
		{En, Interp, "myA", "Other-En-interp-En-Interp"},
		{En, NativeStatic, "myC", "interp-En-Interp-En-native"},
		{Ex, NativeStatic, "myC", "Interp-En-native-Ex-Interp"},
		{En, Interp, "thrower", "native-Ex-Interp-En-Interp"},
		{Xx, Interp, "thrower", "Interp-En-Interp-Xx-Interp"},
		{Xx, Interp, "myA", "Interp-Xx-Interp-Xx-interp"},
		{Ex, InterpStatic, "main", "Interp-Xx-interp-Ex-Other"},
		{Ex, Interp, "outer", "interp-Ex-Other-Ex-Other"},
		{En, Native, "late", "Other-Ex-Other-En-Native"},
	}
	s := NewSequencer()
	for i, e := range evs {
		k := s.Next(e.tr, e.typ, e.method)
		assert.Equal(t, e.want, k.String(), "event %d", i)
		assert.True(t, Valid(k), "event %d", i)
	}
	assert.Equal(t, 1, s.Depth())
	s.Reset()
	assert.Equal(t, 0, s.Depth())
	assert.Equal(t, "Other-En-Other-En-interp", s.Next(En, InterpStatic, "main").String())
}

func TestSequencerMissedExits(t *testing.T) {
	s := NewSequencer()
	s.Next(En, InterpStatic, "a")
	s.Next(En, Interp, "b")
	s.Next(En, Native, "c")
	// a exits while b and c are still on the stack: they lost their exits.
	k := s.Next(Ex, InterpStatic, "a")
	assert.Equal(t, "Interp-En-Native-Ex-Other", k.String())
	assert.False(t, Valid(k), "only an anomaly produces this")
	assert.Equal(t, 0, s.Depth())
}

// The sequencer, fed what a log-gen line holds, finds the keys the
// simulated agent computed from its own stack.
func TestSequencerMatchesSimulation(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(1)))
	evs := simulate(simConfig{seed: 31, threads: 4, events: 20000, maxDepth: 9,
		types: allTypes, pZero: 1, pUnmatched: 0.2}, o)
	seqs := map[int]*Sequencer{}
	for i, ev := range evs {
		s := seqs[ev.Thread]
		if s == nil {
			s = NewSequencer()
			seqs[ev.Thread] = s
		}
		if got := s.Next(ev.tr, ev.typ, ev.method); got != ev.Key {
			t.Fatalf("event %d: sequencer says %s, simulation %s", i, got, ev.Key)
		}
	}
}
