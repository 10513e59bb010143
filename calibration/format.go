package calibration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// The text format of a table, in the spirit of seed 000 Table 1:
//
//	# libjprof calibration table 1
//	# jvm: OpenJDK 64-Bit Server VM
//	# jvm-version: 17.0.15+6-Debian-1deb12u1
//	# arch: amd64
//	# metric: PTT_TIME
//	# backend: bpf
//	# cpu: Intel(R) Xeon(R) Processor @ 2.50GHz
//	# date: 2026-03-01T10:00:00Z
//	# runs: 3
//	# tool: libjprof trainer 1
//	# env: trainer
//	# note: coverage: 600 of 600 target sequences (types iInNO) seen
//	#
//	# sequence                                 min        env     excess        count
//	interp-En-interp-En-interp                 176         76         40       131524
//	Interp-En-interp-Ex-Interp                 341          0          2        92462
//	Other-En-Native-En-interp                    -         47          0            0
//
// The first line names the format and starts a table; a file may hold
// several tables, each starting with that line (one per metric of a
// multi-metric run). "# key: value" lines give the provenance; fields that
// are empty are left out, note may repeat, the others may not. Other lines
// starting with '#' and blank lines are comments. Every other line is a row
// for one key: the key as Key.String (or in letters), the minimum ("-" when
// unseen, then count must be 0), the environmental overhead, the typical
// excess over the minimum (a column tables written before it was measured
// lack: 0) and the event count, separated by blanks. Rows are written in key order with aligned
// columns; a key may appear once per table.

// formatLine starts every table; the number is the format version.
const formatLine = "# libjprof calibration table 1"

// Provenance field names in the header.
const (
	fJVM     = "jvm"
	fVersion = "jvm-version"
	fArch    = "arch"
	fMetric  = "metric"
	fBackend = "backend"
	fCPU     = "cpu"
	fDate    = "date"
	fRuns    = "runs"
	fTool    = "tool"
	fEnv     = "env"
	fSource  = "source"
	fReads   = "reads"
	fClock   = "clock"
	fNote    = "note"
)

// ParseError is a table syntax error, with the line it is on.
type ParseError struct {
	Line int // 1-based
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("calibration table line %d: %v", e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads a file holding exactly one table.
func Parse(r io.Reader) (*Table, error) {
	ts, err := ParseAll(r)
	if err != nil {
		return nil, err
	}
	if len(ts) != 1 {
		return nil, fmt.Errorf("calibration table: the input holds %d tables, want 1", len(ts))
	}
	return ts[0], nil
}

// ParseAll reads every table of a file, in order.
func ParseAll(r io.Reader) ([]*Table, error) {
	p := parser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return nil, &ParseError{Line: p.line, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("calibration table: reading line %d: %w", p.line+1, err)
	}
	if len(p.tables) == 0 {
		return nil, errors.New("calibration table: no table in the input (no " + strconv.Quote(formatLine) + " line)")
	}
	return p.tables, nil
}

type parser struct {
	line   int
	tables []*Table
	cur    *Table
	seen   map[string]int // provenance field -> line, for duplicates
}

func (p *parser) parseLine(s string) error {
	if strings.TrimSpace(s) == formatLine {
		p.cur = NewTable(Provenance{})
		p.tables = append(p.tables, p.cur)
		p.seen = map[string]int{}
		return nil
	}
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if strings.HasPrefix(s, "# libjprof calibration table") {
		return fmt.Errorf("unsupported format %q (this version reads %q)", s, formatLine)
	}
	if p.cur == nil {
		return fmt.Errorf("expected %q before anything else", formatLine)
	}
	if strings.HasPrefix(s, "#") {
		return p.header(strings.TrimSpace(s[1:]))
	}
	return p.row(s)
}

// header handles a comment line: a provenance field if it names one.
func (p *parser) header(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return nil
	}
	name = strings.TrimSpace(name)
	value = strings.TrimSpace(value)
	pr := &p.cur.Provenance
	var dst *string
	switch name {
	case fJVM:
		dst = &pr.JVM
	case fVersion:
		dst = &pr.JVMVersion
	case fArch:
		dst = &pr.Arch
	case fMetric:
		dst = &pr.Metric
	case fBackend:
		dst = &pr.Backend
	case fCPU:
		dst = &pr.CPU
	case fTool:
		dst = &pr.Tool
	case fEnv:
		dst = &pr.EnvSource
	case fSource:
		dst = &pr.Source
	case fReads:
		dst = &pr.Reads
	case fClock:
		dst = &pr.Clock
	case fNote:
		pr.Notes = append(pr.Notes, value)
		return nil
	case fDate, fRuns:
	default:
		return nil // a comment that happens to hold a colon
	}
	if l, dup := p.seen[name]; dup {
		return fmt.Errorf("%s given twice (first on line %d)", name, l)
	}
	p.seen[name] = p.line
	switch {
	case dst != nil:
		*dst = value
	case name == fDate:
		d, err := time.Parse(time.RFC3339, value)
		if err != nil {
			return fmt.Errorf("date %q: want RFC 3339 like 2026-03-01T10:00:00Z", value)
		}
		pr.Date = d.UTC()
	case name == fRuns:
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("runs %q: want a count", value)
		}
		pr.Runs = n
	}
	return nil
}

