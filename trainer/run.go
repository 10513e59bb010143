package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/libjprof/libjprof/calibration"
)

// Tool names the trainer in the tables it writes.
const Tool = "libjprof trainer 1"

// Config says how to run the trainer.
type Config struct {
	Java      string // java executable; "java" if empty
	Agent     string // path of libjprof.so; required
	ClassPath string // directory of the compiled Java classes (Trainer, TrainerCases); required
	// LibPath is the directory of libjptrainer.so. Without it the native
	// patterns are skipped and the table lacks most native sequences.
	LibPath string
	Runs    int    // JVM runs under the agent; 3 if 0
	Reps    int    // repetitions of each pattern (Trainer --reps); the trainer's default if 0
	Metric  string // metric to train; "PTT_TIME" if empty
	// Backend forces the PTT backend (the agent's PTT= option); empty lets
	// the agent choose, and the table says what it chose.
	Backend string
	// AgentOptions are extra agent options, appended to the trainer's.
	AgentOptions string
	// SkipEnv leaves Env at the metric's defaults instead of measuring.
	SkipEnv bool
	// EnvRuns is how many JVMs measure the environmental overhead, each
	// pattern taking the median of theirs; 3 if 0. One JVM's figures can
	// sit tens of ns off when the machine's speed drifts during it.
	EnvRuns int
	// WorkDir keeps each run's files (CALOUT table, logs) in
	// WorkDir/run-N; a temporary directory, removed afterwards, if empty.
	WorkDir string
	// Log receives progress lines; nothing is printed if nil.
	Log io.Writer
	// CPUInfo is read for the CPU model; /proc/cpuinfo if empty.
	CPUInfo string
	// Now stamps the table; time.Now if nil.
	Now func() time.Time
}

