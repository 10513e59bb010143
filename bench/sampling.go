package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sampling measures what the sampling source costs real programs with
// the JIT on: javac compiling java/src, and ParJavac (two javac threads
// at once, a multi-threaded program), with no agent and with SAMPLE at
// two periods, in shuffled interleaved rounds (the differences are a few
// percent, below this machine's drift between runs). Then it runs the
// stress workload (thread churn, GC, deoptimization, class unloading)
// many times in a row with sampling at 10 kHz, checking each run.
type Sampling struct {
	Rows []*SamplingRow
	// SignalCost is what one overflow of a perf task-clock event costs
	// a C program here (bench/agents/sigcost.c), with an empty handler,
	// µs of thread CPU time, one per run, by loop and signal:
	// "cpu/none", "cpu/prof", "cpu/trap", "mem/..." (sigcostModes);
	// SignalErr why it was not measured.
	SignalCost map[string][]float64
	SignalErr  string
	Stress     SamplingStress
}

// sigcostPeriod is sigcost's signal period (µs): SAMPLE's default.
const sigcostPeriod = 1000

// sigcostModes are how sigcost's event signals: not at all (the timer's
// interrupts alone), SIGPROF through fasync (an interrupt of its own),
// and perf's SIGTRAP (SAMPLE's, where the kernel has it); sigcostWork
// its loops.
var sigcostModes, sigcostWork = []string{"none", "prof", "trap"}, []string{"cpu", "mem"}

// The programs sampled.
const (
	sampleJavac     = "javac"
	sampleParJavac  = "ParJavac"
	sampleGCHeavy   = "GCHeavy"
	parJavacThreads = 2
)

// SamplingRow is one configuration's runs of one program.
type SamplingRow struct {
	Config
	Program   string
	Wall, CPU []float64 // s, per run, one per round
	Samples   []string  // the header's sampling note of the last run
	// Coverage is, per run, the time the samples stand for as a share
	// of the process's CPU time while sampling (the header's note), %.
	Coverage []float64
	// Unwalked and Recovered are, per run, the Java threads' samples
	// whose stack could not be walked (any pseudo-frame of
	// AsyncGetCallTrace's failures but <no_Java_frame>), and those a
	// recovery walked after AsyncGetCallTrace failed (recoveryRes), %
	// (log-msg).
	Unwalked, Recovered []float64
}

var summaryRe = regexp.MustCompile(`sampling summary\s.*"samples": (\d+).*"notWalkable": \{([^}]*)\}.*"jvmSamples": (\d+)`)

// recoveryRes read the sampling summary's counts of stacks a recovery
// walked after AsyncGetCallTrace failed: from the caller of the top
// frame, from a filled-in last Java frame, from a runtime stub's caller,
// and by the VM just after the sample.
var recoveryRes = func() []*regexp.Regexp {
	var rs []*regexp.Regexp
	for _, k := range []string{"walkedFromCaller", "walkedFromAnchor", "walkedPastStub", "walkedAfterSample"} {
		rs = append(rs, regexp.MustCompile(`sampling summary\s.*"`+k+`": (\d+)`))
	}
	return rs
}()

// walkShares reads log-msg's sampling summary: the shares of the Java
// threads' samples not walked and walked by a recovery, %.
func walkShares(msg string) (unwalked, recovered float64, ok bool) {
	m := summaryRe.FindStringSubmatch(msg)
	if m == nil {
		return 0, 0, false
	}
	samples, _ := strconv.ParseFloat(m[1], 64)
	jvm, _ := strconv.ParseFloat(m[3], 64)
	var rec float64
	for _, re := range recoveryRes {
		if r := re.FindStringSubmatch(msg); r != nil {
			n, _ := strconv.ParseFloat(r[1], 64)
			rec += n
		}
	}
	var failed float64
	for _, kv := range strings.Split(m[2], ",") {
		k, v, found := strings.Cut(kv, ":")
		if !found || strings.Contains(k, "<no_Java_frame>") {
			continue
		}
		n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		failed += n
	}
	java := samples - jvm
	if java <= 0 {
		return 0, 0, false
	}
	return 100 * failed / java, 100 * rec / java, true
}

var coverageRe = regexp.MustCompile(`Process CPU time while sampling: \d+ ms; the samples stand for \d+ ms \(([\d.]+)%\)`)

