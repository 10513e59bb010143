package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Sampling measures what the sampling source costs a real program with
// the JIT on: javac compiling java/src with no agent and with SAMPLE at
// two periods, in shuffled interleaved rounds (the differences are a few
// percent, below this machine's drift between runs).
type Sampling struct {
	Rows []*SamplingRow
	// SignalCost is what one perf-timer signal with an empty handler
	// costs a C program here (bench/agents/sigcost.c), µs of thread CPU
	// time, one per pair of runs; SignalErr why it was not measured.
	SignalCost []float64
	SignalErr  string
}

// sigcostPeriod is sigcost's signal period (µs): short, so that the
// signals' cost stands well above the noise of two runs.
const sigcostPeriod = 200

// SamplingRow is one configuration's javac runs.
type SamplingRow struct {
	Config
	Wall, CPU []float64 // s, per run
	Samples   []string  // the header's sampling note of the last run
}

const samplingRounds = 9

func (p *Sampling) Title() string { return "Sampling overhead: javac" }

func (p *Sampling) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if o.JavacRounds == 0 {
		return nil
	}
	p.Rows = []*SamplingRow{
		{Config: Config{Key: "sample-none", Name: "no agent (JIT)"}},
		{Config: Config{Key: "sample-1ms", Name: "libjprof SAMPLE (cpu, 1 ms)", Agent: LibJProf, Options: "SAMPLE"}},
		{Config: Config{Key: "sample-10ms", Name: "libjprof SAMPLE=10ms", Agent: LibJProf, Options: "SAMPLE=10ms"}},
	}
	srcs, err := snapshotSources(filepath.Join(o.Root, "java", "src"), filepath.Join(tmp, "src"))
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, "classes")
	main := append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", out}, srcs...)
	rounds := samplingRounds
	if o.JavacRounds < 2 {
		rounds = 1 // the smoke test
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x73616d70))
	for range rounds {
		order := rng.Perm(len(p.Rows))
		for _, i := range order {
			row := p.Rows[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			dir, err := javacRunDir(tmp, row.Key, out)
			if err != nil {
				return err
			}
			res, err := runJVM(ctx, o.Java, row.run(o, dir, main...), o.Timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", row.Name, err)
			}
			row.Wall = append(row.Wall, res.Wall.Seconds())
			row.CPU = append(row.CPU, res.CPU.Seconds())
			if row.Agent == LibJProf {
				if b, err := os.ReadFile(res.file("rt.1")); err == nil {
					row.Samples = nil
					for _, l := range strings.Split(string(b), "\n") {
						if strings.HasPrefix(l, " Note: Sampled") {
							row.Samples = append(row.Samples, strings.TrimPrefix(l, " Note: "))
						}
					}
				}
			}
			os.RemoveAll(dir)
		}
	}
	iters := 400_000_000
	if rounds == 1 {
		iters /= 8 // the smoke test
	}
	p.measureSignals(ctx, o, rounds, iters)
	return nil
}

// measureSignals runs sigcost without and with its signals, pairs
// interleaved.
func (p *Sampling) measureSignals(ctx context.Context, o *Options, pairs, iters int) {
	bin := filepath.Join(o.Agents, "sigcost")
	run := func(period int) (cpu float64, n int64, err error) {
		out, err := exec.CommandContext(ctx, bin, strconv.Itoa(period), strconv.Itoa(iters)).Output()
		if err != nil {
			return 0, 0, err
		}
		if _, err := fmt.Sscanf(string(out), "cpu %g signals %d", &cpu, &n); err != nil {
			return 0, 0, fmt.Errorf("sigcost: %q: %w", out, err)
		}
		return cpu, n, nil
	}
	for i := 0; i < max(pairs, 3); i++ {
		off, _, err := run(0)
		if err == nil {
			var on float64
			var n int64
			if on, n, err = run(sigcostPeriod); err == nil && n > 0 {
				p.SignalCost = append(p.SignalCost, (on-off)/float64(n)*1e6)
				continue
			}
		}
		p.SignalErr = fmt.Sprint(err)
		return
	}
}

// Overhead is a row's median wall (CPU) time over no agent's, minus one.
func (p *Sampling) Overhead(key string, cpu bool) (float64, bool) {
	row, none := keyed(p.Rows, key), keyed(p.Rows, "sample-none")
	if row == nil || none == nil || len(row.Wall) == 0 || len(none.Wall) == 0 {
		return 0, false
	}
	if cpu {
		return Summarize(row.CPU).Median/Summarize(none.CPU).Median - 1, true
	}
	return Summarize(row.Wall).Median/Summarize(none.Wall).Median - 1, true
}

func (p *Sampling) Markdown(out io.Writer, s *Suite) error {
	if len(p.Rows) == 0 || len(p.Rows[0].Wall) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	fmt.Fprintf(out, "javac compiling java/src (the JIT on: sampling enables no method events), %d shuffled interleaved rounds. "+
		"Wall is the whole JVM; CPU is its user + system time (wait4), which the other core's work disturbs less.\n\n", len(p.Rows[0].Wall))
	fmt.Fprintf(out, "| configuration | agent, options | wall s: median | min–max | + vs no agent | CPU s: median | min–max | + vs no agent |\n|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range p.Rows {
		w, c := Summarize(r.Wall), Summarize(r.CPU)
		dw, dc := "–", "–"
		if x, ok := p.Overhead(r.Key, false); ok && r.Key != "sample-none" {
			dw = fmt.Sprintf("%+.1f%%", 100*x)
		}
		if x, ok := p.Overhead(r.Key, true); ok && r.Key != "sample-none" {
			dc = fmt.Sprintf("%+.1f%%", 100*x)
		}
		fmt.Fprintf(out, "| %s | %s | %.2f | %s | %s | %.2f | %s | %s |\n", r.Name, agentLabel(r.Config),
			w.Median, w.Range("%.2f"), dw, c.Median, c.Range("%.2f"), dc)
	}
	for _, r := range p.Rows {
		for _, n := range r.Samples {
			fmt.Fprintf(out, "\n%s: %s\n", r.Name, n)
		}
	}
	if len(p.SignalCost) > 0 {
		c := Summarize(p.SignalCost)
		fmt.Fprintf(out, "\n**The machine's floor.** `bench/agents/sigcost.c`, a C program with nothing of the agent in it, gets the same "+
			"perf task-clock signal as SAMPLE (SIGPROF to the thread every %d µs of its CPU time) with an empty handler: each signal "+
			"costs it %.1f µs of thread CPU time (median of %d interleaved pairs of runs with and without the signals, %s). Profiled "+
			"system-wide, about half of that is kernel time the guest sees (the timer interrupt, the signal's delivery and return); the "+
			"rest does not show in the guest's profile (on this VM, the hypervisor's timer and interrupt virtualization). At 1 ms, "+
			"that floor alone is %.1f%% of a thread's CPU time, before any stack walk.\n", sigcostPeriod, c.Median, c.N, c.Range("%.1f"),
			100*c.Median/1000)
	} else if p.SignalErr != "" {
		fmt.Fprintf(out, "\nThe signal floor was not measured: %s\n", oneLine(p.SignalErr))
	}
	return nil
}
