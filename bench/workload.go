package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// Workload runs java/src/BenchWorkload under every configuration in
// interleaved rounds.
type Workload struct {
	Configs []Config // nil: WorkloadConfigs()
	Rows    []*WorkloadRow
	Calls   int64 // calls in the measured phase (events = 2 × Calls)
	// Verified says how the event count was checked against a log-rt.
	Verified string
}

// WorkloadRow is one configuration's measurements.
type WorkloadRow struct {
	Config
	Samples []Sample
	Skipped string   // why the configuration did not run (empty: it did)
	Failed  []string // runs that failed after the first succeeded
	Seen    string   // PTT backend libjprof reported
}

// Sample is one run.
type Sample struct {
	Round   int
	PhaseNs float64 // the measured phase, timed by the program itself (fastest repetition)
	CPUNs   float64 // the main thread's CPU time over it (fastest repetition)
	Wall    time.Duration
	MaxRSS  int64
}

func (w *Workload) Title() string { return "Per-event overhead: BenchWorkload" }

func (w *Workload) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if w.Configs == nil {
		w.Configs = WorkloadConfigs()
	}
	cp := filepath.Join(o.Root, "build", "java")
	if _, err := os.Stat(filepath.Join(cp, "BenchWorkload.class")); err != nil {
		return fmt.Errorf("workload not built (make all): %w", err)
	}
	w.Rows = make([]*WorkloadRow, len(w.Configs))
	for i, c := range w.Configs {
		w.Rows[i] = &WorkloadRow{Config: c}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6a70726f66))
	main := []string{"-cp", cp, "BenchWorkload", strconv.Itoa(o.Ops), strconv.Itoa(o.WarmOps), strconv.Itoa(o.Reps)}
	for round := range o.Rounds {
		order := rng.Perm(len(w.Rows))
		for _, i := range order {
			if err := ctx.Err(); err != nil {
				return err
			}
			row := w.Rows[i]
			if row.Skipped != "" {
				continue
			}
			if err := w.runOne(ctx, s, tmp, row, round, main); err != nil {
				if len(row.Samples) == 0 {
					row.Skipped = err.Error()
					o.Logf("  %s: skipped: %v", row.Key, err)
				} else {
					row.Failed = append(row.Failed, err.Error())
					o.Logf("  %s: run failed: %v", row.Key, err)
				}
			}
		}
		o.Logf("  round %d/%d done", round+1, o.Rounds)
	}
	if w.Calls == 0 {
		return fmt.Errorf("no configuration ran")
	}
	return nil
}

var phaseRE = regexp.MustCompile(`rep=(\d+) calls=(\d+) events=(\d+) ns=(\d+) cpu=(\d+)`)

// parsePhases reads the program's repetition lines and returns the calls
// per repetition and the fastest wall and CPU times: bursts of other work
// on a shared machine lengthen some repetitions and shorten none, so the
// minimum is the run's best estimate (taken separately for each measure).
func parsePhases(out string, reps int) (calls int64, ns, cpu float64, err error) {
	ms := phaseRE.FindAllStringSubmatch(out, -1)
	if len(ms) != reps {
		return 0, 0, 0, fmt.Errorf("%d rep= calls= ns= cpu= lines in the output, want %d: %q", len(ms), reps, tail(out, 2))
	}
	for i, m := range ms {
		c, _ := strconv.ParseInt(m[2], 10, 64)
		n, _ := strconv.ParseFloat(m[4], 64)
		u, _ := strconv.ParseFloat(m[5], 64)
		if i == 0 {
			calls, ns, cpu = c, n, u
			continue
		}
		if c != calls {
			return 0, 0, 0, fmt.Errorf("repetition %d made %d calls, the first %d", i, c, calls)
		}
		ns, cpu = min(ns, n), min(cpu, u)
	}
	return calls, ns, cpu, nil
}

