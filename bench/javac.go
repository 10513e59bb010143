package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// Javac runs a real program nobody here wrote, the JDK's javac compiling
// the project's own java/src, with and without the agent.
type Javac struct {
	Configs []Config // nil: JavacConfigs()
	Rows    []*JavacRow
	Args    []string // javac's arguments, for the report (paths shortened)
	Sources int      // .java files compiled (0 with custom JavacArgs)
}

// JavacRow is one configuration's runs.
type JavacRow struct {
	Config
	Runs    []JavacRun
	Skipped string
	Seen    string // PTT backend libjprof reported
}

// JavacRun is one javac run. Events and Nodes are from libjprof's log-rt
// (0 for other configurations).
type JavacRun struct {
	Round  int
	Wall   time.Duration
	MaxRSS int64
	// CompileRSS is the highest RSS sampled up to the moment javac wrote
	// its last class file: the end of the compilation, before VM death
	// and so before libjprof builds and writes its report. 0 when javac
	// wrote no class file (custom JavacArgs).
	CompileRSS int64
	Events     int64 // 2 × the sum of CALLS over all rows
	Nodes      int64 // log-rt rows, thread roots included
	// With GENERIC: the log-gen's size, events and log-msg's writerWaits.
	GenBytes, GenEvents, GenWaits int64
	// With BCI, log-msg's BCI summary: class file hooks that ran the
	// transformer and their time, RetransformClasses calls and theirs.
	BCI *BCISummary
}

// BCISummary is log-msg's "BCI summary" line.
type BCISummary struct {
	Rewritten, Hooks, Retransforms int64
	HookTime, RetransformTime      time.Duration
}

