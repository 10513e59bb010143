package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// Threads measures what thread churn and thread counts do to the agent's
// trustworthiness: a stress run of short threads under each event source
// (with and without the test-only fault shim that widens the window
// between a thread's end and the retirement of its record), and the
// calibrated time of identical work on threads the eBPF work area serves
// and on threads past it.
type Threads struct {
	Runs    int // stress runs per configuration
	Threads int // threads per stress run
	JVMs    int // FallbackPairs runs of each fallback
	Rounds  int // FallbackPairs rounds of work per thread
	Stress  []*StressRow
	// Fallback: per run, the median calibrated time of FallbackPairs'
	// work() on bpf threads and on threads past the work area.
	FallbackRuns []FallbackRun
	FallbackErr  string
}

// StressRow is one stress configuration's runs.
type StressRow struct {
	Config
	Env     []string
	Passed  int
	Crashed int      // exits by a signal, or with an hs_err file
	Failed  []string // the first few failures
	Wall    []float64
}

// FallbackRun is one FallbackPairs run.
type FallbackRun struct {
	Backend             string  // what the threads past the work area read: perf or clock
	BPF, Fallback       float64 // median calibrated ns per work() call
	BPFRaw, FBRaw       float64 // the same, raw
	NBPF, NFallback     int
	BPFSpread, FBSpread [2]float64
}

const (
	pairsWorkers   = 16
	pairsSlots     = 12 // main and the JVM's own threads take a few: about 6 workers fall back
	stressDelayEnv = "JP_TRYLOCK_DELAY_US=3000"
	stressConc     = 8 // threads alive at a time
)

func (t *Threads) Title() string {
	return "Thread end under stress, and threads past the eBPF work area"
}

func (t *Threads) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	t.Runs, t.Threads = o.StressRuns, o.StressThreads
	t.JVMs, t.Rounds = o.FallbackJVMs, o.FallbackRounds
	shim := filepath.Join(tmp, "faults.so")
	if out, err := exec.CommandContext(ctx, "gcc", "-O2", "-shared", "-fPIC", "-o", shim,
		filepath.Join(o.Root, "internal", "jvmtest", "faultshim", "faults.c"), "-ldl").CombinedOutput(); err != nil {
		return fmt.Errorf("building the fault shim: %v: %s", err, out)
	}
	var errs []error
	if err := t.fallback(ctx, s, tmp, shim); err != nil {
		t.FallbackErr = err.Error()
		errs = append(errs, err)
	}
	if err := t.stress(ctx, s, tmp, shim); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (t *Threads) stress(ctx context.Context, s *Suite, tmp, shim string) error {
	o := &s.Opts
	delay := []string{"LD_PRELOAD=" + shim, stressDelayEnv}
	for _, c := range []struct{ key, name, opts string }{
		{"calltree", "CALLTREE (method events)", "METHODEVENTS,CALLTREE"},
		{"bci", "BCI CALLTREE", "BCI,ALLMETHODS,CALLTREE"},
		{"sample", "SAMPLE (1 ms)", "SAMPLE"},
	} {
		t.Stress = append(t.Stress,
			&StressRow{Config: Config{Key: "stress-" + c.key, Name: c.name, Agent: LibJProf, Options: c.opts}},
			&StressRow{Config: Config{Key: "stress-" + c.key + "-delay", Name: c.name + ", trylock delayed 3 ms", Agent: LibJProf, Options: c.opts}, Env: delay})
	}
	cp := filepath.Join(o.Root, "build", "java")
	main := []string{"-cp", cp, "ThreadChurn", strconv.Itoa(t.Threads), strconv.Itoa(stressConc)}
	for i := 0; i < t.Runs; i++ {
		for _, row := range t.Stress {
			if err := ctx.Err(); err != nil {
				return err
			}
			dir, err := os.MkdirTemp(tmp, row.Key+"-")
			if err != nil {
				return err
			}
			r := row.run(o, dir, main...)
			r.Env = row.Env
			res, err := runJVM(ctx, o.Java, r, 5*time.Minute)
			if res != nil {
				row.Wall = append(row.Wall, res.Wall.Seconds())
			}
			hs, _ := filepath.Glob(filepath.Join(dir, "hs_err_pid*.log"))
			switch {
			case err == nil && strings.Contains(res.Stdout, "ThreadChurn: done") && len(hs) == 0:
				row.Passed++
			default:
				var ee *exec.ExitError
				if len(hs) > 0 || (errors.As(err, &ee) && ee.ExitCode() < 0) || (res != nil && strings.Contains(res.Stderr, "SIGSEGV")) {
					row.Crashed++
				}
				if len(row.Failed) < 3 {
					why := "no 'done' line"
					if err != nil {
						why = err.Error()
					}
					row.Failed = append(row.Failed, fmt.Sprintf("run %d: %s", i+1, oneLine(why)))
				}
			}
			os.RemoveAll(dir)
		}
		if (i+1)%10 == 0 || i+1 == t.Runs {
			o.Logf("  stress: %d of %d runs of each", i+1, t.Runs)
		}
	}
	for _, row := range t.Stress {
		if row.Passed != t.Runs {
			return fmt.Errorf("stress %s: %d of %d runs passed", row.Name, row.Passed, t.Runs)
		}
	}
	return nil
}

