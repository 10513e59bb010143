package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// LogGen measures log-gen's size and post-processing: parsing a log-gen
// and building its call tree (reports.BuildProfile), on one core, for
// the compact binary format the agent writes by default and for JProf's
// text format.
type LogGen struct {
	// Inputs are real log-gens of BenchWorkload under RTARCF,GENERIC:
	// binary first, then text.
	Inputs []*LogGenInput

	// The reports package's BenchmarkLogGenBuild (synthetic traces),
	// when Options.GoBench is set.
	GoBench    []GoBenchResult
	GoBenchErr string
}

// GoBenchResult is one line of `go test -bench` output.
type GoBenchResult struct {
	Name    string
	Metrics map[string]float64 // by unit: "ns/op", "events/s", ...
}

const (
	logGenReps   = 5
	goBenchCount = 3
)

// LogGenInput is one real log-gen and its build timings.
type LogGenInput struct {
	Format string // GENFORMAT
	Events int64
	Bytes  int64
	Nodes  int
	Wall   []time.Duration // one per repetition
	CPU    []time.Duration
	// WriterWaits is how many times a Java thread waited for the
	// agent's log-gen writer (log-msg's writerWaits).
	WriterWaits int64
}

func (l *LogGen) Title() string { return "log-gen size, parse and tree build" }

func (l *LogGen) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	for _, format := range []string{"binary", "text"} {
		c := Config{Key: "loggen-" + format, Agent: LibJProf, Options: methodEvents + rtarcf + ",GENERIC,GENFORMAT=" + format}
		main := []string{"-cp", filepath.Join(o.Root, "build", "java"), "BenchWorkload", strconv.Itoa(o.Ops), strconv.Itoa(o.WarmOps), strconv.Itoa(o.Reps)}
		res, err := runJVM(ctx, o.Java, c.run(o, tmp, main...), o.Timeout)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(res.file("gen"))
		if err != nil {
			return fmt.Errorf("log-gen: %w", err)
		}
		os.Remove(res.file("gen")) // in memory now; the disk copy can be big
		in := &LogGenInput{Format: format, Bytes: int64(len(data))}
		if in.Events, err = countEvents(bytes.NewReader(data)); err != nil {
			return err
		}
		in.WriterWaits = writerWaits(res)
		if err := in.build(data); err != nil {
			return err
		}
		l.Inputs = append(l.Inputs, in)
	}
	if o.GoBench {
		var err error
		l.GoBench, err = goBench(ctx, o)
		if err != nil {
			l.GoBenchErr = err.Error()
			return err
		}
	}
	return nil
}

// build times reports.BuildProfile over data, in memory, with GOMAXPROCS
// at 1 so that the collector shares the one core with the parser: the
// target is a rate on one core.
func (l *LogGenInput) build(data []byte) error {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range logGenReps {
		runtime.GC()
		cpu0, t0 := cpuTime(), time.Now()
		p, err := reports.BuildProfile(bytes.NewReader(data))
		wall, cpu := time.Since(t0), cpuTime()-cpu0
		if err != nil {
			return fmt.Errorf("BuildProfile: %w", err)
		}
		l.Wall = append(l.Wall, wall)
		l.CPU = append(l.CPU, cpu)
		l.Nodes = 0
		for _, th := range p.Threads {
			th.Walk(func(*reports.Node, int) { l.Nodes++ })
		}
	}
	return nil
}

// countEvents counts a log-gen's events (either format) with the
// reports package's reader.
func countEvents(in io.Reader) (int64, error) {
	r, err := reports.NewLogGenReader(in)
	if err != nil {
		return 0, err
	}
	var n int64
	for r.Next() {
		n++
	}
	return n, r.Err()
}

// writerWaits reads log-msg's writerWaits of a run, -1 if absent.
func writerWaits(res *jvmResult) int64 {
	b, err := os.ReadFile(res.file("msg"))
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`"writerWaits": (\d+)`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// Rates returns events per wall second and per CPU second, one per
// repetition.
func (l *LogGenInput) Rates() (wall, cpu []float64) {
	for i := range l.Wall {
		wall = append(wall, float64(l.Events)/l.Wall[i].Seconds())
		if l.CPU[i] > 0 {
			cpu = append(cpu, float64(l.Events)/l.CPU[i].Seconds())
		}
	}
	return wall, cpu
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// goBench runs the reports package's BenchmarkLogGenBuild on one CPU.
func goBench(ctx context.Context, o *Options) ([]GoBenchResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.Go, "test", "-run", "^$", "-bench", "^BenchmarkLogGenBuild$",
		"-cpu", "1", "-benchtime", "5x", "-count", strconv.Itoa(goBenchCount), "./reports/")
	cmd.Dir = o.Root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench BenchmarkLogGenBuild: %w: %s", err, tail(string(out), 5))
	}
	res := bestGoBench(parseGoBench(string(out)), "events/cpu-s")
	if len(res) == 0 {
		return nil, fmt.Errorf("go test -bench BenchmarkLogGenBuild: no results in %q", tail(string(out), 5))
	}
	return res, nil
}

// bestGoBench keeps, for each benchmark name, the line with the highest
// value of unit (in first-seen order of names).
func bestGoBench(rs []GoBenchResult, unit string) []GoBenchResult {
	var out []GoBenchResult
	at := map[string]int{}
	for _, r := range rs {
		i, ok := at[r.Name]
		switch {
		case !ok:
			at[r.Name] = len(out)
			out = append(out, r)
		case r.Metrics[unit] > out[i].Metrics[unit]:
			out[i] = r
		}
	}
	return out
}

// parseGoBench reads benchmark lines: name, iterations, then value-unit
// pairs.
func parseGoBench(out string) []GoBenchResult {
	var res []GoBenchResult
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		r := GoBenchResult{Name: f[0], Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				break
			}
			r.Metrics[f[i+1]] = v
		}
		res = append(res, r)
	}
	return res
}
