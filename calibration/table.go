package calibration

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Unseen is the Min of a key no event was observed for. It is also what
// the agent's C minima hold for such keys, so tables and the hot path
// exchange minima without translation.
const Unseen = math.MaxUint64

// Env sources, for Provenance.EnvSource.
const (
	// EnvDefault: every Env is DefaultEnv(metric) (tables the agent writes).
	EnvDefault = "default"
	// EnvTrainer: Env was measured by the trainer without the agent for the
	// keys it could measure; the others keep DefaultEnv(metric).
	EnvTrainer = "trainer"
)

// Entry is what a table knows about one key, for its one metric.
type Entry struct {
	// Min is the minimum delta observed for the key, Unseen if none.
	Min uint64
	// Env is the environmental overhead: the part of Min that runs without
	// profiling too and so stays with the program.
	Env uint64
	// Excess is how far the key's overhead typically lies above its
	// minimum (the trainer's median delta less the minimum): the event
	// path's jitter, which removing the minimum alone leaves in every
	// method. Calibration removes it too, out of what Env would keep
	// (see Kept); 0 when not measured.
	Excess uint64
	// Count is how many events of the key were observed.
	Count uint64
}

// Kept is what calibration leaves of each event's minimum in the
// program: Env less Excess, below zero when the excess is the larger
// (then more than the minimum is removed). So an event loses Min − Kept:
// its minimum and its typical excess over it, less the glue that runs
// without profiling too.
func (e Entry) Kept() int64 { return int64(e.Env) - int64(e.Excess) }

// Seen says whether an event of the key was observed.
func (e Entry) Seen() bool { return e.Min != Unseen }

// Overhead is the amount calibration removes from each delta of the key:
// Min − Kept, or nothing when the key was never seen. An Env above Min (a
// noisy measurement) removes nothing rather than adding to the program.
func (e Entry) Overhead() uint64 { return Overhead(e.Min, e.Kept()) }

// Overhead is the one rule for what calibration removes from an event:
// the key's minimum less what is kept of it (Entry.Kept), nothing for a
// key never seen or a Kept above the minimum. The agent's C event path
// has the same rule (jp_overhead) for log-gen's online values.
func Overhead(min uint64, kept int64) uint64 {
	if min == Unseen {
		return 0
	}
	if kept < 0 {
		return min + uint64(-kept)
	}
	if uint64(kept) >= min {
		return 0
	}
	return min - uint64(kept)
}

// Provenance says where a table's numbers come from. Minima are only
// meaningful for the JVM, metric, PTT backend and machine they were
// measured on.
type Provenance struct {
	JVM        string    // java.vm.name, e.g. "OpenJDK 64-Bit Server VM"
	JVMVersion string    // java.vm.version, e.g. "17.0.15+6-Debian-1deb12u1"
	Arch       string    // os.arch, e.g. "amd64"
	Metric     string    // metric name as in the agent's METRICS=, e.g. "PTT_TIME"
	Backend    string    // PTT backend: "bpf", "perf" or "clock"
	CPU        string    // CPU model, from /proc/cpuinfo
	Date       time.Time // when the table was made; written in UTC to the second
	Runs       int       // how many JVM runs the minima come from
	Tool       string    // what wrote the table, with its version
	EnvSource  string    // EnvDefault, EnvTrainer, or "" (unknown: treated as default)
	Source     string    // the agent's event source (SourceJVMTI, SourceBCI); "" is SourceJVMTI
	// Reads is the PTT reads per event the minima were taken with, "1"
	// or "2" (the agent's LATEREAD); "" is "2" (tables before the field).
	Reads string
	// Clock is how the reads took the time, ClockTSC or ClockVDSO; ""
	// is ClockVDSO (tables before the field).
	Clock string
	Notes []string // free text, one line each
}

// Clocks, for Provenance.Clock: a TSC-scaled read costs a fraction of a
// vDSO clock read, so the two paths have different minima.
const (
	ClockTSC  = "tsc"
	ClockVDSO = "vdso"
)

// PTTClock is the table's clock (Provenance.Clock).
func (p *Provenance) PTTClock() string {
	return orDefault(p.Clock, ClockVDSO)
}

// Path is the agent's per-event path that minima are taken on: its event
// source, PTT reads per event and the clock the reads take. A table serves
// only runs on its own path.
type Path struct {
	Source, Reads, Clock string
}

// Path is the table's Path.
func (p *Provenance) Path() Path {
	return Path{Source: p.EventSource(), Reads: p.PTTReads(), Clock: p.PTTClock()}
}

// PTTReads is the table's reads per event (Provenance.Reads).
func (p *Provenance) PTTReads() string {
	return orDefault(p.Reads, "2")
}

// Event sources, for Provenance.Source: each has its own injected path,
// so its own minima.
const (
	SourceJVMTI = "jvmti-method-events"
	SourceBCI   = "bci"
)

