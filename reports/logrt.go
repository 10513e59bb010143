package reports

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The log-rt format, in the spirit of JProf's (seed 000, Figure 6):
//
//	 libjprof log-rt
//	 Process_Number_ID=4242
//	 Sequence=1
//	 Interval_Start=2026-11-26T17:20:01.123456789Z vm+1.234567890s
//	 Interval_End=2026-11-26T17:20:05.5Z vm+5.611111111s
//	 Interval_Counts=cumulative-since-start
//	 Note: PTT backend: ebpf
//
//	 Base Values:
//	 : 1 = PTT_TIME (ns, calibrated)
//
//	 Column Labels:
//	 : LV = Level of nesting (Call Depth)
//	 ...
//
//	  LV      CALLS        CEE       BASE      DELTA         DS         IN  NAME
//	   0          0          1         12          0          3          0  0000b718_main
//	   1          1       1000       5000        700          1          2  J:hellop.main([Ljava/lang/String;)V
//	 End of log-rt: 2 rows
//
// Rows are the nodes depth-first, children in order; LV is 0 for a thread
// root. The level is "%4d" and each number "%10d" after one space, so a
// number too wide for its column pushes the rest right instead of being
// cut: the parser splits on spaces, not on fixed offsets. NAME is
// everything after the two spaces that follow the last number, escaped
// with [EscapeName] (a name may hold any bytes, even line breaks; spaces
// inside it stay, "0000b71c_Reference Handler"); notes are escaped
// likewise. Without metrics the columns are
// LV CALLS CEE NAME (CALLTREE mode: no BASE, DELTA, DS or IN); with k>1
// metrics BASE and DELTA become BASE1 DELTA1 ... BASEk DELTAk.
//
// The closing " End of log-rt: N rows" line is not in JProf's format: it
// lets a reader tell a complete file from one cut at a line boundary.
// Nor are the three Interval_ lines (absent in files of older agents):
// the time the counts cover, in wall-clock time and on the monotonic
// clock from the agent's load at VM start, and what they are relative to
// (see [Interval]).

const (
	logRTTitle   = " libjprof log-rt"
	logRTEnd     = " End of log-rt: "
	pidPrefix    = " Process_Number_ID="
	seqPrefix    = " Sequence="
	notePrefix   = " Note: "
	baseValues   = " Base Values:"
	columnLabels = " Column Labels:"
	noMetrics    = " : none (call counts only)"
)

// logRTColumns returns the numeric column names, after LV and before NAME,
// for k metrics.
func logRTColumns(k int) []string {
	cols := []string{"CALLS", "CEE"}
	switch k {
	case 0:
		return cols
	case 1:
		cols = append(cols, "BASE", "DELTA")
	default:
		for i := 1; i <= k; i++ {
			cols = append(cols, fmt.Sprintf("BASE%d", i), fmt.Sprintf("DELTA%d", i))
		}
	}
	return append(cols, "DS", "IN")
}

// logRTLabels returns the Column Labels lines for k metrics.
func logRTLabels(k int) []string {
	l := []string{
		" : LV = Level of nesting (Call Depth)",
		" : CALLS = Calls to this method (Callers)",
		" : CEE = Calls from this method (Callees)",
	}
	switch k {
	case 0:
	case 1:
		l = append(l, " : BASE = Metrics observed", " : DELTA = BASE adjustment due to calibration")
	default:
		for i := 1; i <= k; i++ {
			l = append(l,
				fmt.Sprintf(" : BASE%d = Metrics observed (metric %d)", i, i),
				fmt.Sprintf(" : DELTA%d = BASE%d adjustment due to calibration", i, i))
		}
	}
	if k > 0 {
		l = append(l, " : DS = Dispatches observed", " : IN = Interrupts observed")
	}
	return append(l, " : NAME = Name of Method or Thread")
}

func logRTHeaderRow(k int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%4s", "LV")
	for _, c := range logRTColumns(k) {
		fmt.Fprintf(&b, " %10s", c)
	}
	b.WriteString("  NAME")
	return b.String()
}

// metricLine renders one Base Values entry; parseMetricLine reads it back.
func metricLine(i int, m Metric) string {
	cal := "uncalibrated"
	if m.Calibrated {
		cal = "calibrated"
	}
	return fmt.Sprintf(" : %d = %s (%s, %s)", i, m.Name, m.Unit, cal)
}

func parseMetricLine(line string, i int) (Metric, error) {
	want := fmt.Sprintf(" : %d = ", i)
	rest, ok := strings.CutPrefix(line, want)
	open := strings.LastIndex(rest, " (")
	if !ok || open <= 0 || !strings.HasSuffix(rest, ")") {
		return Metric{}, fmt.Errorf("expected metric %q, got %q", want+"NAME (UNIT, calibrated|uncalibrated)", line)
	}
	m := Metric{Name: rest[:open]}
	unit, cal, ok := strings.Cut(rest[open+2:len(rest)-1], ", ")
	switch {
	case !ok:
		return Metric{}, fmt.Errorf("expected \"(UNIT, calibrated|uncalibrated)\", got %q", line)
	case cal == "calibrated":
		m.Calibrated = true
	case cal == "uncalibrated":
	default:
		return Metric{}, fmt.Errorf("expected calibrated or uncalibrated, got %q", cal)
	}
	m.Unit = unit
	return m, nil
}

