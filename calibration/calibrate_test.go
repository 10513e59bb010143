package calibration

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var allTypes = []Type{InterpStatic, Interp, JITStatic, JIT, NativeStatic, Native, Compiling, Other}

// zeroSeen reports, per key, whether some event of the key did no work and
// got no noise: the condition under which its minimum is exactly its
// overhead, and calibration exact.
func zeroSeen(evs []simEvent) map[Key]bool {
	z := map[Key]bool{}
	for _, ev := range evs {
		if ev.work == 0 && ev.noise == 0 {
			z[ev.Key] = true
		}
	}
	return z
}

func TestCalibrateFinalRecoversTruth(t *testing.T) {
	tests := []struct {
		name  string
		noise func(*rand.Rand) uint64
	}{
		{"no noise", nil},
		{"noise and interrupts", timeNoise},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newSimOverheads(rand.New(rand.NewSource(1)))
			evs := simulate(simConfig{
				seed: 2, threads: 4, events: 50000, maxDepth: 12,
				types: []Type{InterpStatic, Interp, NativeStatic, Native},
				pZero: 0.3, noise: tc.noise, pUnmatched: 0.05,
			}, o)
			// The theory: a key's minimum is its overhead plus the least
			// (work + noise) among its events, m0, so an event's calibrated
			// value is truth + noise − m0. It is exact where some event of
			// the key did no work and got no noise (m0 = 0); elsewhere
			// calibration removes m0 too much, never going below zero.
			m0 := [2]map[Key]uint64{{}, {}}
			for _, ev := range evs {
				for m, noise := range []uint64{0, ev.noise} {
					if v, ok := m0[m][ev.Key]; !ok || ev.work+noise < v {
						m0[m][ev.Key] = ev.work + noise
					}
				}
			}
			got, err := Calibrate(events(evs), Final, newSimCalibrator(o))
			require.NoError(t, err)

			exact := 0
			for i, ev := range evs {
				for m, noise := range []uint64{0, ev.noise} {
					want := ev.truth(o, m) + noise - m0[m][ev.Key]
					if got[i][m] != want {
						t.Fatalf("event %d key %s metric %d: calibrated %d, want %d", i, ev.Key, m, got[i][m], want)
					}
					if m0[m][ev.Key] == 0 {
						exact++
					}
				}
			}
			assert.Greater(t, exact, len(evs)*19/10, "almost every value must be exact")
		})
	}
}

// The per-node identity the agent relies on: with the final minima no
// delta is below its key's minimum, so the calibrated sum of a node is its
// raw sum minus count·(min − env) per key, with no clamping anywhere.
func TestCalibrateNodeIdentity(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(3)))
	evs := simulate(simConfig{seed: 4, threads: 3, events: 20000, maxDepth: 8,
		types: allTypes, pZero: 0.2, noise: timeNoise}, o)
	c := newSimCalibrator(o)
	got, err := Calibrate(events(evs), Final, c)
	require.NoError(t, err)

	// A "node" here: thread and key (the agent's nodes are finer, the
	// identity holds for any grouping of events).
	type node struct {
		th int
		k  Key
	}
	raw := map[node][2]uint64{}
	cal := map[node][2]uint64{}
	cnt := map[node]uint64{}
	for i, ev := range evs {
		n := node{ev.Thread, ev.Key}
		r, cv := raw[n], cal[n]
		for m := 0; m < 2; m++ {
			r[m] += ev.Delta[m]
			cv[m] += got[i][m]
		}
		raw[n], cal[n] = r, cv
		cnt[n]++
	}
	for n, r := range raw {
		for m := 0; m < 2; m++ {
			assert.Equal(t, r[m]-cnt[n]*c.Overhead(n.k, m), cal[n][m], "node %v metric %d", n, m)
		}
	}
}

