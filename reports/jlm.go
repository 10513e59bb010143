package reports

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The exact lock monitor (JLM, with BCI) counts every monitor that
// instrumented code takes, per site and class of the monitor's object, as
// JProf's Java Lock Monitor did per monitor. The agent writes it as
// log-jlm beside each log-rt: a header, then one line per row, numbers
// first and the site, which may hold spaces, last, then a closing
// " End of log-jlm: N rows" line, as log-rt's, by which a reader tells a
// whole file from one cut at a line boundary (or from an older agent's,
// which has none: JLM.Unended).

// JLMRow is one site and class of monitor.
type JLMRow struct {
	Gets        uint64        // monitors taken
	Recursive   uint64        // of which by a thread that held it already
	Slow        uint64        // of which after blocking (contended)
	Wait        time.Duration // blocked entering, in all
	Hold        time.Duration // held, first entry to last exit, less Object.wait
	ObjectWaits uint64        // Object.wait calls on it
	ObjectWait  time.Duration // their time
	Class       string        // java.lang.Object
	Site        string        // a.B.m (block 1, line 12), a.B.m (synchronized method)
}

// NonRecursive is the takes that acquired the monitor.
func (r JLMRow) NonRecursive() uint64 { return r.Gets - r.Recursive }

// Miss is the share of acquisitions that blocked, in percent (JLM's
// %MISS).
func (r JLMRow) Miss() float64 {
	if r.NonRecursive() == 0 {
		return 0
	}
	return 100 * float64(r.Slow) / float64(r.NonRecursive())
}

// JLMClass writes a class signature as log-jlm names the class
// ("Ljava/lang/Object;" java.lang.Object); anything else stays as it is.
func JLMClass(sig string) string {
	if len(sig) >= 2 && (sig[0] == '[' || sig[0] == 'L' && sig[len(sig)-1] == ';') {
		return typeName(sig, true)
	}
	return sig
}

// JLM is one log-jlm file.
type JLM struct {
	Header []string // " Key=value" lines and notes, as written
	Lost   uint64   // takes not counted (sites past the limit, no memory)
	Rows   []JLMRow
	// Unended: the file has no closing line. Agents before that line
	// wrote none; in a file of a later one, its last rows may be lost
	// (a copy cut short: the agent writes the file whole or not at all).
	Unended bool
}

const (
	jlmColumns = "GETS REC SLOW WAIT_NS HOLD_NS OBJWAITS OBJWAIT_NS CLASS SITE"
	jlmEnd     = " End of log-jlm: "
)

// WriteJLM writes j as log-jlm.
func WriteJLM(w io.Writer, j *JLM) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, " libjprof log-jlm\n")
	for _, h := range j.Header {
		fmt.Fprintf(bw, " %s\n", h)
	}
	fmt.Fprintf(bw, " Lost=%d\n Columns: %s\n\n", j.Lost, jlmColumns)
	for _, r := range j.Rows {
		fmt.Fprintf(bw, "%d %d %d %d %d %d %d %s %s\n", r.Gets, r.Recursive, r.Slow, r.Wait.Nanoseconds(),
			r.Hold.Nanoseconds(), r.ObjectWaits, r.ObjectWait.Nanoseconds(), r.Class, r.Site)
	}
	fmt.Fprintf(bw, "%s%d rows\n", jlmEnd, len(j.Rows))
	return bw.Flush()
}

