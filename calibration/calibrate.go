package calibration

import (
	"fmt"
)

// Calibrator is the reference implementation of the calibration
// algorithm: per key and metric, the minimum delta observed (shared by all
// threads, as in the agent), the environmental overhead, and the count of
// events. The agent does the same in C on its hot path; this one serves
// tests, post-processing of log-gen files, and anything that needs to
// reproduce the agent's numbers.
//
// A Calibrator is not safe for concurrent use.
type Calibrator struct {
	nm    int
	min   []uint64 // [key*nm + m], Unseen when not seen
	env   []uint64 // [key*nm + m]
	exc   []uint64 // [key*nm + m]: Excess
	count []uint64 // [key]
}

// NewCalibrator returns a calibrator for len(metrics) metrics with no
// minima and the default environmental overhead of each metric (see
// DefaultEnv).
func NewCalibrator(metrics ...string) *Calibrator {
	nm := len(metrics)
	c := &Calibrator{
		nm:    nm,
		min:   make([]uint64, NKeys*nm),
		env:   make([]uint64, NKeys*nm),
		exc:   make([]uint64, NKeys*nm),
		count: make([]uint64, NKeys),
	}
	for i := range c.min {
		c.min[i] = Unseen
	}
	for m, name := range metrics {
		d := DefaultEnv(name)
		for k := 0; k < NKeys; k++ {
			c.env[k*nm+m] = d
		}
	}
	return c
}

// Metrics is the number of metrics.
func (c *Calibrator) Metrics() int { return c.nm }

// Load seeds metric m from a table, as the agent does with CALTABLE=: the
// table's minima become the starting minima (lowered, never raised, if some
// are already known) and its Env and Excess values replace the defaults.
// Counts are not loaded: they describe the training run, not this one.
func (c *Calibrator) Load(m int, t *Table) error {
	if m < 0 || m >= c.nm {
		return fmt.Errorf("calibration: metric %d out of range (%d metrics)", m, c.nm)
	}
	for k := 0; k < NKeys; k++ {
		e := t.Lookup(Key(k))
		i := k*c.nm + m
		c.min[i] = min(c.min[i], e.Min)
		c.env[i], c.exc[i] = e.Env, e.Excess
	}
	return nil
}

// SetEnv sets the environmental overhead of key k for metric m.
func (c *Calibrator) SetEnv(k Key, m int, env uint64) { c.env[int(k)*c.nm+m] = env }

// Observe records one event: its count, and its delta (one value per
// metric) against the key's minima.
func (c *Calibrator) Observe(k Key, delta []uint64) {
	c.count[k]++
	row := c.min[int(k)*c.nm : int(k+1)*c.nm]
	for m, d := range delta[:c.nm] {
		row[m] = min(row[m], d)
	}
}

// Overhead is what calibration removes from each event of key k for metric
// m with the current minimum: min − (env − excess) (Entry.Kept), nothing
// if the key was never seen or what is kept is not below the minimum.
func (c *Calibrator) Overhead(k Key, m int) uint64 {
	i := int(k)*c.nm + m
	return Overhead(c.min[i], Entry{Env: c.env[i], Excess: c.exc[i]}.Kept())
}

// Adjust writes into out (grown if needed, and returned) the calibrated
// values of a delta of key k with the current minima: delta − overhead,
// never below zero. It does not observe the delta.
func (c *Calibrator) Adjust(k Key, delta, out []uint64) []uint64 {
	if cap(out) < c.nm {
		out = make([]uint64, c.nm)
	}
	out = out[:c.nm]
	for m := range out {
		d, o := delta[m], c.Overhead(k, m)
		if d > o {
			out[m] = d - o
		} else {
			out[m] = 0
		}
	}
	return out
}

// Online handles one event the way the agent's hot path does for log-gen:
// it observes the delta first — so the minimum includes this event and the
// result cannot go below zero — then calibrates it with the minimum current
// now.
func (c *Calibrator) Online(k Key, delta, out []uint64) []uint64 {
	c.Observe(k, delta)
	return c.Adjust(k, delta, out)
}