// SamplingStress is the stress runs' outcome.
type SamplingStress struct {
	Options  string
	Args     []string
	Runs     int
	Passed   int
	Failures []string  // one line per failed run
	Wall     []float64 // s, per passed run
	Samples  []float64 // samples per passed run
	Elapsed  time.Duration
}

const (
	samplingRounds = 9
	stressRuns     = 100
	stressOptions  = "SAMPLE=100us,START"
)

var stressArgs = []string{"120", "4"}

func (p *Sampling) Title() string { return "Sampling overhead and stress" }

func (p *Sampling) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if o.JavacRounds == 0 {
		return nil
	}
	for _, prog := range []string{sampleJavac, sampleParJavac, sampleGCHeavy} {
		p.Rows = append(p.Rows,
			&SamplingRow{Program: prog, Config: Config{Key: prog + "-none", Name: "no agent (JIT)"}},
			&SamplingRow{Program: prog, Config: Config{Key: prog + "-1ms", Name: "libjprof SAMPLE (cpu, 1 ms)", Agent: LibJProf, Options: "SAMPLE"}},
			&SamplingRow{Program: prog, Config: Config{Key: prog + "-10ms", Name: "libjprof SAMPLE=10ms", Agent: LibJProf, Options: "SAMPLE=10ms"}})
	}
	mains, out, err := sampledPrograms(o, tmp)
	if err != nil {
		return err
	}
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
			res, err := runJVM(ctx, o.Java, row.run(o, dir, mains[row.Program]...), o.Timeout)
			if err != nil {
				return fmt.Errorf("%s %s: %w", row.Program, row.Name, err)
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
						if m := coverageRe.FindStringSubmatch(l); m != nil {
							v, _ := strconv.ParseFloat(m[1], 64)
							row.Coverage = append(row.Coverage, v)
						}
					}
				}
				if b, err := os.ReadFile(res.file("msg")); err == nil {
					if u, r, ok := walkShares(string(b)); ok {
						row.Unwalked = append(row.Unwalked, u)
						row.Recovered = append(row.Recovered, r)
					}
				}
			}
			os.RemoveAll(dir)
		}
	}
	phases := 200 // of 20 ms
	if rounds == 1 {
		phases = 10 // the smoke test
	}
	p.measureSignals(ctx, o, rounds, phases)
	runs := stressRuns
	if rounds == 1 {
		runs = 2
	}
	return p.runStress(ctx, o, tmp, runs)
}

// sampledPrograms are the programs the sampling parts run, by name (the
// arguments after java's own), and javac's output directory.
func sampledPrograms(o *Options, tmp string) (map[string][]string, string, error) {
	srcs, err := snapshotSources(filepath.Join(o.Root, "java", "src"), filepath.Join(tmp, "src"))
	if err != nil {
		return nil, "", err
	}
	out := filepath.Join(tmp, "classes")
	cp := filepath.Join(o.Root, "build", "java")
	return map[string][]string{
		sampleJavac:    append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", out}, srcs...),
		sampleParJavac: append([]string{"-cp", cp, "ParJavac", strconv.Itoa(parJavacThreads), out}, srcs...),
		sampleGCHeavy:  {"-Xmx48m", "-XX:+UseParallelGC", "-cp", cp, "GCHeavy", "1500", "2"},
	}, out, nil
}

