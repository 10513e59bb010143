package bench

import (
	"fmt"
	"io"
)

// writeNotes ends the report with what the numbers mean, in words that
// follow the measurements (a missed target says where its time went).
func writeNotes(w io.Writer, s *Suite) {
	fmt.Fprintf(w, "## Notes\n\n")
	wl := part[*Workload](s)
	rc := part[*ReadCost](s)
	if wl != nil && wl.Calls > 0 {
		jit, xint, empty := wl.Row(KeyJIT), wl.Row(KeyXint), wl.Row(KeyEmpty)
		if ran(jit) && ran(xint) && ran(empty) {
			fmt.Fprintf(w, "- **The floor is the JVM's, not the agent's.** Turning on MethodEntry/MethodExit puts every "+
				"thread in interpreter-only mode: on this call-heavy phase -Xint alone is %.0f× slower than the JIT, and "+
				"an agent whose callbacks do nothing is %.1f× slower than -Xint (%.0f× the JIT). Every per-event figure "+
				"here is *above* that floor, measured in the same session.\n",
				xint.Phase(Wall).Median/jit.Phase(Wall).Median, empty.Phase(Wall).Median/xint.Phase(Wall).Median,
				empty.Phase(Wall).Median/jit.Phase(Wall).Median)
		}
		total, ok1 := wl.Diff(KeyBPF, KeyEmpty, CPU)
		tree, ok2 := wl.Diff(KeyCallTree, KeyEmpty, CPU)
		reads, ok3 := wl.Diff(KeyBPFNoCal, KeyCallTree, CPU)
		cal, ok4 := wl.Diff(KeyBPF, KeyBPFNoCal, CPU)
		bpf, ok5 := rc.Best(ReadBPF)
		if ok1 && ok2 && ok3 && ok4 && ok5 {
			verdict := "meets"
			if total.Median > 50 {
				verdict = "misses"
			}
			fmt.Fprintf(w, "- **RTARCF with the eBPF PTT %s the 50 ns/event target** (%.0f ns/event by thread CPU time). "+
				"Where it goes: the call tree %.0f (CALLTREE − empty); the PTT read with the metric deltas and "+
				"DS/IN bookkeeping %.0f, of which the read itself, timed in a tight loop, is %.1f; "+
				"calibration %.0f.", verdict, total.Median, tree.Median, reads.Median, bpf, cal.Median)
			if rest := reads.Median - bpf; rest > 5 {
				fmt.Fprintf(w, " The other %.0f of the read step is the reads and their stores in the interpreter's "+
					"context rather than a warm loop (the bpf slot and vDSO data pages, the node's metric, DS and IN "+
					"fields); with no PMU in this VM it cannot be split further by counters.", rest)
			}
			if bpf >= 25 {
				fmt.Fprintf(w, " The read (%.0f ns) is most of it: the vDSO clock is most of one, where the TSC cannot "+
					"be scaled instead.", bpf)
			}
			fmt.Fprintln(w)
		}
		if d, ok := wl.Diff(KeyCallTree, KeyEmpty, CPU); ok {
			fmt.Fprintf(w, "- **CALLTREE** adds %.0f ns/event by thread CPU time (target 25): a thread-local pointer, "+
				"a hash probe for the child node, a few stores.\n", d.Median)
		}
		if d, ok := wl.Diff(KeyNaive, KeyEmpty, CPU); ok {
			fmt.Fprintf(w, "- The **naive C agent** (one CLOCK_THREAD_CPUTIME_ID syscall per event, a shadow stack, a flat "+
				"table) adds %.0f ns/event; SPEC §8 quotes ~305. The PTT clock backend pays that syscall once per event.\n", d.Median)
		}
		if d, ok := wl.Diff(KeyGeneric, KeyCallTree, CPU); ok {
			fmt.Fprintf(w, "- **GENERIC** adds %.0f ns/event to CALLTREE on the Java thread: an event is a few bytes of varints "+
				"appended to a per-thread buffer; a Go thread copies full buffers to the binary log-gen off the Java "+
				"thread, on the other core when one is free.\n", d.Median)
		}
	}
	if jc := part[*Javac](s); jc != nil && len(jc.Rows) > 0 && s.Opts.JavacRounds > 0 {
		none, empty, tree := jc.Row(KeyJavacNone), jc.Row(KeyJavacEmpty), jc.Row(KeyJavacTree)
		if none != nil && empty != nil && tree != nil && len(none.Runs) > 0 && len(empty.Runs) > 0 && len(tree.Runs) > 0 {
			fmt.Fprintf(w, "- **javac**: the empty agent alone makes it %.1f× slower (interpreter-only mode); "+
				"libjprof CALLTREE %.1f×, including building and writing a log-rt of %s nodes at VM death.\n",
				empty.Wall().Median/none.Wall().Median, tree.Wall().Median/none.Wall().Median, group(tree.Nodes().Median))
		}
	}
	fmt.Fprintf(w, "- **Noise.** Two cores shared with other work: configurations are interleaved in shuffled "+
		"rounds, each run keeps its fastest repetition, and the per-event figures are medians of per-round "+
		"differences. The IQR columns show the typical spread; a round hit by a burst of other work shows "+
		"in the min–max columns, sometimes as a negative difference.\n")
	fmt.Fprintf(w, "- Regenerate with `make bench` (options: `make bench BENCH_FLAGS='-rounds 3 -ops 2000'`, "+
		"see `build/bin/bench -h`).\n")
}

func ran(r *WorkloadRow) bool { return r != nil && len(r.Samples) > 0 }