// Table exports metric m as a table with the given provenance: every key
// that was seen (or whose Env differs from the metric's default) with its
// minimum, Env and count.
func (c *Calibrator) Table(m int, p Provenance) *Table {
	t := NewTable(p)
	def := DefaultEnv(p.Metric)
	for k := 0; k < NKeys; k++ {
		i := k*c.nm + m
		e := Entry{Min: c.min[i], Env: c.env[i], Excess: c.exc[i], Count: c.count[k]}
		if e.Min != Unseen || e.Count != 0 || e.Env != def {
			t.Entries[Key(k)] = e
		}
	}
	return t
}

// Mode says which minima Calibrate uses.
type Mode int

const (
	// Online uses, for each event, the minimum current when it happened
	// (what log-gen lines carry).
	Online Mode = iota
	// Final uses the minima over the whole stream (what log-rt and
	// post-processing use).
	Final
)

func (m Mode) String() string {
	switch m {
	case Online:
		return "online"
	case Final:
		return "final"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Event is one method event of a stream: the thread it happened on, the key
// of its delta, and the delta per metric (the metric that ran on the thread
// since its previous event, raw).
type Event struct {
	Thread int
	Key    Key
	Delta  []uint64
}

// Calibrate returns the calibrated values of every event, one slice per
// event, in mode Online or Final. It observes every event into c, which may
// hold starting minima and Env values (Load) and holds the final minima
// afterwards. Every delta must have c.Metrics() values.
func Calibrate(events []Event, mode Mode, c *Calibrator) ([][]uint64, error) {
	for i, ev := range events {
		if len(ev.Delta) != c.nm {
			return nil, fmt.Errorf("calibration: event %d has %d values for %d metrics", i, len(ev.Delta), c.nm)
		}
		if !ev.Key.InRange() {
			return nil, fmt.Errorf("calibration: event %d: key %d out of range", i, uint16(ev.Key))
		}
	}
	out := make([][]uint64, len(events))
	flat := make([]uint64, len(events)*c.nm)
	switch mode {
	case Online:
		for i, ev := range events {
			out[i] = c.Online(ev.Key, ev.Delta, flat[i*c.nm:(i+1)*c.nm:(i+1)*c.nm])
		}
	case Final:
		for _, ev := range events {
			c.Observe(ev.Key, ev.Delta)
		}
		for i, ev := range events {
			out[i] = c.Adjust(ev.Key, ev.Delta, flat[i*c.nm:(i+1)*c.nm:(i+1)*c.nm])
		}
	default:
		return nil, fmt.Errorf("calibration: unknown mode %d", int(mode))
	}
	return out, nil
}

// Recalibrate is post-processing for one metric: given the key and raw
// delta of every event of a run (in any thread order) and a table — the
// run's own final table, or a training table — it returns each event's
// value calibrated with the final minima, min(table, this stream), and the
// table's Env. The final minima and counts of the stream are returned as a
// table with the input table's provenance.
func Recalibrate(keys []Key, deltas []uint64, t *Table) ([]uint64, *Table, error) {
	if len(keys) != len(deltas) {
		return nil, nil, fmt.Errorf("calibration: %d keys for %d deltas", len(keys), len(deltas))
	}
	c := NewCalibrator(t.Metric)
	if err := c.Load(0, t); err != nil {
		return nil, nil, err
	}
	one := []uint64{0}
	for i, k := range keys {
		if !k.InRange() {
			return nil, nil, fmt.Errorf("calibration: event %d: key %d out of range", i, uint16(k))
		}
		one[0] = deltas[i]
		c.Observe(k, one)
	}
	out := make([]uint64, len(deltas))
	for i, k := range keys {
		if o := c.Overhead(k, 0); deltas[i] > o {
			out[i] = deltas[i] - o
		}
	}
	return out, c.Table(0, t.Provenance), nil
}