// EventSource is the table's event source, SourceJVMTI for tables that
// predate the field.
func (p *Provenance) EventSource() string {
	return orDefault(p.Source, SourceJVMTI)
}

// orDefault is s, or def for a field a table predates ("").
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Table holds the calibration data of one metric: provenance, and an Entry
// per key that was seen (or whose Env is known). A run with several metrics
// has one table per metric; a file may hold several (see WriteAll).
type Table struct {
	Provenance
	// Entries holds the keys the table knows; Lookup supplies defaults for
	// the others.
	Entries map[Key]Entry
}

// NewTable returns an empty table with the given provenance.
func NewTable(p Provenance) *Table {
	return &Table{Provenance: p, Entries: map[Key]Entry{}}
}

// DefaultEnv is the environmental overhead assumed for a key no
// measurement covers: one instruction — the call or return itself — for
// instruction counts (seed 000 §4.2), nothing for time and other metrics.
func DefaultEnv(metric string) uint64 {
	if strings.EqualFold(metric, "PTT_INSTS") {
		return 1
	}
	return 0
}

// Lookup returns the entry for k; a key the table does not hold is unseen,
// with the metric's default Env.
func (t *Table) Lookup(k Key) Entry {
	if e, ok := t.Entries[k]; ok {
		return e
	}
	return Entry{Min: Unseen, Env: DefaultEnv(t.Metric)}
}

// Keys returns the keys the table holds, in key order.
func (t *Table) Keys() []Key {
	ks := make([]Key, 0, len(t.Entries))
	for k := range t.Entries {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Observe records one event of key k with the given delta, as the agent
// does: the count goes up and the minimum goes down.
func (t *Table) Observe(k Key, delta uint64) {
	e := t.Lookup(k)
	e.Count++
	e.Min = min(e.Min, delta)
	t.Entries[k] = e
}

// Minima returns the per-key minima in the agent's layout: NKeys values,
// Unseen where the table has no minimum.
func (t *Table) Minima() []uint64 {
	out := make([]uint64, NKeys)
	for k := range out {
		out[k] = t.Lookup(Key(k)).Min
	}
	return out
}

// HasExcess says whether any key has a typical excess (tables trained
// before it was measured have none).
func (t *Table) HasExcess() bool {
	for _, e := range t.Entries {
		if e.Excess > 0 {
			return true
		}
	}
	return false
}

// Kept returns what calibration keeps of each key's minimum (Entry.Kept)
// in the agent's layout: NKeys values, DefaultEnv(metric) where the
// table has no Env.
func (t *Table) Kept() []int64 {
	out := make([]int64, NKeys)
	for k := range out {
		out[k] = t.Lookup(Key(k)).Kept()
	}
	return out
}

// Invalid returns the keys the table holds that Valid rules out, in key
// order. A trainer run that produces any points at an anomaly in the agent
// (or at a rule of Valid that is wrong).
func (t *Table) Invalid() []Key {
	var out []Key
	for _, k := range t.Keys() {
		if !Valid(k) {
			out = append(out, k)
		}
	}
	return out
}

// Clone returns a deep copy.
func (t *Table) Clone() *Table {
	c := &Table{Provenance: t.Provenance, Entries: make(map[Key]Entry, len(t.Entries))}
	c.Notes = slices.Clone(t.Notes)
	for k, e := range t.Entries {
		c.Entries[k] = e
	}
	return c
}

// OwnMinimumEvents is how many events of a key a run must have seen for
// its own minimum to be trusted; below that, a table's minimum is used
// where lower (see FinalMinimum).
const OwnMinimumEvents = 100

// OwnMinimumExcess bounds how far above a table's minimum a run's own may
// be and still be taken as the key's glue (see FinalMinimum).
const OwnMinimumExcess = 4

// FinalMinimum is the minimum calibration uses for key k at the end of a
// run that saw it runCount times with minimum runMin: the run's own when
// it saw the key often enough, else the lower of the run's and the
// table's (t may be nil). Training exists for keys with too few events
// (the PI paper's §4); for the others the run's own minimum is better,
// because the trainer's tight loops keep caches and branch predictors
// warmer than real code does, so its minima understate a real program's
// glue (by well under OwnMinimumExcess times, measured). A run's minimum
// more than OwnMinimumExcess times the table's is no glue at all: every
// event of the key held real work (JIT-compiled leaves of similar size
// under BCI, each event spanning a whole method body), and removing it
// would remove the work; the table's is used then.
func FinalMinimum(runMin, runCount uint64, t *Table, k Key) uint64 {
	if t == nil {
		return runMin
	}
	e := t.Lookup(k)
	if !e.Seen() {
		return runMin
	}
	if runCount < OwnMinimumEvents || (runMin != Unseen && e.Min < Unseen/OwnMinimumExcess && runMin > OwnMinimumExcess*e.Min) {
		return min(runMin, e.Min)
	}
	return runMin
}
