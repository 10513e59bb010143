package calibration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ID is a table's identity on one line: JVM, its build, architecture,
// metric, backend, date, runs and PTT reads per event. The agent names the table it calibrated
// with by it in report headers, so that jprof calibrate can take the same
// built-in table (EmbeddedByID) and users can see which JVM build and
// machine the numbers come from.
func (p Provenance) ID() string {
	date := "-"
	if !p.Date.IsZero() {
		date = p.Date.UTC().Format(time.RFC3339)
	}
	id := fmt.Sprintf("jvm=%q version=%s arch=%s metric=%s backend=%s date=%s runs=%d",
		p.JVM, orDash(p.JVMVersion), orDash(p.Arch), orDash(p.Metric), orDash(p.Backend), date, p.Runs)
	if p.Reads != "" {
		// Tables before the field keep the IDs their reports name.
		id += " reads=" + p.Reads
	}
	if p.Clock != "" {
		id += " clock=" + p.Clock
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// EmbeddedByID returns a copy of the built-in table whose ID is id.
func EmbeddedByID(id string) (*Table, bool) {
	ts, err := Embedded()
	if err != nil {
		return nil, false
	}
	return ByID(ts, id)
}

// ByID returns a copy of the table of ts whose ID is id.
func ByID(ts []*Table, id string) (*Table, bool) {
	for _, t := range ts {
		if t.ID() == id {
			return t.Clone(), true
		}
	}
	return nil, false
}

// Where a run's table came from, in its header note.
const (
	FromBuiltIn  = "built-in"
	FromCALTABLE = "CALTABLE"
	FromNone     = "none"
)

const notePrefix = "Calibration table "

// Note is the header line that names the table a metric was calibrated
// with: "Calibration table PTT_TIME: built-in <ID>", "... CALTABLE <ID>
// from <file>", or "... none" (minima from the run alone).
func Note(metric, from string, t *Table, file string) string {
	switch {
	case t == nil || from == FromNone:
		return notePrefix + metric + ": " + FromNone
	case from == FromCALTABLE:
		return notePrefix + metric + ": " + FromCALTABLE + " " + t.ID() + " from " + file
	}
	return notePrefix + metric + ": " + from + " " + t.ID()
}

// TableNote is a parsed Note.
type TableNote struct {
	Metric string
	From   string // FromBuiltIn, FromCALTABLE or FromNone
	ID     string // the table's ID; empty for FromNone
	File   string // the CALTABLE file, for FromCALTABLE
}

// ParseNote reads a Note; ok is false for any other header line.
func ParseNote(line string) (n TableNote, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), notePrefix)
	if !ok {
		return n, false
	}
	n.Metric, rest, ok = strings.Cut(rest, ": ")
	if !ok || n.Metric == "" {
		return n, false
	}
	n.From, rest, _ = strings.Cut(rest, " ")
	switch n.From {
	case FromNone:
		return n, true
	case FromBuiltIn:
		n.ID = rest
	case FromCALTABLE:
		// The ID ends with runs=N: the file follows.
		i := strings.Index(rest, " from ")
		if i < 0 {
			return n, false
		}
		n.ID, n.File = rest[:i], rest[i+len(" from "):]
	default:
		return n, false
	}
	return n, n.ID != ""
}

// Run is what a table must fit: the JVM, metric and PTT backend of a run
// and its per-event path. The agent checks a table against its own run
// with Fits, and names the run in its log-gen header (RunNote) so that
// jprof calibrate -table applies the same check to a table given after
// the run.
type Run struct {
	JVM, JVMVersion, Metric, Backend string
	Path
}

// Fits checks that the table serves run: Matches (JVM, Java feature
// release, metric, backend), then MatchesPath (event source, PTT reads
// per event, clock). The error, a *MismatchError, names the first field
// that differs.
func (t *Table) Fits(run Run) error {
	if err := t.Matches(run.JVM, run.JVMVersion, run.Metric, run.Backend); err != nil {
		return err
	}
	return t.MatchesPath(run.Path)
}

// RunOf is the run a table was made on (the identity Fits checks).
func (t *Table) RunOf() Run {
	return Run{JVM: t.JVM, JVMVersion: t.JVMVersion, Metric: t.Metric, Backend: t.Backend, Path: t.Path()}
}

const runNotePrefix = "Calibration run "

// RunNote is the header line that names a metric's run as Fits checks
// it: `Calibration run PTT_TIME: jvm="OpenJDK 64-Bit Server VM"
// version=17.0.15+6 backend=bpf source=bci reads=1 clock=tsc`.
func RunNote(run Run) string {
	return fmt.Sprintf("%s%s: jvm=%q version=%s backend=%s source=%s reads=%s clock=%s",
		runNotePrefix, run.Metric, run.JVM, orDash(run.JVMVersion), orDash(run.Backend),
		orDash(run.Source), orDash(run.Reads), orDash(run.Clock))
}

// ParseRunNote reads a RunNote; ok is false for any other header line.
func ParseRunNote(line string) (run Run, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), runNotePrefix)
	if !ok {
		return run, false
	}
	run.Metric, rest, ok = strings.Cut(rest, ": ")
	if !ok || run.Metric == "" {
		return run, false
	}
	fields := map[string]*string{
		"jvm": &run.JVM, "version": &run.JVMVersion, "backend": &run.Backend,
		"source": &run.Source, "reads": &run.Reads, "clock": &run.Clock,
	}
	for rest != "" {
		var key string
		key, rest, ok = strings.Cut(rest, "=")
		if !ok || fields[key] == nil {
			return Run{}, false
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return Run{}, false
			}
			val, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			val, rest, _ = strings.Cut(rest, " ")
		}
		rest = strings.TrimPrefix(rest, " ")
		if val == "-" {
			val = ""
		}
		*fields[key] = val
	}
	return run, run.JVM != "" && run.Backend != "" && run.Source != "" && run.Reads != "" && run.Clock != ""
}
