package reports

// The log-rt writer (the format is described in logrt.go).

import (
	"bytes"
	"fmt"
	"io"
	"slices"
)

// WriteLogRT writes p in log-rt format. A Base or Delta slice shorter than
// p.Metrics is written as zeros; without metrics DS and IN are not
// written. Names and notes may hold any bytes (see [EscapeName]); names
// must not be empty, else the write fails with an error that says which
// node is at fault.
func WriteLogRT(w io.Writer, p *Profile) error {
	lw, err := NewLogRTWriter(w, p)
	if err != nil {
		return err
	}
	err = preorder(p.Threads, func(n *Node, level int) error {
		return lw.Row(Row{Level: level, Calls: n.Calls, Callees: n.Callees(), Base: n.Base, Delta: n.Delta,
			DS: n.DS, IN: n.IN, Name: n.Name})
	})
	if err != nil {
		return err
	}
	return lw.Close()
}

// Row is one row of a log-rt: a node at a level of its thread's tree,
// with the calls of its children (CEE).
type Row struct {
	Level          int
	Calls, Callees uint64
	Base, Delta    []uint64
	DS, IN         uint64
	Name           string
	// Escaped says Name is written as it is, already escaped (EscapeName):
	// a writer of millions of rows escapes each method's name once.
	Escaped bool
}

// LogRTWriter streams a log-rt row by row, depth-first, so that a writer
// of a large tree need not build a Profile of it first. It formats into
// one reused chunk, handed to the underlying writer whenever it fills.
type LogRTWriter struct {
	w    io.Writer
	k    int
	buf  []byte
	rows int
	n    int64 // bytes handed to w
}

// NewLogRTWriter starts a log-rt with the header of p (its threads are
// ignored) and returns a writer for the rows.
func NewLogRTWriter(w io.Writer, p *Profile) (*LogRTWriter, error) {
	k := len(p.Metrics)
	hb := bytes.NewBuffer(make([]byte, 0, rowChunk+4<<10))
	fmt.Fprintf(hb, "%s\n%s%d\n%s%d\n", logRTTitle, pidPrefix, p.PID, seqPrefix, p.Seq)
	if iv := p.Interval; iv != nil {
		fmt.Fprintf(hb, "%s%s\n%s%s\n%s%s\n", intervalStart, intervalTime(iv.Start, iv.StartVM),
			intervalEnd, intervalTime(iv.End, iv.EndVM), intervalCounts, iv.Counts)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(hb, "%s%s\n", notePrefix, escapeNote(n))
	}
	fmt.Fprintf(hb, "\n%s\n", baseValues)
	if k == 0 {
		fmt.Fprintf(hb, "%s\n", noMetrics)
	}
	for i, m := range p.Metrics {
		if err := checkMetric(m); err != nil {
			return nil, fmt.Errorf("log-rt: %w", err)
		}
		fmt.Fprintf(hb, "%s\n", metricLine(i+1, m))
	}
	fmt.Fprintf(hb, "\n%s\n", columnLabels)
	for _, l := range logRTLabels(k) {
		fmt.Fprintf(hb, "%s\n", l)
	}
	fmt.Fprintf(hb, "\n%s\n", logRTHeaderRow(k))
	return &LogRTWriter{w: w, k: k, buf: hb.Bytes()}, nil
}

// Row writes one row (into the chunk: a profile can have millions).
func (lw *LogRTWriter) Row(r Row) error {
	b, err := appendRow(lw.buf, lw.k, r)
	if err != nil {
		return err
	}
	lw.buf = b
	lw.rows++
	if len(b) >= rowChunk {
		return lw.flush()
	}
	return nil
}

// appendRow appends r as a log-rt row for k metrics.
func appendRow(b []byte, k int, r Row) ([]byte, error) {
	if r.Name == "" {
		return b, fmt.Errorf("log-rt: node with an empty name at level %d", r.Level)
	}
	if len(r.Base) > k || len(r.Delta) > k {
		return b, fmt.Errorf("log-rt: node %q has %d base and %d delta values for %d metrics", r.Name, len(r.Base), len(r.Delta), k)
	}
	b = padUint(b, uint64(r.Level), 4)
	b = padUint(append(b, ' '), r.Calls, 10)
	b = padUint(append(b, ' '), r.Callees, 10)
	if k > 0 {
		for i := range k {
			b = padUint(append(b, ' '), at0(r.Base, i), 10)
			b = padUint(append(b, ' '), at0(r.Delta, i), 10)
		}
		b = padUint(append(b, ' '), r.DS, 10)
		b = padUint(append(b, ' '), r.IN, 10)
	}
	b = append(b, "  "...)
	if r.Escaped {
		b = append(b, r.Name...)
	} else {
		b = AppendEscapedName(b, r.Name)
	}
	return append(b, '\n'), nil
}

// rowChunk is how many bytes of rows go to the writer at once.
const rowChunk = 64 << 10

func (lw *LogRTWriter) flush() error {
	n, err := lw.w.Write(lw.buf)
	lw.n += int64(n)
	lw.buf = lw.buf[:0]
	return err
}

// Size is the bytes of the header and the rows so far, buffered ones
// included: a writer that can cut its file after a write error marks
// whole rows with it (see Rows).
func (lw *LogRTWriter) Size() int64 { return lw.n + int64(len(lw.buf)) }

// Rows is how many rows were written so far.
func (lw *LogRTWriter) Rows() int { return lw.rows }

// Close writes the end line and what is left of the chunk.
func (lw *LogRTWriter) Close() error {
	lw.buf = fmt.Appendf(lw.buf, "%s%d rows\n", logRTEnd, lw.rows)
	return lw.flush()
}

// padUint appends v right-aligned in width columns (wider when it needs
// more digits), writing the digits in place from the right.
func padUint(b []byte, v uint64, width int) []byte {
	n := 1
	for x := v; x >= 10; x /= 10 {
		n++
	}
	w := max(width, n)
	l := len(b)
	b = slices.Grow(b, w)[:l+w]
	for i := l; i < l+w-n; i++ {
		b[i] = ' '
	}
	for i := l + w - 1; i >= l+w-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}