// checkMetric rejects metrics whose line could not be read back.
func checkMetric(m Metric) error {
	if m.Name == "" || strings.ContainsAny(m.Name, " \r\n") {
		return fmt.Errorf("metric name %q must be non-empty and have no spaces", m.Name)
	}
	if strings.ContainsAny(m.Unit, ",()\r\n") {
		return fmt.Errorf("metric %s: unit %q must not contain , ( ) or a line break", m.Name, m.Unit)
	}
	return nil
}

// ParseLogRT reads a file written by [WriteLogRT]. Errors name the line
// and what was expected there; a file cut anywhere, even at a line
// boundary, is an error, and so is a row whose CEE does not match the
// calls of its children. A file the agent cut after a write error and
// closed with its truncation line is read up to that line, and
// Profile.Truncated says so.
func ParseLogRT(r io.Reader) (*Profile, error) { return readLogRT(r, parseLogRT) }

// readLogRT runs parse over r's lines; errors name the line.
func readLogRT(r io.Reader, parse func(*lineReader) (*Profile, error)) (*Profile, error) {
	lr := newLineReader(r)
	p, err := parse(lr)
	if err != nil {
		return nil, lr.lineError("log-rt", err)
	}
	return p, nil
}

// ParseLogRTHeader reads a log-rt's header only (the interval, notes,
// metrics), up to its first row, for a caller that needs no tree.
func ParseLogRTHeader(r io.Reader) (*Profile, error) { return readLogRT(r, parseLogRTHeader) }

func parseLogRT(lr *lineReader) (*Profile, error) {
	p, err := parseLogRTHeader(lr)
	if err != nil {
		return nil, err
	}
	if err := parseRows(lr, p); err != nil {
		return nil, err
	}
	lr.n++
	if lr.sc.Scan() {
		last := strconv.Quote(strings.TrimSpace(logRTEnd))
		if p.Truncated != "" {
			last = "the truncation line"
		}
		return nil, fmt.Errorf("expected end of file after %s, got %q", last, lr.sc.Bytes())
	}
	return p, lr.sc.Err()
}

// parseLogRTHeader reads everything before the rows, the column header
// row included.
func parseLogRTHeader(lr *lineReader) (*Profile, error) {
	p := &Profile{}
	if err := lr.expect(logRTTitle); err != nil {
		return nil, fmt.Errorf("not a libjprof log-rt file: %w", err)
	}
	var err error
	if p.PID, err = lr.intField(pidPrefix); err != nil {
		return nil, err
	}
	if p.Seq, err = lr.intField(seqPrefix); err != nil {
		return nil, err
	}
	// The interval (files since it was written), notes, then the blank
	// line before Base Values.
	for {
		line, err := lr.next("a note or a blank line")
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if bytes.HasPrefix(line, []byte(" Interval_")) && p.Interval == nil && len(p.Notes) == 0 {
			if p.Interval, err = parseInterval(lr, line); err != nil {
				return nil, err
			}
			continue
		}
		note, ok := bytes.CutPrefix(line, []byte(notePrefix))
		if !ok {
			return nil, fmt.Errorf("expected %q or a blank line, got %q", notePrefix+"TEXT", line)
		}
		text, err := UnescapeName(string(note))
		if err != nil {
			return nil, fmt.Errorf("note: %w", err)
		}
		p.Notes = append(p.Notes, text)
	}
	if err := lr.expect(baseValues); err != nil {
		return nil, err
	}
	// Metrics, or the explicit "none" line, then a blank line. An empty
	// section is rejected: the writer never produces one.
	for {
		line, err := lr.next("a metric or a blank line")
		if err != nil {
			return nil, err
		}
		if len(line) == 0 && len(p.Metrics) > 0 {
			break
		}
		if string(line) == noMetrics && len(p.Metrics) == 0 {
			if err := lr.expect(""); err != nil {
				return nil, err
			}
			break
		}
		m, err := parseMetricLine(string(line), len(p.Metrics)+1)
		if err != nil {
			if len(p.Metrics) == 0 {
				return nil, fmt.Errorf("%w, or %q", err, noMetrics)
			}
			return nil, err
		}
		p.Metrics = append(p.Metrics, m)
	}
	k := len(p.Metrics)
	if err := lr.expect(columnLabels); err != nil {
		return nil, err
	}
	for _, l := range logRTLabels(k) {
		if err := lr.expect(l); err != nil {
			return nil, err
		}
	}
	if err := lr.expect(""); err != nil {
		return nil, err
	}
	if err := lr.expect(logRTHeaderRow(k)); err != nil {
		return nil, err
	}
	return p, nil
}