func TestCalibrateOnlineConverges(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(5)))
	evs := simulate(simConfig{seed: 6, threads: 4, events: 30000, maxDepth: 10,
		types: []Type{InterpStatic, Interp, NativeStatic, Native}, pZero: 0.3, noise: timeNoise, pUnmatched: 0.02}, o)
	final, err := Calibrate(events(evs), Final, newSimCalibrator(o))
	require.NoError(t, err)
	online, err := Calibrate(events(evs), Online, newSimCalibrator(o))
	require.NoError(t, err)

	// Once an event at a key's final minimum has been seen, the online
	// minimum is the final one and both modes agree from then on.
	finalMin := newSimCalibrator(o)
	for _, ev := range evs {
		finalMin.Observe(ev.Key, ev.Delta)
	}
	reached := [2]map[Key]bool{{}, {}}
	differ, after := 0, 0
	for i, ev := range evs {
		for m := 0; m < 2; m++ {
			// The minimum current at the time is at least the final one, so
			// online calibration removes at least as much.
			if online[i][m] > final[i][m] {
				t.Fatalf("event %d key %s metric %d: online %d above final %d", i, ev.Key, m, online[i][m], final[i][m])
			}
			if ev.Delta[m] == finalMin.min[int(ev.Key)*2+m] {
				reached[m][ev.Key] = true
			}
			if reached[m][ev.Key] {
				after++
				if online[i][m] != final[i][m] {
					t.Fatalf("event %d key %s metric %d after its minimum: online %d, final %d", i, ev.Key, m, online[i][m], final[i][m])
				}
			} else if online[i][m] != final[i][m] {
				differ++
			}
		}
	}
	// Convergence: the events calibrated before their key's minimum was
	// found are a small part of the stream.
	assert.Less(t, differ, len(evs)/5, "%d of %d values differ", differ, 2*len(evs))
	assert.Greater(t, after, len(evs))
}

// Training: minima from an earlier run of the same program, loaded as
// starting minima, make online calibration equal to final from the first
// event — the reason the trainer exists.
func TestCalibrateOnlineWithTraining(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(7)))
	cfg := simConfig{seed: 8, threads: 2, events: 40000, maxDepth: 10,
		types: []Type{InterpStatic, Interp, NativeStatic, Native}, pZero: 0.3, noise: timeNoise}
	training := simulate(cfg, o)
	tc := newSimCalibrator(o)
	_, err := Calibrate(events(training), Final, tc)
	require.NoError(t, err)

	cfg.seed = 9
	run := simulate(cfg, o)
	zero := zeroSeen(training)
	c := newSimCalibrator(o)
	for m, metric := range []string{"PTT_INSTS", "PTT_TIME"} {
		require.NoError(t, c.Load(m, tc.Table(m, Provenance{Metric: metric})))
	}
	online, err := Calibrate(events(run), Online, c)
	require.NoError(t, err)
	for i, ev := range run {
		if !zero[ev.Key] {
			continue
		}
		assert.Equal(t, ev.truth(o, 1)+ev.noise, online[i][1], "event %d key %s", i, ev.Key)
		assert.Equal(t, ev.truth(o, 0), online[i][0], "event %d key %s", i, ev.Key)
	}
}

func TestCalibrateNeverNegative(t *testing.T) {
	tests := []struct {
		name  string
		env   uint64 // Env set on every key, even above the minima
		table uint64 // starting minima from a table, above some deltas
	}{
		{"env above minima", 1 << 20, Unseen},
		{"stale table", 0, 400},
		{"both", 1 << 20, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newSimOverheads(rand.New(rand.NewSource(10)))
			evs := simulate(simConfig{seed: 11, threads: 2, events: 5000, maxDepth: 6,
				types: allTypes, pZero: 0.5, noise: timeNoise}, o)
			for _, mode := range []Mode{Online, Final} {
				c := NewCalibrator("PTT_TIME", "PTT_TIME")
				tab := NewTable(Provenance{Metric: "PTT_TIME"})
				for k := Key(0); k < NKeys; k++ {
					tab.Entries[k] = Entry{Min: tc.table, Env: tc.env}
				}
				require.NoError(t, c.Load(0, tab))
				require.NoError(t, c.Load(1, tab))
				got, err := Calibrate(events(evs), mode, c)
				require.NoError(t, err)
				for i, ev := range evs {
					for m := 0; m < 2; m++ {
						assert.LessOrEqual(t, got[i][m], ev.Delta[m], "%s: calibration never adds", mode)
						assert.Less(t, got[i][m], uint64(1)<<62, "%s: wrapped below zero", mode)
					}
				}
			}
		})
	}
}