// runStress runs SampleStress with no agent once (its output is fixed),
// then runs times with sampling at 10 kHz, one after another: a run
// passes if it exits 0 within its time, prints what the plain run
// printed, and its log-rt holds samples.
func (p *Sampling) runStress(ctx context.Context, o *Options, tmp string, runs int) error {
	st := &p.Stress
	st.Options, st.Args = stressOptions, stressArgs
	main := append([]string{"-cp", filepath.Join(o.Root, "build", "java"), "SampleStress"}, stressArgs...)
	timeout := min(o.Timeout, 2*time.Minute) // a hang, not a slow run
	plain, err := runJVM(ctx, o.Java, Config{}.run(o, "", main...), timeout)
	if err != nil {
		return fmt.Errorf("SampleStress without an agent: %w", err)
	}
	cfg := Config{Key: "stress", Agent: LibJProf, Options: stressOptions}
	t0 := time.Now()
	for i := range runs {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir, err := os.MkdirTemp(tmp, "stress-")
		if err != nil {
			return err
		}
		st.Runs++
		res, err := runJVM(ctx, o.Java, cfg.run(o, dir, main...), timeout)
		why := ""
		var samples float64
		switch {
		case err != nil:
			why = oneLine(err.Error())
		case res.Stdout != plain.Stdout:
			why = "output differs from the run without an agent"
		default:
			b, _ := os.ReadFile(res.file("msg"))
			m := stressSamples.FindSubmatch(b)
			if m == nil {
				why = "no sampling summary in log-msg"
			} else if samples, _ = strconv.ParseFloat(string(m[1]), 64); samples == 0 {
				why = "no samples"
			}
		}
		if why != "" {
			st.Failures = append(st.Failures, fmt.Sprintf("run %d: %s", i+1, why))
		} else {
			st.Passed++
			st.Wall = append(st.Wall, res.Wall.Seconds())
			st.Samples = append(st.Samples, samples)
		}
		os.RemoveAll(dir)
	}
	st.Elapsed = time.Since(t0)
	return nil
}

var stressSamples = regexp.MustCompile(`sampling summary.*?"samples": (\d+)`)

// measureSignals runs sigcost in each mode and loop, rounds interleaved
// (each run alternates its event on and off itself).
func (p *Sampling) measureSignals(ctx context.Context, o *Options, rounds, phases int) {
	bin := filepath.Join(o.Agents, "sigcost")
	p.SignalCost = map[string][]float64{}
	for i := 0; i < max(rounds, 3); i++ {
		for _, work := range sigcostWork {
			for _, mode := range sigcostModes {
				out, err := exec.CommandContext(ctx, bin, mode, strconv.Itoa(sigcostPeriod), work, strconv.Itoa(phases)).Output()
				var cost, overflows float64
				if err == nil {
					_, err = fmt.Sscanf(string(out), "cost_us %g overflows %g", &cost, &overflows)
				}
				if err != nil || overflows == 0 {
					p.SignalErr = fmt.Sprintf("sigcost %s %s: %q: %v", mode, work, out, err)
					p.SignalCost = nil
					return
				}
				p.SignalCost[work+"/"+mode] = append(p.SignalCost[work+"/"+mode], cost)
			}
		}
	}
}

// row returns a program's row of a configuration ("none", "1ms", "10ms").
func (p *Sampling) row(prog, cfg string) *SamplingRow {
	return keyed(p.Rows, prog+"-"+cfg)
}

// Overhead is the median over rounds of a row's wall (CPU) time over its
// program's run without an agent in the same round, minus one (the drift
// between rounds cancels), and the ratio of the medians, minus one.
func (p *Sampling) Overhead(prog, cfg string, cpu bool) (perRoundDiff Summary, ofMedians float64, ok bool) {
	row, none := p.row(prog, cfg), p.row(prog, "none")
	if row == nil || none == nil {
		return Summary{}, 0, false
	}
	a, b := row.Wall, none.Wall
	if cpu {
		a, b = row.CPU, none.CPU
	}
	d, ok := overRound(a, b)
	if !ok {
		return Summary{}, 0, false
	}
	return d, Summarize(a).Median/Summarize(b).Median - 1, true
}

