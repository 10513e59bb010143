package reports

// The log-gen text writer (the format is described in loggen.go).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LogGenWriter streams events in log-gen format. Like csv.Writer it keeps
// the first error, returns it from every later call, and buffers: call
// Flush at the end.
type LogGenWriter struct {
	w     *bufio.Writer
	out   *countWriter // under w
	k     int
	buf   []byte
	err   error
	limit int64 // see Limit; 0: none
}

// ErrSizeLimit is Write's answer to a line that would take the file past
// its Limit; the line is not written, and the writer stays usable.
var ErrSizeLimit = errors.New("log-gen: size limit reached")

// Limit makes Write refuse, with ErrSizeLimit, a line that would make
// the bytes written (Size) more than n: the agent's GENMAX bounds the
// text it writes, a line being ten times its binary record. 0: no limit.
func (lw *LogGenWriter) Limit(n int64) { lw.limit = n }

// NewLogGenWriter writes the header for a process and its metrics, with
// one " Note: " line per note, and returns a writer for the events.
func NewLogGenWriter(w io.Writer, pid int, metrics []Metric, notes ...string) *LogGenWriter {
	out := &countWriter{w: w}
	lw := &LogGenWriter{w: bufio.NewWriterSize(out, 64<<10), out: out, k: len(metrics)}
	fmt.Fprintf(lw.w, "%s\n%s%d\n", logGenTitle, pidPrefix, pid)
	for _, n := range notes {
		fmt.Fprintf(lw.w, "%s%s\n", notePrefix, escapeNote(n))
	}
	names := make([]string, len(metrics))
	for i, m := range metrics {
		if err := checkMetric(m); err != nil {
			lw.err = fmt.Errorf("log-gen: %w", err)
			return lw
		}
		names[i] = m.Name
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	fmt.Fprintf(lw.w, "%s%s\n", unitsPrefix, strings.Join(names, " "))
	for i, m := range metrics {
		fmt.Fprintf(lw.w, "%s\n", metricLine(i+1, m))
	}
	return lw
}

// Write writes one event line.
func (lw *LogGenWriter) Write(ev Event) error {
	if lw.err != nil {
		return lw.err
	}
	if len(ev.Values) != lw.k {
		lw.err = fmt.Errorf("log-gen: event %s %s has %d values for %d metrics", ev.Kind, ev.Name, len(ev.Values), lw.k)
		return lw.err
	}
	if ev.Name == "" || ev.Thread == "" {
		lw.err = fmt.Errorf("log-gen: event %s %q on thread %q: names must not be empty", ev.Kind, ev.Name, ev.Thread)
		return lw.err
	}
	if ev.Kind < Entry || ev.Kind > ExceptionExit {
		lw.err = fmt.Errorf("log-gen: bad event kind %d", int(ev.Kind))
		return lw.err
	}
	b := lw.buf[:0]
	for _, v := range ev.Values {
		if int64(v) < 0 {
			// A calibrated value below its key's overhead (jprof
			// calibrate); a raw one never comes near 2^63.
			b = strconv.AppendInt(b, int64(v), 10)
		} else {
			b = strconv.AppendUint(b, v, 10)
		}
		b = append(b, ' ')
	}
	if ev.HasKey {
		if ev.Unclean {
			b = append(b, 'u')
		} else {
			b = append(b, 's')
		}
		b = strconv.AppendInt(b, int64(ev.Key), 10)
		b = append(b, ' ')
	}
	b = append(b, ev.Kind.String()...)
	b = append(b, ' ')
	b = AppendEscapedToken(b, ev.Name)
	b = append(b, ' ')
	b = AppendEscapedName(b, ev.Thread)
	b = append(b, '\n')
	lw.buf = b
	if lw.limit > 0 && lw.Size()+int64(len(b)) > lw.limit {
		return ErrSizeLimit
	}
	if _, err := lw.w.Write(b); err != nil {
		lw.err = err
	}
	return lw.err
}

// Size is the bytes written so far, buffered ones included.
func (lw *LogGenWriter) Size() int64 { return lw.out.n + int64(lw.w.Buffered()) }

// countWriter counts the bytes written through it (atomicfile.Counter's
// twin: atomicfile's tests import reports, through jvmtest).
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// Truncated ends the file with a truncation line (text as
// LogGenReader.Truncated returns it): a copy of a truncated log-gen
// says it is one, too. Call Flush after it.
func (lw *LogGenWriter) Truncated(text string) error {
	if lw.err != nil {
		return lw.err
	}
	if _, ok := isTruncation([]byte(" *** " + text)); !ok {
		return fmt.Errorf("log-gen: %q is not a truncation line", text)
	}
	_, lw.err = fmt.Fprintf(lw.w, " *** %s\n", text)
	return lw.err
}

// SizeLimited ends the file with a size limit line (text as
// LogGenReader.SizeLimited returns it): the agent's file that reached
// GENMAX, and a copy of one, say how many events they lack. It is
// written whatever the Limit. Call Flush after it.
func (lw *LogGenWriter) SizeLimited(text string) error {
	if lw.err != nil {
		return lw.err
	}
	if _, _, ok := isSizeLimit([]byte(" *** " + text)); !ok {
		return fmt.Errorf("log-gen: %q is not a size limit line", text)
	}
	_, lw.err = fmt.Fprintf(lw.w, " *** %s\n", text)
	return lw.err
}

// Flush writes buffered lines to the underlying writer.
func (lw *LogGenWriter) Flush() error {
	if lw.err != nil {
		return lw.err
	}
	lw.err = lw.w.Flush()
	return lw.err
}