func TestCalibrateErrors(t *testing.T) {
	c := NewCalibrator("PTT_TIME")
	_, err := Calibrate([]Event{{Key: 1, Delta: []uint64{1, 2}}}, Final, c)
	assert.ErrorContains(t, err, "2 values for 1 metrics")
	_, err = Calibrate([]Event{{Key: NKeys, Delta: []uint64{1}}}, Online, c)
	assert.ErrorContains(t, err, "out of range")
	_, err = Calibrate(nil, Mode(7), c)
	assert.Error(t, err)
	assert.Error(t, c.Load(1, NewTable(Provenance{})))
}

func TestCalibratorDefaultsAndTable(t *testing.T) {
	c := NewCalibrator("PTT_INSTS", "PTT_TIME")
	k := MakeKey(Interp, En, InterpStatic, Ex, Interp)
	assert.Zero(t, c.Overhead(k, 0), "unseen keys remove nothing")
	c.Observe(k, []uint64{30, 200})
	c.Observe(k, []uint64{25, 260})
	assert.Equal(t, uint64(24), c.Overhead(k, 0), "instructions keep one for the call itself")
	assert.Equal(t, uint64(200), c.Overhead(k, 1))
	assert.Equal(t, []uint64{6, 60}, c.Adjust(k, []uint64{30, 260}, nil))

	ti := c.Table(0, Provenance{Metric: "PTT_INSTS"})
	assert.Equal(t, map[Key]Entry{k: {Min: 25, Env: 1, Count: 2}}, ti.Entries)
	tt := c.Table(1, Provenance{Metric: "PTT_TIME"})
	assert.Equal(t, map[Key]Entry{k: {Min: 200, Env: 0, Count: 2}}, tt.Entries)
}

func TestRecalibrate(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(12)))
	evs := simulate(simConfig{seed: 13, threads: 2, events: 20000, maxDepth: 8,
		types: []Type{InterpStatic, Interp, NativeStatic, Native}, pZero: 0.3, noise: timeNoise}, o)

	// The run's own final table: Recalibrate must give Calibrate's Final
	// values for metric 1.
	c := newSimCalibrator(o)
	final, err := Calibrate(events(evs), Final, c)
	require.NoError(t, err)
	tab := c.Table(1, Provenance{Metric: "PTT_TIME"})

	keys := make([]Key, len(evs))
	deltas := make([]uint64, len(evs))
	for i, ev := range evs {
		keys[i], deltas[i] = ev.Key, ev.Delta[1]
	}
	got, out, err := Recalibrate(keys, deltas, tab)
	require.NoError(t, err)
	for i := range evs {
		require.Equal(t, final[i][1], got[i], "event %d", i)
	}
	for k, e := range out.Entries {
		assert.Equal(t, tab.Lookup(k).Min, e.Min)
		assert.Equal(t, tab.Lookup(k).Count, e.Count)
	}

	// A training table whose minima are above this stream's: the stream's
	// lower minima win and nothing goes below zero.
	stale := tab.Clone()
	for k, e := range stale.Entries {
		if e.Seen() {
			e.Min += 1000
			stale.Entries[k] = e
		}
	}
	got2, _, err := Recalibrate(keys, deltas, stale)
	require.NoError(t, err)
	assert.Equal(t, got, got2)

	_, _, err = Recalibrate(keys[:1], deltas, tab)
	assert.Error(t, err)
}

func TestFinalMinimum(t *testing.T) {
	tab := NewTable(Provenance{Metric: "PTT_TIME"})
	tab.Entries[Key(1)] = Entry{Min: 100}
	for _, c := range []struct {
		name          string
		runMin, count uint64
		table         *Table
		key           Key
		want          uint64
	}{
		{"no table", 300, 5, nil, 1, 300},
		{"often seen: own minimum", 300, OwnMinimumEvents, tab, 1, 300},
		{"rarely seen: table's, lower", 300, OwnMinimumEvents - 1, tab, 1, 100},
		{"rarely seen: own, lower", 50, 3, tab, 1, 50},
		{"never seen: table's", Unseen, 0, tab, 1, 100},
		{"in neither", Unseen, 0, tab, 2, Unseen},
		{"often seen, a few times the table's: own (real glue)", OwnMinimumExcess * 100, 5000, tab, 1, OwnMinimumExcess * 100},
		{"often seen, far above the table's: no glue, table's", OwnMinimumExcess*100 + 1, 5000, tab, 1, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, FinalMinimum(c.runMin, c.count, c.table, c.key))
		})
	}
}