// bciSummary reads the BCI summary of a run's log-msg; nil if none.
func bciSummary(res *jvmResult) *BCISummary {
	b, err := os.ReadFile(res.file("msg"))
	if err != nil {
		return nil
	}
	m := regexp.MustCompile(`"classesRewritten": (\d+).*"transformerCalls": (\d+), "transformerTime": "([^"]+)", "retransformCalls": (\d+), "retransformTime": "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return nil
	}
	n := func(i int) int64 { v, _ := strconv.ParseInt(string(m[i]), 10, 64); return v }
	d := func(i int) time.Duration { v, _ := time.ParseDuration(string(m[i])); return v }
	return &BCISummary{Rewritten: n(1), Hooks: n(2), HookTime: d(3), Retransforms: n(4), RetransformTime: d(5)}
}

func (j *Javac) Title() string { return "Real program: javac" }

func (j *Javac) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if o.JavacRounds == 0 {
		return nil
	}
	if j.Configs == nil {
		j.Configs = JavacConfigs()
	}
	j.Rows = make([]*JavacRow, len(j.Configs))
	for i, c := range j.Configs {
		j.Rows[i] = &JavacRow{Config: c}
	}
	args := o.JavacArgs
	out := filepath.Join(tmp, "classes")
	if args == nil {
		// A snapshot, so that the input is the same in every run even
		// while java/src is being edited.
		srcs, err := snapshotSources(filepath.Join(o.Root, "java", "src"), filepath.Join(tmp, "src"))
		if err != nil {
			return err
		}
		j.Sources = len(srcs)
		args = append([]string{"-d", out}, srcs...)
		j.Args = []string{"-d", "<tmp>", fmt.Sprintf("java/src/*.java (%d files)", len(srcs))}
	} else {
		j.Args = args
	}
	main := append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main"}, args...)
	for _, row := range j.Rows {
		if err := warmBCICache(ctx, o, o.Java, tmp, row.Config, main...); err != nil {
			row.Skipped = err.Error()
		}
	}
	for round := range o.JavacRounds {
		// Rounds are not shuffled: with a handful of long runs, the
		// fixed order costs less than the risk of two agent runs
		// landing together on a busy stretch; pairing is by round.
		for _, row := range j.Rows {
			if err := ctx.Err(); err != nil {
				return err
			}
			if row.Skipped != "" {
				continue
			}
			if err := os.RemoveAll(out); err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			run, err := j.runOne(ctx, s, tmp, row, main, out)
			if err != nil {
				row.Skipped = err.Error()
				o.Logf("  javac %s: %v", row.Key, err)
				continue
			}
			run.Round = round
			row.Runs = append(row.Runs, run)
			o.Logf("  javac %s: %.1fs, %d MB, %d nodes", row.Key, run.Wall.Seconds(), run.MaxRSS>>20, run.Nodes)
		}
	}
	// Unlike the workload's forced PTT backends, nothing here may be
	// missing: a failure is the agent failing on a real program.
	var errs []error
	for _, row := range j.Rows {
		if row.Skipped != "" {
			errs = append(errs, fmt.Errorf("%s: %s", row.Name, row.Skipped))
		}
	}
	return errors.Join(errs...)
}

func (j *Javac) runOne(ctx context.Context, s *Suite, tmp string, row *JavacRow, main []string, out string) (JavacRun, error) {
	dir, err := os.MkdirTemp(tmp, row.Key+"-")
	if err != nil {
		return JavacRun{}, err
	}
	defer os.RemoveAll(dir)
	jr := row.run(&s.Opts, dir, main...)
	var rss compileRSS
	jr.Sample = func(pid int) { rss.sample(pid, out) }
	res, err := runJVM(ctx, s.Opts.Java, jr, s.Opts.Timeout)
	if err != nil {
		return JavacRun{}, err
	}
	run := JavacRun{Wall: res.Wall, MaxRSS: res.MaxRSS, CompileRSS: rss.atLastClass}
	if row.Agent == LibJProf {
		if row.Seen, err = res.backend(); err != nil {
			return run, err
		}
		f, err := os.Open(res.file("rt.1"))
		if os.IsNotExist(err) && strings.Contains(res.Stderr, "nothing collected") {
			return run, nil // e.g. ROOTS on a run that never reaches them
		}
		if err != nil {
			return run, err
		}
		defer f.Close()
		calls, nodes, err := countLogRT(f)
		if err != nil {
			return run, fmt.Errorf("%s: %w", f.Name(), err)
		}
		run.Events, run.Nodes = 2*calls, nodes
		if fi, err := os.Stat(res.file("gen")); err == nil {
			run.GenBytes = fi.Size()
			g, err := os.Open(res.file("gen"))
			if err != nil {
				return run, err
			}
			run.GenEvents, err = countEvents(g)
			g.Close()
			if err != nil {
				return run, fmt.Errorf("log-gen: %w", err)
			}
			run.GenWaits = writerWaits(res)
			os.Remove(res.file("gen"))
		}
		run.BCI = bciSummary(res)
	}
	return run, nil
}

// compileRSS tracks RSS while javac runs, to separate the memory the
// agent holds while collecting from the transient peak of building its
// report at VM death: javac writes its class files at the very end of
// the compilation, so the peak up to the last one written is the
// collection-time peak (to within a sampling interval).
type compileRSS struct {
	peak        int64 // highest RSS sampled so far
	classes     int   // class files seen in the output directory
	atLastClass int64 // peak when the class count last changed
}

func (c *compileRSS) sample(pid int, out string) {
	c.peak = max(c.peak, vmRSS(pid))
	ents, err := os.ReadDir(out)
	if err != nil {
		return
	}
	if n := len(ents); n != c.classes {
		c.classes = n
		c.atLastClass = c.peak
	}
}

// countLogRT sums the CALLS of every node of a log-rt and counts its
// rows (nodes, thread roots included), with the reports package's parser:
// the harness's own memory is not what the benchmark measures.
func countLogRT(r io.Reader) (calls, rows int64, err error) {
	p, err := reports.ParseLogRT(r)
	if err != nil {
		return 0, 0, err
	}
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, _ int) {
			calls += int64(n.Calls)
			rows++
		})
	}
	return calls, rows, nil
}

// snapshotSources copies dir/*.java to dst and returns the copies.
func snapshotSources(dir, dst string) ([]string, error) {
	srcs, err := filepath.Glob(filepath.Join(dir, "*.java"))
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("no .java files in %s", dir)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		p := filepath.Join(dst, filepath.Base(src))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Row returns the row of the configuration key, or nil.
func (j *Javac) Row(key string) *JavacRow {
	for _, r := range j.Rows {
		if r.Key == key {
			return r
		}
	}
	return nil
}

// Wall summarises the row's wall times in seconds.
func (r *JavacRow) Wall() Summary {
	return summarizeRuns(r.Runs, func(x JavacRun) float64 { return x.Wall.Seconds() })
}

// RoundRatio summarises, over the rounds both rows ran, the wall time of
// r divided by that of base in the same round: the machine's speed drifts
// between rounds more than between two runs of one round.
func (r *JavacRow) RoundRatio(base *JavacRow) Summary {
	var x []float64
	for _, a := range r.Runs {
		for _, b := range base.Runs {
			if a.Round == b.Round && b.Wall > 0 {
				x = append(x, a.Wall.Seconds()/b.Wall.Seconds())
			}
		}
	}
	return Summarize(x)
}

// RSS summarises the row's peak RSS in bytes.
func (r *JavacRow) RSS() Summary {
	return summarizeRuns(r.Runs, func(x JavacRun) float64 { return float64(x.MaxRSS) })
}

// CompileRSS summarises the row's RSS at the end of the compilation.
func (r *JavacRow) CompileRSS() Summary {
	return summarizeRuns(r.Runs, func(x JavacRun) float64 { return float64(x.CompileRSS) })
}

// Nodes and Events summarise the libjprof counts (javac is deterministic
// enough that they barely vary; the median is reported).
func (r *JavacRow) Nodes() Summary {
	return summarizeRuns(r.Runs, func(x JavacRun) float64 { return float64(x.Nodes) })
}

func (r *JavacRow) Events() Summary {
	return summarizeRuns(r.Runs, func(x JavacRun) float64 { return float64(x.Events) })
}

func summarizeRuns(runs []JavacRun, f func(JavacRun) float64) Summary {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return Summarize(xs)
}

// BytesPerNode estimates the agent's memory per call-tree node: the
// difference in median RSS (rss selects which) between the libjprof
// configuration key and the configuration base, over key's nodes.
func (j *Javac) BytesPerNode(key, base string, rss func(*JavacRow) Summary) (float64, bool) {
	t, b := j.Row(key), j.Row(base)
	if t == nil || b == nil || len(t.Runs) == 0 || len(b.Runs) == 0 {
		return 0, false
	}
	n := t.Nodes().Median
	rt, rb := rss(t).Median, rss(b).Median
	if n == 0 || rt == 0 || rb == 0 {
		return 0, false
	}
	return (rt - rb) / n, true
}

// Peak and AtCompileEnd select the RSS BytesPerNode compares.
var (
	Peak         = (*JavacRow).RSS
	AtCompileEnd = (*JavacRow).CompileRSS
)