func (c *Config) defaults() error {
	if c.EnvRuns <= 0 {
		c.EnvRuns = 3
	}
	if c.Java == "" {
		c.Java = "java"
	}
	if c.Agent == "" {
		return errors.New("trainer: no agent library given")
	}
	if c.ClassPath == "" {
		return errors.New("trainer: no class path given")
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if c.Metric == "" {
		c.Metric = "PTT_TIME"
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.CPUInfo == "" {
		c.CPUInfo = "/proc/cpuinfo"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if strings.ContainsAny(c.Metric+c.Backend, ",= ") {
		return fmt.Errorf("trainer: bad metric %q or backend %q", c.Metric, c.Backend)
	}
	return nil
}

// Run trains: it runs the Java trainer under the agent cfg.Runs times,
// merges the tables the agent writes (CALOUT=), measures the environmental
// overhead without the agent unless cfg.SkipEnv (time metric only), fills
// the provenance and returns the table.
func Run(ctx context.Context, cfg Config) (*calibration.Table, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	jvm, err := ReadJVMInfo(ctx, cfg.Java)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "trainer: %s %s (%s), metric %s\n", jvm.Name, jvm.Version, jvm.Arch, cfg.Metric)

	work := cfg.WorkDir
	if work == "" {
		if work, err = os.MkdirTemp("", "libjprof-train-"); err != nil {
			return nil, fmt.Errorf("trainer: %w", err)
		}
		defer os.RemoveAll(work)
	}

	var tables []*calibration.Table
	for i := 1; i <= cfg.Runs; i++ {
		t0 := time.Now()
		tab, err := agentRun(ctx, &cfg, filepath.Join(work, "run-"+strconv.Itoa(i)))
		if err != nil {
			return nil, fmt.Errorf("trainer: run %d of %d: %w", i, cfg.Runs, err)
		}
		seen, _ := Coverage(tab)
		fmt.Fprintf(cfg.Log, "trainer: run %d of %d: %d sequences seen (%d of %d targets), %.1f s\n",
			i, cfg.Runs, len(tab.Entries), seen, len(Targets()), time.Since(t0).Seconds())
		tables = append(tables, tab)
	}
	tab, err := calibration.Merge(tables...)
	if err != nil {
		return nil, fmt.Errorf("trainer: the runs disagree: %w", err)
	}

	if err := fillProvenance(&cfg, tab, jvm); err != nil {
		return nil, err
	}

	if cfg.SkipEnv {
		// Nor the excess (the BCI source's tables): the trainer's short
		// runs make BCI's events mostly from code the JIT has not
		// compiled (24.6M events in 4 s, about 160 ns each), whose
		// jitter is not compiled code's. Measured so (2026-11-29, AMD
		// EPYC, JDK 17), it came out at 30-40 ns for most keys, more
		// than an event's whole cost in compiled code (BENCHMARKS.md).
		tab.Notes = append(tab.Notes, "env: not measured; defaults")
	} else if !strings.EqualFold(cfg.Metric, "PTT_TIME") {
		tab.Notes = append(tab.Notes, fmt.Sprintf("env: measured for time only; %s keeps defaults", cfg.Metric))
	} else {
		pats, err := envRun(ctx, &cfg)
		if err != nil {
			return nil, err
		}
		n := ApplyEnv(tab, pats)
		tab.EnvSource = calibration.EnvTrainer
		tab.Notes = append(tab.Notes, fmt.Sprintf(
			"env: %d call patterns measured without the agent (-Xint), the median of %d JVMs, on %d keys: call y->x on (*,*,y,En,x), exception extra on (*,*,x,Xx,y)",
			len(pats), cfg.EnvRuns, n))
		fmt.Fprintf(cfg.Log, "trainer: env: %d patterns, %d keys\n", len(pats), n)
		// The excess is taken out of what Env keeps: measured with it.
		med, events, err := excessRun(ctx, &cfg, filepath.Join(work, "excess"))
		if err != nil {
			return nil, fmt.Errorf("trainer: excess: %w", err)
		}
		n = ApplyExcess(tab, med)
		tab.Notes = append(tab.Notes, fmt.Sprintf(
			"excess: median clean delta less the minimum, on %d keys with %d or more events in one RAWGEN run (%d events)",
			n, excessMinEvents, events))
		fmt.Fprintf(cfg.Log, "trainer: excess: %d keys from %d events\n", n, events)
	}

	seen, missing := Coverage(tab)
	tab.Notes = append(tab.Notes, fmt.Sprintf("coverage: %d of %d target sequences (types iInNO) seen", seen, seen+len(missing)))
	if z := ZeroMinima(tab); len(z) > 0 {
		// No glue costs nothing: a zero minimum comes from a reading that
		// went backwards (clamped to 0) or a disturbed delta, and leaves
		// the key's overhead in every profile.
		w := fmt.Sprintf("warning: %d target sequences have a minimum of 0 (e.g. %s): the PTT produced empty or backward deltas; calibration removes nothing for them", len(z), z[0])
		tab.Notes = append(tab.Notes, w)
		fmt.Fprintln(cfg.Log, "trainer:", w)
	}
	if bad := tab.Invalid(); len(bad) > 0 {
		tab.Notes = append(tab.Notes, fmt.Sprintf("warning: %d sequences that cannot occur were recorded (agent anomalies?), e.g. %s", len(bad), bad[0]))
	}
	return tab, nil
}

// trainerRun runs the trainer once under the agent, its files in dir,
// with the options every run has and the run's own, and returns its
// output.
func trainerRun(ctx context.Context, cfg *Config, dir string, own ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// CALTABLE=none: each run's minima must come from that run alone, not
	// from a table built into the agent (perhaps by an earlier training).
	// METHODEVENTS: the source trained unless AgentOptions names BCI
	// (the agent takes one source option).
	opts := []string{"METHODEVENTS"}
	for _, o := range strings.Split(cfg.AgentOptions, ",") {
		if strings.EqualFold(strings.TrimSpace(o), "BCI") {
			opts = nil
		}
	}
	opts = append(append(opts, "RTARCF", "START", "NORTDRIVER", "CALTABLE=none", "METRICS="+cfg.Metric), own...)
	opts = append(opts, "LOGPATH="+dir)
	if cfg.Backend != "" {
		opts = append(opts, "PTT="+cfg.Backend)
	}
	if cfg.AgentOptions != "" {
		opts = append(opts, cfg.AgentOptions)
	}
	args := []string{"-agentpath:" + cfg.Agent + "=" + strings.Join(opts, ",")}
	args = append(args, javaArgs(cfg)...)
	if cfg.Reps > 0 {
		args = append(args, "--reps", strconv.Itoa(cfg.Reps))
	}
	out, err := runJava(ctx, cfg.Java, args)
	if err != nil {
		return "", err
	}
	if !strings.Contains(out, "trainer: ok") {
		return "", fmt.Errorf("the trainer did not report success:\n%s", tail(out, 20))
	}
	return out, nil
}

// agentRun runs the trainer once under the agent and reads the table it
// writes at VM death.
func agentRun(ctx context.Context, cfg *Config, dir string) (*calibration.Table, error) {
	calout := filepath.Join(dir, "calout.cal")
	out, err := trainerRun(ctx, cfg, dir, "CALOUT="+calout)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(calout)
	if err != nil {
		return nil, fmt.Errorf("the agent wrote no calibration table (CALOUT=%s): %w\n%s", calout, err, tail(out, 20))
	}
	defer f.Close()
	tables, err := calibration.ParseAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", calout, err)
	}
	for _, t := range tables {
		if strings.EqualFold(t.Metric, cfg.Metric) {
			if t.Runs == 0 {
				t.Runs = 1
			}
			return t, nil
		}
	}
	return nil, fmt.Errorf("%s: no table for metric %s", calout, cfg.Metric)
}

// envRun measures the call patterns without the agent, in cfg.EnvRuns
// JVMs, and returns each pattern's median.
func envRun(ctx context.Context, cfg *Config) ([]EnvPattern, error) {
	args := append([]string{"-Xint"}, javaArgs(cfg)...)
	args = append(args, "--env")
	var runs [][]EnvPattern
	for range max(cfg.EnvRuns, 1) {
		out, err := runJava(ctx, cfg.Java, args)
		if err != nil {
			return nil, fmt.Errorf("trainer: env: %w", err)
		}
		pats, err := ParseEnv(strings.NewReader(out))
		if err != nil {
			return nil, fmt.Errorf("trainer: env: %w", err)
		}
		runs = append(runs, pats)
	}
	return MedianEnv(runs), nil
}

// javaArgs are the JVM arguments and main class shared by both modes.
func javaArgs(cfg *Config) []string {
	var args []string
	if cfg.LibPath != "" {
		args = append(args, "-Djava.library.path="+cfg.LibPath)
	}
	return append(args, "-cp", cfg.ClassPath, "Trainer")
}

// runJava runs java and returns its standard output; on failure the error
// holds the end of both outputs.
func runJava(ctx context.Context, java string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, java, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", java, strings.Join(args, " "), err, tail(stdout.String()+stderr.String(), 20))
	}
	return stdout.String(), nil
}