// fallback runs FallbackPairs with a work area too small for every worker,
// the workers past it reading their own perf event, then the clock (perf
// refused by the fault shim), interleaved.
func (t *Threads) fallback(ctx context.Context, s *Suite, tmp, shim string) error {
	o := &s.Opts
	cfg := Config{Key: "fallback", Agent: LibJProf, Options: fmt.Sprintf("%s%s,PTT=bpf,PTTSLOTS=%d", methodEvents, rtarcf, pairsSlots)}
	main := []string{"-cp", filepath.Join(o.Root, "build", "java"), "FallbackPairs", strconv.Itoa(pairsWorkers), strconv.Itoa(t.Rounds)}
	for i := 0; i < t.JVMs; i++ {
		for _, backend := range []string{"perf", "clock"} {
			if err := ctx.Err(); err != nil {
				return err
			}
			dir, err := os.MkdirTemp(tmp, "fallback-")
			if err != nil {
				return err
			}
			r := cfg.run(o, dir, main...)
			if backend == "clock" {
				r.Env = []string{"LD_PRELOAD=" + shim, "JP_FAIL_PERF_OPEN=1"}
			}
			res, err := runJVM(ctx, o.Java, r, o.Timeout)
			if err != nil {
				return err
			}
			fr, err := pairsResult(res.file("rt.1"), backend)
			if err != nil {
				return err
			}
			t.FallbackRuns = append(t.FallbackRuns, fr)
			o.Logf("  fallback %s: bpf %.2f ms, %s %.2f ms per work()", backend, fr.BPF/1e6, backend, fr.Fallback/1e6)
			os.RemoveAll(dir)
		}
	}
	return nil
}

// pairsResult reads one FallbackPairs log-rt: per worker thread, the
// calibrated (and raw) time of its work() subtrees per call, split by
// whether its root carries the fallback mark.
func pairsResult(path, backend string) (FallbackRun, error) {
	fr := FallbackRun{Backend: backend}
	f, err := os.Open(path)
	if err != nil {
		return fr, err
	}
	defer f.Close()
	p, err := reports.ParseLogRT(bufio.NewReader(f))
	if err != nil {
		return fr, err
	}
	mark := reports.FallbackMark(backend)
	var bpf, fb, bpfRaw, fbRaw []float64
	for _, th := range p.Threads {
		name := reports.ThreadName(th.Name)
		if !strings.HasPrefix(name, "pair-") {
			continue
		}
		var calls, base, raw uint64
		th.Walk(func(n *reports.Node, _ int) {
			if strings.HasSuffix(n.Name, "FallbackPairs.work()J") {
				calls += n.Calls
				n.Walk(func(m *reports.Node, _ int) {
					base += m.Base[0]
					raw += m.Base[0] + m.Delta[0]
				})
			}
		})
		if calls == 0 {
			continue
		}
		cal, rw := float64(base)/float64(calls), float64(raw)/float64(calls)
		if strings.HasSuffix(name, mark) {
			fb, fbRaw = append(fb, cal), append(fbRaw, rw)
		} else if !strings.Contains(name, " [PTT ") {
			bpf, bpfRaw = append(bpf, cal), append(bpfRaw, rw)
		}
	}
	if len(bpf) == 0 || len(fb) == 0 {
		return fr, fmt.Errorf("%s: %d workers on bpf and %d reading %s: need both (PTTSLOTS=%d)", path, len(bpf), len(fb), backend, pairsSlots)
	}
	sb, sf := Summarize(bpf), Summarize(fb)
	fr.BPF, fr.Fallback = sb.Median, sf.Median
	fr.BPFRaw, fr.FBRaw = Summarize(bpfRaw).Median, Summarize(fbRaw).Median
	fr.NBPF, fr.NFallback = len(bpf), len(fb)
	fr.BPFSpread, fr.FBSpread = [2]float64{sb.Min, sb.Max}, [2]float64{sf.Min, sf.Max}
	return fr, nil
}

