package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// LogGen measures post-processing: parsing a log-gen and building its
// call tree (reports.BuildProfile), on one core.
type LogGen struct {
	// A real log-gen: BenchWorkload under RTARCF,GENERIC.
	Events   int64
	Bytes    int64
	Nodes    int
	Wall     []time.Duration // one per repetition
	CPU      []time.Duration
	BuildErr string

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

func (l *LogGen) Title() string { return "log-gen parse and tree build" }

func (l *LogGen) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	c := Config{Key: "loggen", Agent: LibJProf, Options: rtarcf + ",GENERIC"}
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
	l.Bytes = int64(len(data))
	l.Events = countEvents(data)
	if err := l.build(data); err != nil {
		return err
	}
	if o.GoBench {
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
func (l *LogGen) build(data []byte) error {
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

// countEvents counts event lines: header lines start with a space.
func countEvents(data []byte) int64 {
	var n int64
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > 0 && line[0] != ' ' {
			n++
		}
	}
	return n
}

// Rates returns events per wall second and per CPU second, one per
// repetition.
func (l *LogGen) Rates() (wall, cpu []float64) {
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