func (lr *lineReader) intField(prefix string) (int, error) {
	line, err := lr.next(strconv.Quote(prefix + "N"))
	if err != nil {
		return 0, err
	}
	v, ok := bytes.CutPrefix(line, []byte(prefix))
	if !ok {
		return 0, fmt.Errorf("expected %q, got %q", prefix+"N", line)
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, fmt.Errorf("expected %q: %w", prefix+"N", err)
	}
	return n, nil
}

// openRow is a node whose subtree is still being read, with the CEE its row
// claimed, checked when the subtree ends.
type openRow struct {
	n   *Node
	cee uint64
	row int
}

func parseRows(lr *lineReader, p *Profile) error {
	k := len(p.Metrics)
	labels := logRTColumns(k)
	ncols := len(labels)
	var stack []openRow
	// closeTo ends the subtrees of the nodes at levels >= level.
	closeTo := func(level int) error {
		for len(stack) > level {
			o := stack[len(stack)-1]
			if got := o.n.Callees(); got != o.cee {
				return fmt.Errorf("row at line %d (%s) has CEE %d but its callees were called %d times", o.row, o.n.Name, o.cee, got)
			}
			stack = stack[:len(stack)-1]
		}
		return nil
	}
	rows := 0
	vals := make([]uint64, ncols)
	for {
		line, err := lr.next(fmt.Sprintf("a row or %q", logRTEnd+"N rows"))
		if err != nil {
			return err
		}
		if text, ok := isTruncation(line); ok {
			p.Truncated = text // the open subtrees lost their last rows
			return nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte(logRTEnd)); ok {
			if err := closeTo(0); err != nil {
				return err
			}
			if want := fmt.Sprintf("%d rows", rows); string(rest) != want {
				return fmt.Errorf("expected %q, got %q", logRTEnd+want, line)
			}
			return nil
		}
		level, name, err := parseRow(line, vals, labels)
		if err != nil {
			return err
		}
		if level > len(stack) {
			if len(stack) == 0 {
				return fmt.Errorf("first row has level %d, expected 0 (a thread)", level)
			}
			return fmt.Errorf("level %d follows level %d: a level can grow by at most 1", level, len(stack)-1)
		}
		if err := closeTo(level); err != nil {
			return err
		}
		n := &Node{Name: name, Calls: vals[0]}
		if k > 0 {
			bd := make([]uint64, 2*k)
			n.Base, n.Delta = bd[:k:k], bd[k:]
			for i := range k {
				n.Base[i], n.Delta[i] = vals[2+2*i], vals[3+2*i]
			}
			n.DS, n.IN = vals[2+2*k], vals[3+2*k]
		}
		if level == 0 {
			p.Threads = append(p.Threads, n)
		} else {
			par := stack[level-1].n
			par.Children = append(par.Children, n)
		}
		stack = append(stack, openRow{n: n, cee: vals[1], row: lr.n})
		rows++
	}
}

// parseRow reads "LV v1 ... vn  NAME" into vals (n = len(vals)); labels
// are the columns after LV (logRTColumns), to say which one is bad. A
// row too short is told by its column count; a column that is there but
// not a number (5x0, -1) by its number, label and text, which the count
// of columns would not show.
func parseRow(line []byte, vals []uint64, labels []string) (level int, name string, err error) {
	bad := func() (int, string, error) {
		return 0, "", fmt.Errorf("expected %d columns, got %d", len(vals)+2, len(bytes.Fields(line)))
	}
	i := 0
	// num reads column c (0: LV), by label; ok is false where no column
	// begins (the end of the row).
	num := func(c int, label string) (uint64, bool, error) {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		j := i
		for i < len(line) && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		if i < len(line) && line[i] != ' ' || i == j && i < len(line) {
			// Not a number, or the name where columns are missing.
			k := bytes.IndexByte(line[j:], ' ')
			if k < 0 {
				k = len(line) - j
			}
			if len(bytes.Fields(line)) < len(vals)+2 {
				return 0, false, nil
			}
			return 0, false, fmt.Errorf("column %d (%s): %q is not a number", c+1, label, line[j:j+k])
		}
		if i == j {
			return 0, false, nil
		}
		v, err := strconv.ParseUint(string(line[j:i]), 10, 64)
		if err != nil {
			err = fmt.Errorf("column %d (%s): %w", c+1, label, err)
		}
		return v, true, err
	}
	lv, ok, err := num(0, "LV")
	if err != nil {
		return 0, "", err
	}
	if !ok {
		return bad()
	}
	if lv > 1<<30 {
		return 0, "", fmt.Errorf("bad level %q", line[:i])
	}
	for c := range vals {
		if i == len(line) || line[i] != ' ' {
			return bad()
		}
		label := fmt.Sprint(c + 2)
		if c < len(labels) {
			label = labels[c]
		}
		v, ok, err := num(c+1, label)
		if err != nil {
			return 0, "", err
		}
		if !ok {
			return bad()
		}
		vals[c] = v
	}
	rest, ok := bytes.CutPrefix(line[i:], []byte("  "))
	if !ok || len(rest) == 0 {
		return bad()
	}
	name, err = UnescapeName(string(rest))
	return int(lv), name, err
}