// ReadJLM reads a log-jlm file.
func ReadJLM(r io.Reader) (*JLM, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	j := &JLM{}
	n := 0
	end := false
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case end:
			return nil, fmt.Errorf("line %d: expected end of file after %q, got %q", n, strings.TrimSpace(jlmEnd)+" N rows", line)
		case n == 1:
			if strings.TrimSpace(line) != "libjprof log-jlm" {
				return nil, fmt.Errorf("not a log-jlm file (its first line is %q)", line)
			}
		case line == "":
		case strings.HasPrefix(line, " Lost="):
			v, err := strconv.ParseUint(strings.TrimPrefix(line, " Lost="), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %q: %v", n, line, err)
			}
			j.Lost = v
		case strings.HasPrefix(line, jlmEnd):
			if want := fmt.Sprintf("%d rows", len(j.Rows)); line[len(jlmEnd):] != want {
				return nil, fmt.Errorf("line %d: expected %q, got %q", n, jlmEnd+want, line)
			}
			end = true
		case strings.HasPrefix(line, " Columns:"):
		case strings.HasPrefix(line, " "):
			j.Header = append(j.Header, line[1:])
		default:
			f := strings.SplitN(line, " ", 9)
			if len(f) != 9 {
				return nil, fmt.Errorf("line %d: want %d fields (%s), got %q", n, 9, jlmColumns, line)
			}
			var v [7]uint64
			for i := range v {
				x, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("line %d: field %d: %v", n, i+1, err)
				}
				v[i] = x
			}
			if v[1] > v[0] || v[2] > v[0] {
				return nil, fmt.Errorf("line %d: more recursive or slow takes than takes", n)
			}
			j.Rows = append(j.Rows, JLMRow{Gets: v[0], Recursive: v[1], Slow: v[2], Wait: time.Duration(v[3]),
				Hold: time.Duration(v[4]), ObjectWaits: v[5], ObjectWait: time.Duration(v[6]), Class: f[7], Site: f[8]})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("empty file: not a log-jlm file")
	}
	j.Unended = !end
	return j, nil
}

// JLMSorts are the orders the JLM report can print its rows in.
var JLMSorts = map[string]func(a, b JLMRow) int{
	"gets": func(a, b JLMRow) int { return cmp.Compare(b.Gets, a.Gets) },
	"slow": func(a, b JLMRow) int { return cmp.Compare(b.Slow, a.Slow) },
	"miss": func(a, b JLMRow) int { return cmp.Compare(b.Miss(), a.Miss()) },
	"hold": func(a, b JLMRow) int { return cmp.Compare(b.Hold, a.Hold) },
	"wait": func(a, b JLMRow) int { return cmp.Compare(b.Wait+b.ObjectWait, a.Wait+a.ObjectWait) },
}

// WriteJLMReport prints j as a table, JProf's JLM report's columns with
// times: %MISS (slow of non-recursive takes), GETS, NONREC, SLOW, REC,
// HOLD (ms) and AVG_HOLD (µs per acquisition), WAIT (blocked entering,
// ms), OBJWAIT (in Object.wait, ms), the class and the site; sorted by
// sortBy (a JLMSorts key), then by site.
func WriteJLMReport(w io.Writer, j *JLM, sortBy string) error {
	less, ok := JLMSorts[sortBy]
	if !ok {
		return fmt.Errorf("unknown sort %q: want gets, slow, miss, hold or wait", sortBy)
	}
	rows := slices.Clone(j.Rows)
	slices.SortStableFunc(rows, func(a, b JLMRow) int {
		if c := less(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.Site, b.Site)
	})
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, " JLM report: monitors taken by instrumented code, by site and class\n")
	for _, h := range j.Header {
		fmt.Fprintf(bw, " %s\n", h)
	}
	if j.Lost > 0 {
		fmt.Fprintf(bw, " Not counted: %d takes (sites past the limit, or no memory)\n", j.Lost)
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
	fmt.Fprintf(bw, "\n %6s %10s %10s %8s %8s %12s %10s %12s %12s  %s\n", "%MISS", "GETS", "NONREC", "SLOW", "REC",
		"HOLD_ms", "AVGHOLD_us", "WAIT_ms", "OBJWAIT_ms", "CLASS  SITE")
	var t JLMRow
	for _, r := range rows {
		avg := 0.0
		if r.NonRecursive() > 0 {
			avg = float64(r.Hold) / 1e3 / float64(r.NonRecursive())
		}
		fmt.Fprintf(bw, " %6.1f %10d %10d %8d %8d %12s %10.2f %12s %12s  %s  %s\n", r.Miss(), r.Gets, r.NonRecursive(),
			r.Slow, r.Recursive, ms(r.Hold), avg, ms(r.Wait), ms(r.ObjectWait), r.Class, r.Site)
		t.Gets += r.Gets
		t.Recursive += r.Recursive
		t.Slow += r.Slow
		t.Hold += r.Hold
		t.Wait += r.Wait
		t.ObjectWait += r.ObjectWait
	}
	fmt.Fprintf(bw, " %6.1f %10d %10d %8d %8d %12s %10s %12s %12s  %s\n", t.Miss(), t.Gets, t.NonRecursive(), t.Slow,
		t.Recursive, ms(t.Hold), "", ms(t.Wait), ms(t.ObjectWait), "Total")
	return bw.Flush()
}