// fillProvenance completes what the agent's tables leave out. The agent
// knows the JVM, metric and backend it ran with; the trainer adds the
// machine and the date, and checks that the JVM is the one it asked about.
func fillProvenance(cfg *Config, tab *calibration.Table, jvm JVMInfo) error {
	fields := []struct {
		name     string
		dst      *string
		measured string
	}{
		{"jvm", &tab.JVM, jvm.Name},
		{"jvm-version", &tab.JVMVersion, jvm.Version},
		{"arch", &tab.Arch, jvm.Arch},
	}
	for _, f := range fields {
		switch {
		case *f.dst == "":
			*f.dst = f.measured
		case f.measured != "" && *f.dst != f.measured:
			return fmt.Errorf("trainer: the agent ran on %s %q, %s says %q", f.name, *f.dst, cfg.Java, f.measured)
		}
	}
	if tab.Metric == "" {
		tab.Metric = cfg.Metric
	}
	if tab.Backend == "" {
		if cfg.Backend == "" {
			return errors.New("trainer: the agent's tables do not say which PTT backend it used; force one (PTT=) or fix the agent")
		}
		tab.Backend = cfg.Backend
	}
	if cfg.Backend != "" && !strings.EqualFold(tab.Backend, cfg.Backend) {
		return fmt.Errorf("trainer: asked for PTT backend %s, the agent used %s", cfg.Backend, tab.Backend)
	}
	if f, err := os.Open(cfg.CPUInfo); err == nil {
		tab.CPU = CPUModel(f)
		f.Close()
	}
	tab.Date = cfg.Now().UTC().Truncate(time.Second)
	if tab.Tool != "" && tab.Tool != Tool {
		tab.Notes = append(tab.Notes, "minima by "+tab.Tool)
	}
	tab.Tool = Tool
	return nil
}
