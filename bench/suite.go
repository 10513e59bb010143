package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Options configure a suite run. Zero values take the defaults of
// (*Options).defaults, sized for `make bench` on a 2-core machine,
// except JavacRounds: 0 skips javac.
type Options struct {
	Root   string // repository top; `make all` must have been run
	Agents string // directory holding empty.so and naive.so
	Java   string // java binary (default "java")
	Go     string // go binary for GoBench (default "go")

	Ops     int // BenchWorkload ops in the measured phase (191 calls each)
	WarmOps int // ops in the warm-up before it (default Ops/4)
	Reps    int // repetitions of the phase per JVM; the fastest counts
	Rounds  int // interleaved rounds of the workload session

	JavacRounds int // rounds of the javac runs; 0 skips them
	// RealRounds is the rounds of the real programs (H2, groovy; default
	// 5, negative skips them); RealSmall runs them on small inputs (the
	// smoke test).
	RealRounds int
	RealSmall  bool
	// SampleJFRRounds is the rounds of the comparison with JFR's CPU-time
	// sampler (default 7; 0 takes the default).
	SampleJFRRounds int
	// RepeatRuns is the runs of each program the repeatability part
	// compares (default 5).
	RepeatRuns int
	// JavacArgs replace the default javac arguments (-d <tmp> and a
	// snapshot of java/src/*.java); the smoke test passes -version.
	JavacArgs []string

	// ChurnThreads and ChurnLoaders size the churn workloads (default
	// 20000 thread starts and 10000 loaders: a million methods).
	ChurnThreads, ChurnLoaders int

	// StressRuns and StressThreads size the thread-end stress run (default
	// 100 runs of 6400 threads per configuration); FallbackJVMs and
	// FallbackRounds the FallbackPairs comparison (default 5 JVMs of each
	// fallback, 20 rounds of work per thread).
	StressRuns, StressThreads    int
	FallbackJVMs, FallbackRounds int

	ReadCostReads int // reads per measurement
	ReadCostReps  int // measurements per backend (median reported)

	// GoBench also runs the reports package's BenchmarkLogGenBuild with
	// `go test` (compiling it takes a while: off in the smoke test).
	GoBench bool

	Seed    uint64        // shuffle seed; 0: from the clock
	Timeout time.Duration // per JVM run
	Logf    func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Java == "" {
		o.Java = "java"
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Agents == "" {
		o.Agents = filepath.Join(o.Root, "build", "bench")
	}
	if o.Ops <= 0 {
		o.Ops = 1500
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.WarmOps <= 0 {
		o.WarmOps = max(o.Ops/4, 1)
	}
	if o.Rounds <= 0 {
		o.Rounds = 11
	}
	if o.JavacRounds < 0 {
		o.JavacRounds = 0
	}
	if o.RealRounds == 0 {
		o.RealRounds = 5
	}
	if o.RepeatRuns <= 0 {
		o.RepeatRuns = 5
	}
	if o.StressRuns <= 0 {
		o.StressRuns = 100
	}
	if o.StressThreads <= 0 {
		o.StressThreads = 6400
	}
	if o.FallbackJVMs <= 0 {
		o.FallbackJVMs = 5
	}
	if o.FallbackRounds <= 0 {
		o.FallbackRounds = 20
	}
	if o.ReadCostReads <= 0 {
		o.ReadCostReads = 2_000_000
	}
	if o.ReadCostReps <= 0 {
		o.ReadCostReps = 5
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	}
}

// A Part is one measured section of the report. To add a measurement
// (the calibration accuracy table, for one), implement Part and add it to
// DefaultParts.
type Part interface {
	Title() string
	// Run measures; tmp is a directory of the part's own, removed after.
	Run(ctx context.Context, s *Suite, tmp string) error
	// Markdown writes the section's body (the title is written for it).
	Markdown(w io.Writer, s *Suite) error
}

// DefaultParts are the sections of BENCHMARKS.md in order.
func DefaultParts() []Part {
	return []Part{&Workload{}, &Javac{}, &Real{}, &Repeat{}, &Sampling{}, &JFR{}, &SampleJFR{}, &SampleAccuracy{}, &Churn{}, &Threads{}, &ReadCost{}, &LogGen{}, &Calibration{}, &Attach{}, &Startup{}, &AllocCost{}, &LockCost{}}
}

// partNames name DefaultParts for SelectParts, in order.
var partNames = []string{"workload", "javac", "real", "repeat", "sampling", "jfr", "jfrsample", "accuracy", "churn", "threads", "readcost", "loggen", "calibration", "attach", "startup", "alloc", "lock"}

// PartNames are the names SelectParts takes.
func PartNames() []string { return append([]string(nil), partNames...) }

// SelectParts returns the default parts named in a comma-separated list
// (all of them for ""), in report order.
func SelectParts(list string) ([]Part, error) {
	all := DefaultParts()
	if list == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(partNames, n) {
			return nil, fmt.Errorf("unknown part %q: want some of %s", n, strings.Join(partNames, ","))
		}
		want[n] = true
	}
	var out []Part
	for i, p := range all {
		if want[partNames[i]] {
			out = append(out, p)
		}
	}
	return out, nil
}

// Suite is one run of the benchmark: options, machine, parts and their
// errors.
type Suite struct {
	Opts     Options
	Machine  Machine
	Parts    []Part
	Errs     map[Part]error // a failed part keeps its section, with the error
	Started  time.Time
	Finished time.Time
}

// Run measures every part in turn. A part that fails does not stop the
// others; the joined errors are returned with the suite, whose report
// shows what was measured and what failed.
func Run(ctx context.Context, opts Options, parts []Part) (*Suite, error) {
	if opts.Root == "" {
		return nil, errors.New("bench: Options.Root is not set")
	}
	opts.defaults()
	// The JVMs run in temporary directories: -agentpath and -cp must
	// not be relative.
	for _, p := range []*string{&opts.Root, &opts.Agents} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		*p = abs
	}
	s := &Suite{Opts: opts, Parts: parts, Errs: map[Part]error{}, Started: time.Now()}
	s.Machine = probeMachine(ctx, opts.Java)
	s.Machine.LoadBefore = loadAvg()
	tmp, err := os.MkdirTemp("", "jprof-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(tmp)

	var errs []error
	for i, p := range parts {
		dir := filepath.Join(tmp, fmt.Sprintf("part%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		opts.Logf("%s", p.Title())
		if err := p.Run(ctx, s, dir); err != nil {
			err = fmt.Errorf("%s: %w", p.Title(), err)
			s.Errs[p] = err
			errs = append(errs, err)
			opts.Logf("%v", err)
		}
		os.RemoveAll(dir) // the logs of a big run are hundreds of MB
		if ctx.Err() != nil {
			break
		}
	}
	s.Machine.LoadAfter = loadAvg()
	s.Finished = time.Now()
	return s, errors.Join(errs...)
}

// part returns the suite's first part of type T, or nil.
func part[T Part](s *Suite) T {
	for _, p := range s.Parts {
		if t, ok := p.(T); ok {
			return t
		}
	}
	var zero T
	return zero
}