func (p *Sampling) Markdown(out io.Writer, s *Suite) error {
	if len(p.Rows) == 0 || len(p.Rows[0].Wall) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	fmt.Fprintf(out, "javac compiling java/src, and `ParJavac`: %d threads each running javac (javax.tools) on the same files at once, a "+
		"multi-threaded program (the JIT on: sampling enables no method events), %d shuffled interleaved rounds. Wall is the whole JVM; CPU is "+
		"its user + system time (wait4), which the other core's work disturbs less. *+ per round* is the median over rounds of each run "+
		"against the run without an agent in the same round (the drift between rounds cancels), with its range; *+ of medians* compares "+
		"the medians.\n\n", parJavacThreads, len(p.Rows[0].Wall))
	fmt.Fprintf(out, "| program | configuration | agent, options | wall s: median | min–max | wall + per round (min–max) | + of medians | CPU s: median | CPU + per round |\n|---|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range p.Rows {
		w, c := Summarize(r.Wall), Summarize(r.CPU)
		dw, dm, dc := "–", "–", "–"
		cfg := strings.TrimPrefix(r.Key, r.Program+"-")
		if cfg != "none" {
			if x, m, ok := p.Overhead(r.Program, cfg, false); ok {
				dw = fmt.Sprintf("%+.1f%% (%+.1f…%+.1f%%)", 100*x.Median, 100*x.Min, 100*x.Max)
				dm = fmt.Sprintf("%+.1f%%", 100*m)
			}
			if x, _, ok := p.Overhead(r.Program, cfg, true); ok {
				dc = fmt.Sprintf("%+.1f%%", 100*x.Median)
			}
		}
		fmt.Fprintf(out, "| %s | %s | %s | %.2f | %s | %s | %s | %.2f | %s |\n", r.Program, r.Name, agentLabel(r.Config),
			w.Median, w.Range("%.2f"), dw, dm, c.Median, dc)
	}
	fmt.Fprintf(out, "\n**The whole process.** The samples stand for this share of the process's CPU time while sampling "+
		"(the header's note: Java threads, and the JVM's own threads under pseudo-frames of their kind), median and range over the runs:\n\n"+
		"| program | configuration | samples / process CPU | min–max | Java samples not walked | min–max | walked by a recovery |\n|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range p.Rows {
		if len(r.Coverage) > 0 {
			c := Summarize(r.Coverage)
			u, rec := "–", "–"
			ur := "–"
			if len(r.Unwalked) > 0 {
				s := Summarize(r.Unwalked)
				u, ur = fmt.Sprintf("%.1f%%", s.Median), s.Range("%.1f")
				rec = fmt.Sprintf("%.1f%%", Summarize(r.Recovered).Median)
			}
			fmt.Fprintf(out, "| %s | %s | %.1f%% | %s | %s | %s | %s |\n", r.Program, r.Name, c.Median, c.Range("%.1f"), u, ur, rec)
		}
	}
	fmt.Fprintf(out, "\n*Not walked*: the Java threads' samples that AsyncGetCallTrace could not walk (pseudo-frames such as `<unknown_Java>`, "+
		"`<unknown_not_Java>`: a thread in the VM without a walkable last Java frame), median over the runs; *walked by a recovery*: "+
		"those AsyncGetCallTrace failed and a recovery walked, which would otherwise count as not walked: from the caller of a top frame in a stub "+
		"or a frame being built (under it the stub's name, `<stub_…>`, else `<top_frame_not_walkable>`), from a thread's last Java frame once its pc is filled in, from the caller "+
		"of the runtime stub a thread in the VM was called from, and, for a thread blocked in the VM, by the VM itself just after the sample "+
		"(JVMTI GetStackTrace from the agent's walker thread, while the thread's last Java frame is still the sampled one).\n")
	seen := map[string]bool{}
	for _, r := range p.Rows {
		for _, n := range r.Samples {
			if !seen[n] {
				seen[n] = true
				fmt.Fprintf(out, "\n%s: %s\n", strings.TrimPrefix(r.Name, "libjprof "), n)
			}
		}
	}
	if len(p.SignalCost) > 0 {
		fmt.Fprintf(out, "\n**The machine's floor.** `bench/agents/sigcost.c`, a C program with nothing of the agent in it, gets SAMPLE's "+
			"perf task-clock event (every %d µs of its thread's CPU time) with an empty handler, and alternates it on and off every 20 ms "+
			"of a fixed loop: the CPU time the loop took beyond its rate with the event off, per overflow, is what one sample costs "+
			"before any stack walk (µs of thread CPU, median of %d runs, interleaved, with their range). The loop is arithmetic in "+
			"registers (*cpu*), or increments scattered over 8 MiB (*mem*), where what an interrupt's exit to the hypervisor does to "+
			"the caches shows.\n\n", sigcostPeriod, len(p.SignalCost["cpu/none"]))
		fmt.Fprintln(out, "| loop | the timer's interrupts alone (no signal) | with SIGPROF through fasync (SAMPLE's: perf sends it from an irq_work, a self-interrupt) | with perf's own SIGTRAP instead (sigtrap; not used, see below) |")
		fmt.Fprintln(out, "|---|--:|--:|--:|")
		for _, work := range sigcostWork {
			fmt.Fprintf(out, "| %s |", work)
			for _, mode := range sigcostModes {
				c := Summarize(p.SignalCost[work+"/"+mode])
				fmt.Fprintf(out, " %.1f (%s) |", c.Median, c.Range("%.1f"))
			}
			fmt.Fprintln(out)
		}
		c, timer := Summarize(p.SignalCost["cpu/prof"]), Summarize(p.SignalCost["cpu/none"])
		fmt.Fprintf(out, "\nAt 1 ms, SAMPLE's floor (*cpu*, SIGPROF) is %.1f%% of a sampled thread's CPU time, %.1f%% of it the timer's "+
			"interrupts alone; more where the program's working set is larger than the caches. perf's SIGTRAP (Linux 5.13; queued as "+
			"work for the thread's return to user space from 6.11) spares the self-interrupt, but SAMPLE does not use it: before 5.19 a "+
			"sample arriving while the thread blocks SIGTRAP (glibc does around clone) kills the process, HotSpot's crash reporting "+
			"takes SIGTRAP over while it writes hs_err (each sample would then abort a step of the report), and debuggers and crash "+
			"reporters in native libraries take every SIGTRAP for a breakpoint or a crash.\n", 100*c.Median/1000, 100*timer.Median/1000)
	} else if p.SignalErr != "" {
		fmt.Fprintf(out, "\nThe signal floor was not measured: %s\n", oneLine(p.SignalErr))
	}
	if st := p.Stress; st.Runs > 0 {
		w, n := Summarize(st.Wall), Summarize(st.Samples)
		fmt.Fprintf(out, "\n**Stress.** `SampleStress %s` (%s threads started, %s at a time: thread churn, garbage and GC, "+
			"implicit null checks, deoptimization at a call site that meets new receiver classes, deep recursion, classes "+
			"defined by loaders that are dropped and unloaded), run %d times in a row with `%s` (10 kHz of CPU time per "+
			"thread). A run passes when it exits 0 within 2 minutes, prints what the run without an agent printed, and its "+
			"log-msg counts samples: **%d of %d passed** in %s (wall per run: median %.2f s, %s; samples per run: median %.0f, %s).\n",
			strings.Join(st.Args, " "), st.Args[0], st.Args[1], st.Runs, st.Options, st.Passed, st.Runs, st.Elapsed.Round(time.Second),
			w.Median, w.Range("%.2f"), n.Median, n.Range("%.0f"))
		for _, f := range st.Failures {
			fmt.Fprintf(out, "- %s\n", f)
		}
	}
	return nil
}