func (p *parser) row(s string) error {
	f := strings.Fields(s)
	if len(f) == 4 { // before the excess column
		f = []string{f[0], f[1], f[2], "0", f[3]}
	}
	if len(f) != 5 {
		return fmt.Errorf("row %q: want <sequence> <min> <env> <excess> <count>", s)
	}
	k, err := ParseKey(f[0])
	if err != nil {
		return err
	}
	if _, dup := p.cur.Entries[k]; dup {
		return fmt.Errorf("sequence %s given twice", k)
	}
	var e Entry
	if f[1] == "-" {
		e.Min = Unseen
	} else if e.Min, err = parseCount(f[1]); err != nil || e.Min == Unseen {
		return fmt.Errorf("%s: min %q: want a number below 2^64-1 or -", k, f[1])
	}
	if e.Env, err = parseCount(f[2]); err != nil {
		return fmt.Errorf("%s: env %q: want a number", k, f[2])
	}
	if e.Excess, err = parseCount(f[3]); err != nil {
		return fmt.Errorf("%s: excess %q: want a number", k, f[3])
	}
	if e.Count, err = parseCount(f[4]); err != nil {
		return fmt.Errorf("%s: count %q: want a number", k, f[4])
	}
	if e.Min == Unseen && e.Count != 0 {
		return fmt.Errorf("%s: %d events counted but no minimum", k, e.Count)
	}
	p.cur.Entries[k] = e
	return nil
}

func parseCount(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// Write writes the table in the text format. Provenance values must be one
// line each, without blanks at either end, for the table to read back the
// same; Write refuses a value with a line break.
func (t *Table) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := t.write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteAll writes several tables to one file (one per metric of a run).
func WriteAll(w io.Writer, tables ...*Table) error {
	bw := bufio.NewWriter(w)
	for i, t := range tables {
		if i > 0 {
			bw.WriteString("\n")
		}
		if err := t.write(bw); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (t *Table) write(bw *bufio.Writer) error {
	fields := []struct{ name, value string }{
		{fJVM, t.JVM},
		{fVersion, t.JVMVersion},
		{fArch, t.Arch},
		{fMetric, t.Metric},
		{fBackend, t.Backend},
		{fCPU, t.CPU},
		{fSource, t.Source},
		{fReads, t.Reads},
		{fClock, t.Clock},
	}
	if !t.Date.IsZero() {
		fields = append(fields, struct{ name, value string }{fDate, t.Date.UTC().Format(time.RFC3339)})
	}
	if t.Runs != 0 {
		fields = append(fields, struct{ name, value string }{fRuns, strconv.Itoa(t.Runs)})
	}
	fields = append(fields, []struct{ name, value string }{{fTool, t.Tool}, {fEnv, t.EnvSource}}...)
	for _, n := range t.Notes {
		fields = append(fields, struct{ name, value string }{fNote, n})
	}

	bw.WriteString(formatLine + "\n")
	for _, f := range fields {
		if f.value == "" && f.name != fNote {
			continue
		}
		if strings.ContainsAny(f.value, "\r\n") {
			return fmt.Errorf("calibration table: %s %q has a line break", f.name, f.value)
		}
		fmt.Fprintf(bw, "# %s: %s\n", f.name, f.value)
	}

	keys := t.Keys()
	for _, k := range keys {
		if !k.InRange() {
			return fmt.Errorf("calibration table: key %d out of range", uint16(k))
		}
	}
	// One width for every table, so that tables line up in a diff.
	const width = len("Compiling-Xx-Compiling-Xx-Compiling")
	fmt.Fprintf(bw, "#\n# %-*s %10s %10s %10s %12s\n", width-2, "sequence", "min", "env", "excess", "count")
	for _, k := range keys {
		e := t.Entries[k]
		min := "-"
		if e.Min != Unseen {
			min = strconv.FormatUint(e.Min, 10)
		} else if e.Count != 0 {
			return fmt.Errorf("calibration table: %s has %d events but no minimum", k, e.Count)
		}
		fmt.Fprintf(bw, "%-*s %10s %10d %10d %12d\n", width, k.String(), min, e.Env, e.Excess, e.Count)
	}
	return nil
}
