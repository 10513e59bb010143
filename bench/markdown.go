package bench

import (
	"fmt"
	"io"
	"strings"
)

// agentLabel is the agent and options column of a configuration.
func agentLabel(c Config) string {
	var parts []string
	switch c.Agent {
	case Empty:
		parts = append(parts, "`empty.so`")
	case Naive:
		parts = append(parts, "`naive.so`")
	case LibJProf:
		start := ",START"
		if c.Idle {
			start = ""
		}
		cache := ""
		if c.BCICache {
			cache = ",BCICACHE=…"
		}
		parts = append(parts, "`libjprof.so="+c.Options+cache+start+",NORTDRIVER,LOGPATH=…`")
	}
	for _, a := range c.JVMArgs {
		parts = append(parts, "`"+a+"`")
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, " ")
}

func (w *Workload) Markdown(out io.Writer, s *Suite) error {
	if len(w.Rows) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	jit, xint := w.Row(KeyJIT), w.Row(KeyXint)
	fmt.Fprintf(out, "The measured phase of `BenchWorkload` (recursion, static and instance calls, two JDK natives, "+
		"three exception exits per op; %s events), timed by the program itself, so JVM start-up, agent load "+
		"and report writing are not in it: wall time (`System.nanoTime`) and the main thread's CPU time "+
		"(`ThreadMXBean`), which other processes competing for the two cores inflate less; the agents' "+
		"per-event work runs on that thread, so it is counted. Each JVM runs the phase %d times and a run "+
		"counts its fastest repetition (bursts of other work lengthen repetitions, never shorten one). "+
		"*Above floor* is the median over rounds of (t − t_empty) / events, pairing the runs of each round; "+
		"× JIT and × -Xint divide wall medians.\n\n", group(w.Events()), s.Opts.Reps)
	fmt.Fprintf(out, "| configuration | agent, options | wall ms: median | min–max | IQR | ns/event | above floor, ns/event: wall (min–max) | thread CPU (min–max) | × JIT | × -Xint | peak RSS MB |\n")
	fmt.Fprintf(out, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range w.Rows {
		if r.Skipped != "" {
			fmt.Fprintf(out, "| %s | %s | skipped: %s |||||||||\n", r.Name, agentLabel(r.Config), oneLine(r.Skipped))
			continue
		}
		ph := r.Phase(Wall).Scale(1e-6)
		above := [2]string{"–", "–"}
		for i, m := range []Measure{Wall, CPU} {
			switch {
			case r.Agent == NoAgent:
				// No events: a difference to the floor means nothing.
			case r.Key == KeyEmpty:
				above[i] = "0 (floor)"
			default:
				if d, ok := w.Diff(r.Key, KeyEmpty, m); ok {
					above[i] = fmt.Sprintf("%.1f (%s)", d.Median, d.Range("%.1f"))
				}
			}
		}
		fmt.Fprintf(out, "| %s | %s | %.1f | %s | %s | %.1f | %s | %s | %s | %s | %.0f |\n",
			r.Name, agentLabel(r.Config), ph.Median, ph.Range("%.1f"), ph.IQR("%.1f"),
			r.Phase(Wall).Median/w.Events(), above[0], above[1], ratio(r, jit), ratio(r, xint), r.RSS().Median/(1<<20))
	}
	fmt.Fprintln(out)
	for _, r := range w.Rows {
		if len(r.Failed) > 0 {
			fmt.Fprintf(out, "- %s: %d of its runs failed after the first succeeded: `%s`\n", r.Name, len(r.Failed), oneLine(r.Failed[0]))
		}
	}
	if w.Verified != "" {
		fmt.Fprintf(out, "Event count checked: %s (events = 2 × calls).\n\n", w.Verified)
	}
	w.breakdown(out, s)
	return nil
}

func ratio(r, base *WorkloadRow) string {
	if base == nil || len(base.Samples) == 0 || len(r.Samples) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", r.Phase(Wall).Median/base.Phase(Wall).Median)
}

// breakdown splits the per-event cost by differences between
// configurations: with no PMU in the VM, perf cannot attribute cycles,
// but each configuration adds one piece of work to the one before it.
func (w *Workload) breakdown(out io.Writer, s *Suite) {
	rc := part[*ReadCost](s)
	// One PTT read per event (LATEREAD's second is a row of its own).
	once := func(name string) string {
		if v, ok := rc.Best(name); ok {
			return fmt.Sprintf("1 read: %.1f", v)
		}
		return ""
	}
	perfMinusBPF := ""
	if p, ok := rc.Best(ReadPerf); ok {
		if b, ok := rc.Best(ReadBPF); ok {
			perfMinusBPF = fmt.Sprintf("%.1f − %.1f ns = %.1f", p, b, p-b)
		}
	}
	lines := []struct{ what, a, b, expect string }{
		{"JVMTI event path in interpreter-only mode (empty agent − -Xint)", KeyEmpty, KeyXint, "SPEC §2: ~90"},
		{"call tree: thread lookup, child hash probe, counts, shadow stack (CALLTREE − empty)", KeyCallTree, KeyEmpty, "target ≤ 25"},
		{"one PTT read + metric deltas, DS/IN (RTARCF bpf NOCALIBRATE − CALLTREE)", KeyBPFNoCal, KeyCallTree, once(ReadBPF)},
		{"calibration: sequence key, shared minima, per-node sequence counts (RTARCF bpf − NOCALIBRATE)", KeyBPF, KeyBPFNoCal, ""},
		{"perf reads instead of bpf reads (RTARCF perf − RTARCF bpf)", KeyPerf, KeyBPF, perfMinusBPF},
		{"clock reads, a syscall each, + metric work (RTARCF clock − CALLTREE)", KeyClock, KeyCallTree, once(ReadCPU)},
		{"log-gen records into per-thread buffers (GENERIC − CALLTREE; a Go thread writes them out off the Java thread)", KeyGeneric, KeyCallTree, ""},
		{"naive agent: a thread-CPU-time syscall per event (naive − empty)", KeyNaive, KeyEmpty, "SPEC §8: ~305"},
		{"BCI CALLTREE, the JIT on (BCI CALLTREE − no agent JIT)", KeyBCITree, KeyJIT, ""},
		{"BCI RTARCF bpf, the JIT on (BCI RTARCF − no agent JIT)", KeyBCIBPF, KeyJIT, ""},
		{"JVMTI RTARCF bpf for comparison (RTARCF bpf − no agent JIT)", KeyBPF, KeyJIT, ""},
		{"sampling 1 ms of CPU per thread (SAMPLE − no agent JIT), per workload event", KeySample, KeyJIT, ""},
	}
	fmt.Fprintf(out, "### Where the time goes\n\n")
	fmt.Fprintf(out, "Each line is the per-round difference of two configurations that differ by one piece of work, "+
		"in ns per event (median over rounds, min–max); *expected* is from the read costs measured below or the SPEC.\n\n")
	fmt.Fprintf(out, "| component | wall ns/event | min–max | thread CPU ns/event | min–max | expected |\n|---|--:|--:|--:|--:|--:|\n")
	for _, l := range lines {
		fmt.Fprintf(out, "| %s", l.what)
		for _, m := range []Measure{Wall, CPU} {
			if d, ok := w.Diff(l.a, l.b, m); ok {
				fmt.Fprintf(out, " | %.1f | %s", d.Median, d.Range("%.1f"))
			} else {
				fmt.Fprintf(out, " | – | –")
			}
		}
		fmt.Fprintf(out, " | %s |\n", l.expect)
	}
	fmt.Fprintln(out)

	// The sentence the targets table points to.
	for _, m := range []Measure{CPU, Wall} {
		tree, ok1 := w.Diff(KeyCallTree, KeyEmpty, m)
		reads, ok2 := w.Diff(KeyBPFNoCal, KeyCallTree, m)
		cal, ok3 := w.Diff(KeyBPF, KeyBPFNoCal, m)
		total, ok4 := w.Diff(KeyBPF, KeyEmpty, m)
		if ok1 && ok2 && ok3 && ok4 {
			fmt.Fprintf(out, "By %s, RTARCF with the eBPF PTT costs %.1f ns/event above the floor: %.1f for the call tree, "+
				"%.1f for the PTT read and metric bookkeeping, %.1f for calibration (medians of differences do not add up exactly).\n\n",
				[]string{"wall time", "thread CPU time"}[m], total.Median, tree.Median, reads.Median, cal.Median)
		}
	}
}

func (j *Javac) Markdown(out io.Writer, s *Suite) error {
	if len(j.Rows) == 0 || s.Opts.JavacRounds == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	none := j.Row(KeyJavacNone)
	fmt.Fprintf(out, "`java [agent] -Xms256m -Xmx256m -XX:+AlwaysPreTouch -m jdk.compiler/com.sun.tools.javac.Main %s`, "+
		"%d round(s) in a fixed order. Wall time is the whole JVM: start-up, the compilation (in interpreter-only mode "+
		"under an agent), and libjprof building and writing its log-rt at VM death. Events are 2 × the sum of CALLS "+
		"over the log-rt; nodes are its rows (thread roots included). Peak RSS is the JVM's own high-water mark (GNU time's %%M); *RSS at end of "+
		"compilation* is the highest VmRSS sampled every %v up to javac writing its last class file, before VM death. "+
		"The heap is fixed and pre-touched in every configuration so that RSS differences are native memory, not the "+
		"GC sizing the heap differently.\n\n",
		strings.Join(j.Args, " "), s.Opts.JavacRounds, sampleEvery)
	fmt.Fprintf(out, "| configuration | agent, options | wall s: median | min–max | × no agent | events | nodes | RSS at end of compilation MB | peak RSS MB: median | min–max | peak ÷ end of compilation |\n")
	fmt.Fprintf(out, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range j.Rows {
		if r.Skipped != "" && len(r.Runs) == 0 {
			fmt.Fprintf(out, "| %s | %s | failed: %s ||||||||\n", r.Name, agentLabel(r.Config), oneLine(r.Skipped))
			continue
		}
		wall, rss := r.Wall(), r.RSS().Scale(1.0/(1<<20))
		x := "–"
		if none != nil && len(none.Runs) > 0 {
			x = fmt.Sprintf("%.1f", wall.Median/none.Wall().Median)
		}
		ev, nodes := "–", "–"
		if r.Agent == LibJProf {
			ev, nodes = group(r.Events().Median), group(r.Nodes().Median)
		}
		compile, ratio := "–", "–"
		if c := r.CompileRSS().Median; c > 0 {
			compile = fmt.Sprintf("%.0f", c/(1<<20))
			ratio = fmt.Sprintf("%.2f", r.RSS().Median/c)
		}
		name := r.Name
		if r.Backend == "" && r.Seen != "" && r.Seen != "none" {
			name += " — chose " + r.Seen
		}
		fmt.Fprintf(out, "| %s | %s | %.2f | %s | %s | %s | %s | %s | %.0f | %s | %s |\n",
			name, agentLabel(r.Config), wall.Median, wall.Range("%.2f"), x, ev, nodes, compile, rss.Median, rss.Range("%.0f"), ratio)
	}
	fmt.Fprintln(out)
	j.bciMarkdown(out)
	if g := j.Row(KeyJavacGeneric); g != nil && len(g.Runs) > 0 {
		var bytes, events, waits []float64
		for _, run := range g.Runs {
			bytes = append(bytes, float64(run.GenBytes))
			events = append(events, float64(run.GenEvents)/run.Wall.Seconds())
			waits = append(waits, float64(run.GenWaits))
		}
		b, e := Summarize(bytes), Summarize(events)
		ev := float64(g.Runs[0].GenEvents)
		fmt.Fprintf(out, "**log-gen on javac** (%s): %s events in %.0f MB, %.1f bytes/event, written at %.1f M events/s of the run's wall time "+
			"(median), writer waits %.0f (max over runs). Before the binary records, the text log-gen of the same workload was "+
			"70+ bytes/event (9.4 GB for a 2 s javac run, as measured when issue 10 was filed); `GENFORMAT=text` still writes it.\n\n",
			g.Name, group(ev), b.Median/(1<<20), b.Median/ev, e.Median/1e6, Summarize(waits).Max)
	}

	fmt.Fprintf(out, "**Agent memory per call-tree node (estimates):** the difference in median RSS between a libjprof "+
		"configuration and a configuration without libjprof, divided by the libjprof run's nodes.\n\n")
	fmt.Fprintf(out, "| libjprof | RSS compared | bytes/node vs no agent | vs empty agent |\n|---|---|--:|--:|\n")
	for _, k := range []struct{ key, name string }{{KeyJavacTree, "CALLTREE"}, {KeyJavacRTArcf, "RTARCF"}} {
		for _, m := range []struct {
			name string
			rss  func(*JavacRow) Summary
		}{{"at end of compilation (collecting)", AtCompileEnd}, {"peak (report built at VM death)", Peak}} {
			fmt.Fprintf(out, "| %s | %s", k.name, m.name)
			for _, base := range []string{KeyJavacNone, KeyJavacEmpty} {
				if b, ok := j.BytesPerNode(k.key, base, m.rss); ok {
					fmt.Fprintf(out, " | %.0f", b)
				} else {
					fmt.Fprintf(out, " | –")
				}
			}
			fmt.Fprintf(out, " |\n")
		}
	}
	fmt.Fprintf(out, "\nWhile collecting, a node costs its C record (56 bytes + 8 per metric: a cache line with one metric), its slot in the per-thread "+
		"child hash (kept at most 3/4 full) and, when calibrating, the counts of its calibration keys after the first, which it counts itself (a thread of more than "+
		"16,384 nodes also has a 64 KiB cache of its tree's edges); the estimate also "+
		"holds whatever the JVM does differently under an agent, so it bounds the agent's cost from above. The log-rt is "+
		"written straight from the C trees, one thread at a time: the peak adds, for the thread being written, 17 bytes "+
		"per node plus 8 per metric, and the names of its methods. Before this (as measured when issue 10 was filed) the "+
		"report copied the whole tree into Go several times: CALLTREE 97 bytes/node while collecting and 328 at the peak, "+
		"RTARCF 221 and 569, javac's CALLTREE peaking at 993 MB.\n")
	return nil
}

// bciMarkdown says where the BCI rows' time goes, from log-msg's BCI
// summary (medians over the runs).
func (j *Javac) bciMarkdown(out io.Writer) {
	type row struct {
		name                            string
		hooks, hookT, retr, retrT, rewr Summary
	}
	var rows []row
	for _, r := range j.Rows {
		var h, ht, rc, rt, rw []float64
		for _, run := range r.Runs {
			if b := run.BCI; b != nil {
				h, ht = append(h, float64(b.Hooks)), append(ht, b.HookTime.Seconds()*1000)
				rc, rt = append(rc, float64(b.Retransforms)), append(rt, b.RetransformTime.Seconds()*1000)
				rw = append(rw, float64(b.Rewritten))
			}
		}
		if len(h) > 0 {
			rows = append(rows, row{r.Name, Summarize(h), Summarize(ht), Summarize(rc), Summarize(rt), Summarize(rw)})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(out, "**BCI on javac** (log-msg's BCI summary, medians): the transformer runs in the class-loading threads "+
		"(ASM, kept out of C2, so C1-compiled); a retransformation stops the VM and walks every class and compiled method, "+
		"then the JIT recompiles what it deoptimized. With `ROOTS` the subgraph grows as it runs (a method's first run under "+
		"a root instruments the classes its calls reach, eight levels ahead), so each growth step that reaches a class loaded "+
		"already costs one.\n\n")
	fmt.Fprintf(out, "| configuration | class files rewritten | transformer calls | transformer ms | RetransformClasses calls | their ms |\n|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(out, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", r.name, r.rewr.Median, r.hooks.Median, r.hookT.Median, r.retr.Median, r.retrT.Median)
	}
	fmt.Fprintln(out)
	if j.Row(KeyJavacRootsNarrow) != nil || j.Row(KeyJavacRoots) != nil {
		fmt.Fprintf(out, "**ROOTS with method events** (the rows without BCI): a breakpoint at a root's first bytecode turns "+
			"method events on for that thread alone until the root returns. Nothing is rewritten or retransformed, and the "+
			"tree holds the JDK's methods under the root too; the thread runs interpreted inside the root, so the cost grows "+
			"with the time spent there: little for `writeClass`, most of the run for `attribTree`, where BCI costs less.\n\n")
	}
}

func (c *ReadCost) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "`ptttest.MeasureReadCosts`: each backend set up in turn in this process, %s reads timed in one C loop "+
		"(one cgo call), %d repetition(s). *Best* is the fastest repetition, the read's own cost (other work only "+
		"slows a loop down); the targets and the expectations above use it. A PTT read is what the agent does "+
		"twice per event (Early and Late Read).\n\n", group(float64(s.Opts.ReadCostReads)), s.Opts.ReadCostReps)
	fmt.Fprintf(out, "| read | what it is | ns/read: best | median | max | best × vDSO best |\n|---|---|--:|--:|--:|--:|\n")
	what := map[string]string{
		ReadVDSO:  "`clock_gettime(CLOCK_MONOTONIC)` through the vDSO",
		ReadTSC:   "`rdtsc`",
		ReadCPU:   "`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, a syscall",
		ReadClock: "PTT clock backend (the same syscall, through `jp_ptt_read`)",
		ReadPerf:  "PTT perf backend: perf mmap page and switch records + the clock (TSC scaled; vDSO with NOTSC)",
		ReadBPF:   "PTT bpf backend: eBPF work-area slot (seqlock) + the clock (TSC scaled; vDSO with NOTSC)",
	}
	vdso, hasVDSO := c.Best(ReadVDSO)
	for _, r := range c.Rows {
		if len(r.Ns) == 0 {
			fmt.Fprintf(out, "| %s | %s | skipped: %s | | | |\n", r.Name, what[r.Name], oneLine(r.Skipped))
			continue
		}
		sm := Summarize(r.Ns)
		x := "–"
		if hasVDSO && vdso > 0 {
			x = fmt.Sprintf("%.2f", sm.Min/vdso)
		}
		fmt.Fprintf(out, "| %s | %s | %.1f | %.1f | %.1f | %s |\n", r.Name, what[r.Name], sm.Min, sm.Median, sm.Max, x)
	}
	return nil
}

func (l *LogGen) Markdown(out io.Writer, s *Suite) error {
	if len(l.Inputs) > 0 {
		in := l.Inputs[0]
		fmt.Fprintf(out, "`reports.BuildProfile` over real log-gens (BenchWorkload %d ops × %d repetitions under `RTARCF,METRICS=PTT_TIME,GENERIC`, "+
			"whole run: %s events, %s tree nodes), from memory, GOMAXPROCS=1, %d repetitions, for the compact binary records the agent writes by default "+
			"and for JProf's text lines (`GENFORMAT=text`). *Best* is the fastest repetition (the target uses it: other work only slows a run down). "+
			"*Writer waits* counts the times a Java thread waited for the agent's log-gen writer during the run.\n\n",
			s.Opts.Ops, s.Opts.Reps, group(float64(in.Events)), group(float64(in.Nodes)), len(in.Wall))
		fmt.Fprintf(out, "| input | bytes/event | MB | writer waits | M events/CPU-s: best | median | slowest | M events/s (wall): best | MB/s (wall): best |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, in := range l.Inputs {
			wall, cpu := in.Rates()
			ws, cs := Summarize(wall), Summarize(cpu)
			fmt.Fprintf(out, "| real log-gen, %s | %.1f | %.0f | %d | %.1f | %.1f | %.1f | %.1f | %.0f |\n", in.Format,
				float64(in.Bytes)/float64(in.Events), float64(in.Bytes)/(1<<20), in.WriterWaits,
				cs.Max/1e6, cs.Median/1e6, cs.Min/1e6, ws.Max/1e6, ws.Max*float64(in.Bytes)/float64(in.Events)/(1<<20))
		}
	}
	for _, g := range l.GoBench {
		fmt.Fprintf(out, "| `%s` (synthetic, text) | | | | %.1f | | | %.1f | %.0f |\n", strings.TrimPrefix(g.Name, "Benchmark"),
			g.Metrics["events/cpu-s"]/1e6, g.Metrics["events/s"]/1e6, g.Metrics["MB/s"])
	}
	if len(l.GoBench) > 0 {
		fmt.Fprintf(out, "\nThe synthetic lines are the best of `go test -run '^$' -bench BenchmarkLogGenBuild -cpu 1 "+
			"-benchtime 5x -count %d ./reports/`.\n", goBenchCount)
	} else if l.GoBenchErr != "" {
		fmt.Fprintf(out, "\n`go test -bench BenchmarkLogGenBuild` failed: `%s`\n", oneLine(l.GoBenchErr))
	}
	return nil
}

// notRun writes a section's body when it has nothing to show: why it
// was skipped, or that it was not run. It says whether the part ran.
func notRun(out io.Writer, skipped string, ran bool) (bool, error) {
	if skipped != "" {
		_, err := fmt.Fprintf(out, "Not run: %s.\n", skipped)
		return false, err
	}
	if !ran {
		_, err := fmt.Fprintln(out, "Not run.")
		return false, err
	}
	return true, nil
}
