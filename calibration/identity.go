package calibration

import (
	"fmt"
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