// FallbackRatio is the median over runs of the fallback threads' median
// calibrated time over the bpf threads', for backend.
func (t *Threads) FallbackRatio(backend string) (Summary, bool) {
	var xs []float64
	for _, r := range t.FallbackRuns {
		if r.Backend == backend && r.BPF > 0 {
			xs = append(xs, r.Fallback/r.BPF)
		}
	}
	if len(xs) == 0 {
		return Summary{}, false
	}
	return Summarize(xs), true
}

func (t *Threads) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "**Threads past the eBPF work area.** `FallbackPairs %d %d` with `%s,PTT=bpf,PTTSLOTS=%d`: %d threads run "+
		"the same work() %d times each, one thread at a time and interleaved (round r of every thread before round r+1 of any), "+
		"so that the machine's drift falls on all alike. The work area has %d slots: the JVM's own threads and the first "+
		"workers take them, the other workers read their own perf event (the default fallback), or the clock where perf "+
		"is refused (here: the test-only fault shim fails perf_event_open). Each fallback thread is calibrated with "+
		"minima of its own (perf: with the built-in perf table's excess) and carries `[PTT perf]` or `[PTT clock]` in its "+
		"root name. Per run: the median over each group's threads of the calibrated (raw) time per work() call, "+
		"and the group's range; %d JVMs of each, interleaved.\n\n",
		pairsWorkers, t.Rounds, rtarcf, pairsSlots, pairsWorkers, t.Rounds, pairsSlots, t.JVMs)
	if t.FallbackErr != "" {
		fmt.Fprintf(out, "Failed: %s\n\n", oneLine(t.FallbackErr))
	}
	if len(t.FallbackRuns) > 0 {
		fmt.Fprintf(out, "| run | fallback reads | bpf threads: calibrated µs (raw) | range | fallback threads: calibrated µs (raw) | range | fallback / bpf |\n|--:|---|--:|--:|--:|--:|--:|\n")
		for i, r := range t.FallbackRuns {
			fmt.Fprintf(out, "| %d | %s | %d: %.0f (%.0f) | %.0f–%.0f | %d: %.0f (%.0f) | %.0f–%.0f | %.2f |\n", i/2+1, r.Backend,
				r.NBPF, r.BPF/1e3, r.BPFRaw/1e3, r.BPFSpread[0]/1e3, r.BPFSpread[1]/1e3,
				r.NFallback, r.Fallback/1e3, r.FBRaw/1e3, r.FBSpread[0]/1e3, r.FBSpread[1]/1e3, r.Fallback/r.BPF)
		}
		for _, b := range []string{"perf", "clock"} {
			if sum, ok := t.FallbackRatio(b); ok {
				fmt.Fprintf(out, "\nThreads reading %s against bpf threads, calibrated time of the same work: median ratio **%.2f** (%s over runs).", b, sum.Median, sum.Range("%.2f"))
			}
		}
		fmt.Fprintf(out, "\n\nThe work area holds 32,768 threads by default (`PTTSLOTS=`; about 7 MiB of locked kernel memory, 224 bytes a thread).\n\n")
	}

	fmt.Fprintf(out, "**Stress.** `ThreadChurn %d %d` (%d short threads, %d alive at a time, each running a three-method tree) "+
		"under each event source with START, %d runs of each configuration, interleaved; *trylock delayed* runs with the "+
		"test-only LD_PRELOAD shim (`internal/jvmtest/faultshim`) that makes every `pthread_mutex_trylock` libjprof calls "+
		"sleep 3 ms first, which widens the window around a thread's end and the retirement of its record (before the fix, "+
		"SAMPLE crashed in `jp_thread_pack` within seconds). A run passes when it exits 0, prints its last line and leaves no "+
		"hs_err file.\n\n", t.Threads, stressConc, t.Threads, stressConc, t.Runs)
	if len(t.Stress) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	fmt.Fprintf(out, "| configuration | runs | passed | crashed | wall s: median | min–max |\n|---|--:|--:|--:|--:|--:|\n")
	for _, r := range t.Stress {
		w := Summarize(r.Wall)
		fmt.Fprintf(out, "| %s | %d | %d | %d | %.1f | %s |\n", r.Name, len(r.Wall), r.Passed, r.Crashed, w.Median, w.Range("%.1f"))
	}
	var fails []string
	for _, r := range t.Stress {
		for _, f := range r.Failed {
			fails = append(fails, r.Name+": "+f)
		}
	}
	slices.Sort(fails)
	for _, f := range fails {
		fmt.Fprintf(out, "- %s\n", f)
	}
	_, err := fmt.Fprintln(out)
	return err
}