func (w *Workload) runOne(ctx context.Context, s *Suite, tmp string, row *WorkloadRow, round int, main []string) error {
	dir, err := os.MkdirTemp(tmp, row.Key+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	res, err := runJVM(ctx, s.Opts.Java, row.run(&s.Opts, dir, main...), s.Opts.Timeout)
	if err != nil {
		return err
	}
	calls, ns, cpu, err := parsePhases(res.Stdout, s.Opts.Reps)
	if err != nil {
		return err
	}
	if w.Calls != 0 && calls != w.Calls {
		return fmt.Errorf("phase made %d calls, earlier runs %d", calls, w.Calls)
	}
	if row.Agent == LibJProf {
		seen, err := res.backend()
		if err != nil {
			return err
		}
		if row.Backend != "" && seen != row.Backend {
			return fmt.Errorf("asked for PTT backend %s, libjprof chose %s", row.Backend, seen)
		}
		row.Seen = seen
	}
	if row.Key == KeyCallTree && w.Verified == "" {
		if err := w.verify(res, calls, s.Opts.Reps); err != nil {
			return err
		}
	}
	w.Calls = calls
	row.Samples = append(row.Samples, Sample{Round: round, PhaseNs: ns, CPUNs: cpu, Wall: res.Wall, MaxRSS: res.MaxRSS})
	return nil
}

// verify checks the program's own call count against the call tree
// libjprof recorded for the measured phase: the subtree main -> phase
// holds reps × calls.
func (w *Workload) verify(res *jvmResult, calls int64, reps int) error {
	f, err := os.Open(res.file("rt.1"))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	p, err := reports.ParseLogRT(f)
	if err != nil {
		return fmt.Errorf("verify: %s: %w", f.Name(), err)
	}
	phase := p.Thread("main").Path("i:BenchWorkload.main([Ljava/lang/String;)V", "i:BenchWorkload.phase(LBenchWorkload;I)J")
	if phase == nil {
		return fmt.Errorf("verify: no main -> BenchWorkload.phase in %s", f.Name())
	}
	var sum int64
	phase.Walk(func(n *reports.Node, _ int) { sum += int64(n.Calls) })
	if want := int64(reps) * calls; sum != want {
		return fmt.Errorf("verify: log-rt has %d calls under phase, the program says %d × %d", sum, reps, calls)
	}
	w.Verified = fmt.Sprintf("the CALLTREE log-rt's subtree main → BenchWorkload.phase holds exactly %s calls, "+
		"the program's count (%s per repetition × %d)", group(float64(sum)), group(float64(calls)), reps)
	return nil
}

// Row returns the row of the configuration key, or nil.
func (w *Workload) Row(key string) *WorkloadRow {
	for _, r := range w.Rows {
		if r.Key == key {
			return r
		}
	}
	return nil
}

// Events is the number of method events in the measured phase.
func (w *Workload) Events() float64 { return 2 * float64(w.Calls) }

// Measure selects what a Sample's phase is measured in.
type Measure int

const (
	Wall Measure = iota // System.nanoTime around the phase
	CPU                 // the main thread's CPU time over the phase
)

func (m Measure) of(s Sample) float64 {
	if m == CPU {
		return s.CPUNs
	}
	return s.PhaseNs
}

// Phase summarises the row's phase times in ns.
func (r *WorkloadRow) Phase(m Measure) Summary {
	xs := make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		xs[i] = m.of(s)
	}
	return Summarize(xs)
}

// RSS summarises the row's peak RSS in bytes.
func (r *WorkloadRow) RSS() Summary {
	xs := make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		xs[i] = float64(s.MaxRSS)
	}
	return Summarize(xs)
}

// Diff summarises, over the rounds where both ran, (t_a − t_b)/events:
// the ns per event configuration a costs above b. Pairing runs of the
// same round cancels most of the drift of a shared machine's load.
func (w *Workload) Diff(a, b string, m Measure) (Summary, bool) {
	ra, rb := w.Row(a), w.Row(b)
	if ra == nil || rb == nil || ra.Skipped != "" || rb.Skipped != "" || w.Calls == 0 {
		return Summary{}, false
	}
	byRound := map[int]float64{}
	for _, s := range rb.Samples {
		byRound[s.Round] = m.of(s)
	}
	var xs []float64
	for _, s := range ra.Samples {
		if tb, ok := byRound[s.Round]; ok {
			xs = append(xs, (m.of(s)-tb)/w.Events())
		}
	}
	return Summarize(xs), len(xs) > 0
}