// coverageTargets are issue 22's: under SAMPLE (1 ms), the samples stand
// for the process's CPU time within 5%, on javac and on a GC-heavy
// program.
func coverageTargets(p *Sampling) []Target {
	var ts []Target
	for _, prog := range []string{sampleJavac, sampleGCHeavy} {
		tg := Target{What: fmt.Sprintf("SAMPLE (1 ms) on %s: the sampled CPU total within 5%% of the process's CPU time", prog), Measured: "not measured", Met: "n/a"}
		if p != nil {
			for _, r := range p.Rows {
				if r.Key == prog+"-1ms" && len(r.Coverage) > 0 {
					c := Summarize(r.Coverage)
					tg.Measured = fmt.Sprintf("%.1f%% (%s over %d runs)", c.Median, c.Range("%.1f"), c.N)
					tg.Met = yesNo(c.Median >= 95 && c.Median <= 105)
				}
			}
		}
		ts = append(ts, tg)
	}
	for _, prog := range []string{sampleJavac, sampleGCHeavy} {
		tg := Target{What: fmt.Sprintf("SAMPLE (1 ms) on %s: the Java threads' samples whose stack is not walked ≤ 2%%", prog), Measured: "not measured", Met: "n/a"}
		if p != nil {
			for _, r := range p.Rows {
				if r.Key == prog+"-1ms" && len(r.Unwalked) > 0 {
					u := Summarize(r.Unwalked)
					tg.Measured = fmt.Sprintf("%.1f%% (%s over %d runs); %.1f%% more walked by a recovery", u.Median, u.Range("%.1f"), u.N,
						Summarize(r.Recovered).Median)
					tg.Met = yesNo(u.Median <= 2)
				}
			}
		}
		ts = append(ts, tg)
	}
	return ts
}
