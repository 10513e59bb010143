package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// Churn measures what real servers do to a profiler besides calling
// methods: threads that come and go by the thousands (ThreadChurn), and
// class loaders that keep defining new methods (MethodChurn).
type Churn struct {
	Threads     int // thread starts, a few alive at a time
	ThreadRows  []*ChurnRow
	Loaders     int // MethodChurn loaders, 100 methods each
	MethodRows  []*ChurnRow
	ThreadError string
	MethodError string
}

// ChurnRow is one configuration's runs.
type ChurnRow struct {
	Config
	Wall    []float64 // s
	RSS     []float64 // peak, bytes
	Skipped string
	// MethodChurn only: the registry's size and refusals (log-msg), and
	// whether the log-rt names any method "<method-limit-reached>" and
	// says so in its header.
	Methods, Refused int64
	Limited, Stated  bool
}

const churnRounds = 3

func (c *Churn) Title() string { return "Thread and method churn" }

func (c *Churn) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	c.Threads, c.Loaders = o.ChurnThreads, o.ChurnLoaders
	if c.Threads <= 0 {
		c.Threads = 20000
	}
	if c.Loaders <= 0 {
		c.Loaders = 10000
	}
	cp := filepath.Join(o.Root, "build", "java")
	c.ThreadRows = []*ChurnRow{
		{Config: Config{Key: "threads-none", Name: "no agent"}},
		{Config: Config{Key: "threads-idle", Name: "libjprof CALLTREE, not collecting", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE", Idle: true}},
		{Config: Config{Key: "threads-calltree", Name: "libjprof CALLTREE START", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE"}},
		{Config: Config{Key: "threads-rtarcf", Name: "libjprof RTARCF START", Agent: LibJProf, Options: methodEvents + rtarcf}},
	}
	main := []string{"-cp", cp, "ThreadChurn", strconv.Itoa(c.Threads), "4"}
	for range churnRounds {
		for _, row := range c.ThreadRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := c.runOne(ctx, s, tmp, row, main); err != nil {
				row.Skipped = err.Error()
			}
		}
	}
	c.MethodRows = []*ChurnRow{
		{Config: Config{Key: "methods-none", Name: "no agent"}},
		{Config: Config{Key: "methods-calltree", Name: "libjprof CALLTREE START", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE"}},
		{Config: Config{Key: "methods-limit", Name: "libjprof CALLTREE START MAXMETHODS=500000", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE,MAXMETHODS=500000"}},
	}
	main = []string{"-cp", cp, "MethodChurn", strconv.Itoa(c.Loaders)}
	for _, row := range c.MethodRows {
		res, err := c.runOne(ctx, s, tmp, row, main)
		if err != nil {
			row.Skipped = err.Error()
			continue
		}
		if row.Agent == LibJProf {
			if err := row.registry(res); err != nil {
				row.Skipped = err.Error()
			}
		}
	}
	for _, r := range append(append([]*ChurnRow(nil), c.ThreadRows...), c.MethodRows...) {
		if r.Skipped != "" {
			return fmt.Errorf("%s: %s", r.Name, r.Skipped)
		}
	}
	return nil
}

func (c *Churn) runOne(ctx context.Context, s *Suite, tmp string, row *ChurnRow, main []string) (*jvmResult, error) {
	dir, err := os.MkdirTemp(tmp, row.Key+"-")
	if err != nil {
		return nil, err
	}
	res, err := runJVM(ctx, s.Opts.Java, row.run(&s.Opts, dir, main...), s.Opts.Timeout)
	if err != nil {
		return nil, err
	}
	row.Wall = append(row.Wall, res.Wall.Seconds())
	row.RSS = append(row.RSS, float64(res.MaxRSS))
	s.Opts.Logf("  churn %s: %.1fs, %d MB", row.Key, res.Wall.Seconds(), res.MaxRSS>>20)
	return res, nil
}

var registryLine = regexp.MustCompile(`method registry\t.*"methods": (\d+), "limit": \d+, "refused": (\d+)`)

// registry reads the registry's numbers from log-msg and scans the
// log-rt for the overflow name and the header's statement of it.
func (row *ChurnRow) registry(res *jvmResult) error {
	msg, err := os.ReadFile(res.file("msg"))
	if err != nil {
		return err
	}
	m := registryLine.FindSubmatch(msg)
	if m == nil {
		return fmt.Errorf("no method registry line in log-msg")
	}
	row.Methods, _ = strconv.ParseInt(string(m[1]), 10, 64)
	row.Refused, _ = strconv.ParseInt(string(m[2]), 10, 64)
	f, err := os.Open(res.file("rt.1"))
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	row.Limited = bytes.Contains(data, []byte(":<method-limit-reached>\n"))
	row.Stated = bytes.Contains(data, []byte(" Note: Warning: method registry full"))
	return nil
}

func (c *Churn) Markdown(out io.Writer, s *Suite) error {
	if len(c.ThreadRows) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	fmt.Fprintf(out, "**Threads.** `ThreadChurn %d 4`: %d threads started four at a time, each running a three-method tree, "+
		"%d rounds in a fixed order. Peak RSS is the JVM's own high-water mark (GNU time's %%M); *per thread* is the median's difference from no agent "+
		"divided by the thread starts.\n\n", c.Threads, c.Threads, churnRounds)
	none := c.ThreadRows[0]
	fmt.Fprintf(out, "| configuration | agent, options | wall s: median | peak RSS MB: median | min–max | × no agent | bytes per thread |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range c.ThreadRows {
		c.row(out, r, none, float64(c.Threads))
	}
	fmt.Fprintf(out, "\nA thread gets a record at its first collected event only; when it ends, what only it used (its shadow "+
		"stack and lookup tables) is freed, its tree is packed into a few bytes a node as it ends, and freed at the first "+
		"reset after which it can add nothing to a report (`rtdriver end` or `reset`). log-msg gives the first %d ended "+
		"threads a line each and sums the rest in one. Before this (as measured when issue 10 was filed) every thread "+
		"ever started kept ~21 KB: 20,000 threads took 60 → 660 MB not collecting and 966 MB with START.\n\n", 32)

	if len(c.MethodRows) == 0 {
		return nil
	}
	fmt.Fprintf(out, "**Methods.** `MethodChurn %d`: one class of 100 methods defined by %d class loaders, every method "+
		"of every copy called once: %s distinct methods. *Registered* and *refused* are log-msg's method registry line; "+
		"*overflow named* says whether log-rt names methods `<method-limit-reached>`, *stated* whether its header says "+
		"how many lookups the limit refused.\n\n", c.Loaders, c.Loaders, group(float64(c.Loaders*100)))
	fmt.Fprintf(out, "| configuration | wall s | peak RSS MB | registered | refused | overflow named | stated |\n|---|--:|--:|--:|--:|--|--|\n")
	for _, r := range c.MethodRows {
		if r.Skipped != "" {
			fmt.Fprintf(out, "| %s | failed: %s ||||||\n", r.Name, oneLine(r.Skipped))
			continue
		}
		reg, ref, lim, st := "–", "–", "–", "–"
		if r.Agent == LibJProf {
			reg, ref, lim, st = group(float64(r.Methods)), group(float64(r.Refused)), yesNo(r.Limited), yesNo(r.Stated)
		}
		fmt.Fprintf(out, "| %s | %.1f | %.0f | %s | %s | %s | %s |\n", r.Name, Summarize(r.Wall).Median,
			Summarize(r.RSS).Median/(1<<20), reg, ref, lim, st)
	}
	return nil
}

func (c *Churn) row(out io.Writer, r, none *ChurnRow, n float64) {
	if r.Skipped != "" && len(r.RSS) == 0 {
		fmt.Fprintf(out, "| %s | %s | failed: %s |||||\n", r.Name, agentLabel(r.Config), oneLine(r.Skipped))
		return
	}
	rss := Summarize(r.RSS).Scale(1.0 / (1 << 20))
	x, per := "–", "–"
	if r != none && len(none.RSS) > 0 {
		nr := Summarize(none.RSS).Median
		x = fmt.Sprintf("%.2f", Summarize(r.RSS).Median/nr)
		per = fmt.Sprintf("%.0f", (Summarize(r.RSS).Median-nr)/n)
	}
	fmt.Fprintf(out, "| %s | %s | %.1f | %.0f | %s | %s | %s |\n", r.Name, agentLabel(r.Config),
		Summarize(r.Wall).Median, rss.Median, rss.Range("%.0f"), x, per)
}

// ThreadRatio is a thread-churn configuration's median peak RSS over no
// agent's.
func (c *Churn) ThreadRatio(key string) (float64, bool) {
	row, none := keyed(c.ThreadRows, key), keyed(c.ThreadRows, "threads-none")
	if row == nil || none == nil || len(row.RSS) == 0 || len(none.RSS) == 0 {
		return 0, false
	}
	return Summarize(row.RSS).Median / Summarize(none.RSS).Median, true
}

// keyed returns the row of rows whose Config has key, or nil.
func keyed[R interface{ key() string }](rows []R, key string) R {
	for _, r := range rows {
		if r.key() == key {
			return r
		}
	}
	var zero R
	return zero
}

func (c Config) key() string { return c.Key }
