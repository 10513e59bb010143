package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// A class histogram is the JVM's census of the heap: instances and bytes
// per class, as the diagnostic command GC.class_histogram prints it (jcmd,
// jmap -histo). The agent (rtdriver heap) and jprof heap write it as the
// JVM prints it, after a short header of their own; two of them, taken
// while a program runs, show which classes grew: how Performance
// Inspector's heap dumps were used to find leaks.

// ClassCount is one class's line of a histogram.
type ClassCount struct {
	Class     string // as the JVM names it: java.lang.String, [B, ...
	Module    string // "java.base@17.0.15", "" for the unnamed module
	Instances uint64
	Bytes     uint64
}

// Histogram is one class histogram.
type Histogram struct {
	Header  []string // the lines before the table (the writer's header)
	Classes []ClassCount
	// Instances and Bytes are the table's Total line.
	Instances, Bytes uint64
}

// HeaderValue is the rest of the first header line that starts with
// key, spaces trimmed ("Time=" gives the time jprof heap wrote); "" if
// none does.
func (h *Histogram) HeaderValue(key string) string {
	for _, l := range h.Header {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ReadHistogram reads a class histogram: any header lines, then the JVM's
// table (" num  #instances  #bytes  class name (module)", a rule, one line
// per class, "Total").
func ReadHistogram(r io.Reader) (*Histogram, error) {
	h := &Histogram{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	inTable, total := false, false
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case !inTable:
			if len(f) >= 3 && f[0] == "num" && f[1] == "#instances" {
				inTable = true
				continue
			}
			h.Header = append(h.Header, line)
		case len(f) == 0 || strings.HasPrefix(line, "---"):
		case f[0] == "Total" && len(f) >= 3:
			var err1, err2 error
			h.Instances, err1 = strconv.ParseUint(f[1], 10, 64)
			h.Bytes, err2 = strconv.ParseUint(f[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("histogram line %d: %q: %w", n, line, err)
			}
			total = true
		default:
			if len(f) < 4 || !strings.HasSuffix(f[0], ":") {
				return nil, fmt.Errorf("histogram line %d: %q is not \"num: instances bytes class\"", n, line)
			}
			c := ClassCount{Class: f[3]}
			var err1, err2 error
			c.Instances, err1 = strconv.ParseUint(f[1], 10, 64)
			c.Bytes, err2 = strconv.ParseUint(f[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("histogram line %d: %q: %w", n, line, err)
			}
			if len(f) >= 5 {
				c.Module = strings.Trim(strings.Join(f[4:], " "), "()")
			}
			h.Classes = append(h.Classes, c)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !inTable {
		return nil, errors.New("not a class histogram: no \" num #instances #bytes class name\" table")
	}
	if !total {
		return nil, errors.New("class histogram cut short: no Total line")
	}
	return h, nil
}

// ClassGrowth is one class's change from one histogram to another.
type ClassGrowth struct {
	Class                  string
	Instances0, Instances1 uint64
	Bytes0, Bytes1         uint64
}

// Instances and Bytes are the changes (negative: it shrank).
func (g ClassGrowth) Instances() int64 { return int64(g.Instances1) - int64(g.Instances0) }
func (g ClassGrowth) Bytes() int64     { return int64(g.Bytes1) - int64(g.Bytes0) }

// DiffHistograms lists every class whose count or size changed from a to
// b, the most grown bytes first (ties: by name).
func DiffHistograms(a, b *Histogram) []ClassGrowth {
	by := map[string]*ClassGrowth{}
	var order []string
	get := func(c string) *ClassGrowth {
		g := by[c]
		if g == nil {
			g = &ClassGrowth{Class: c}
			by[c] = g
			order = append(order, c)
		}
		return g
	}
	for _, c := range a.Classes {
		g := get(c.Class)
		g.Instances0 += c.Instances
		g.Bytes0 += c.Bytes
	}
	for _, c := range b.Classes {
		g := get(c.Class)
		g.Instances1 += c.Instances
		g.Bytes1 += c.Bytes
	}
	var out []ClassGrowth
	for _, c := range order {
		if g := by[c]; g.Instances() != 0 || g.Bytes() != 0 {
			out = append(out, *g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes() != out[j].Bytes() {
			return out[i].Bytes() > out[j].Bytes()
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// WriteHeapDiff writes the first n classes of a diff (all for n <= 0) as
// a table, and the totals' change.
func WriteHeapDiff(w io.Writer, a, b *Histogram, diff []ClassGrowth, n int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, " libjprof heapdiff: classes by bytes grown\n\n")
	fmt.Fprintf(bw, "%14s %14s %14s %14s  %s\n", "+bytes", "+instances", "bytes", "instances", "class")
	for i, g := range diff {
		if n > 0 && i >= n {
			fmt.Fprintf(bw, "%14s  (%d more classes changed)\n", "...", len(diff)-n)
			break
		}
		fmt.Fprintf(bw, "%+14d %+14d %14d %14d  %s\n", g.Bytes(), g.Instances(), g.Bytes1, g.Instances1, g.Class)
	}
	fmt.Fprintf(bw, "\n%+14d %+14d %14d %14d  total\n", int64(b.Bytes)-int64(a.Bytes), int64(b.Instances)-int64(a.Instances), b.Bytes, b.Instances)
	return bw.Flush()
}
