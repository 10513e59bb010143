package main

import (
	"fmt"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// methodEventsDistort is what the state line and the log-rt header say
// of the method-events source.
const methodEventsDistort = "METHODEVENTS: code runs interpreted while it is collected, so JIT-compiled code's share of the time is distorted; BCI, the default source, keeps the JIT"

// methodEventsShort is the same, as the line under the state line says it.
const methodEventsShort = "METHODEVENTS runs collected code interpreted: JIT-compiled code's share is distorted (BCI, the default, keeps the JIT)"

// sourceNotes are the log-rt header's notes on what the event source sees.
func (a *agent) sourceNotes() []string {
	switch a.source.(type) {
	case jvmti.MethodEvents:
		return []string{"Warning: " + methodEventsDistort}
	case jvmti.Sampler:
		switch rc := jvmti.DebugNonSafepoints(); {
		case rc == 0 && a.live:
			// A Warning, which jprof profile repeats: a warmed-up
			// service's hot loop may never be compiled again.
			return []string{"Warning: SAMPLE: DebugNonSafepoints turned on at the attach: code compiled from now on says which inlined method each instruction belongs to; code compiled before says it at safepoints only, so a sample in an inlined method's loop may be charged to the method it was inlined into until that code is compiled again, which in a warmed-up program may be never (-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints on the JVM's command line has it from the start)"}
		case rc == 0:
			return []string{"SAMPLE: DebugNonSafepoints turned on: compiled code says which inlined method each instruction belongs to, so samples in inlined methods are charged to them"}
		case rc == 1:
			return []string{"SAMPLE: DebugNonSafepoints on, as the command line set it: compiled code says which inlined method each instruction belongs to, so samples in inlined methods are charged to them"}
		case rc == 2:
			return []string{"Warning: SAMPLE: DebugNonSafepoints left off, as the command line set it: compiled code says which inlined method it runs only at safepoints, so a sample in an inlined method's loop may be charged to the method it was inlined into (the JIT's work is a little less)"}
		default:
			return []string{fmt.Sprintf("Warning: SAMPLE: DebugNonSafepoints could not be turned on (error %d: the JVM's structure table not found): a sample in an inlined method's loop may be charged to the method it was inlined into; -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints does it", rc)}
		}
	case jvmti.BCI:
		what := "every class outside java.base"
		switch {
		case a.opts.Include != "" && a.opts.Exclude != "":
			what = fmt.Sprintf("classes under %s but not under %s", a.opts.Include, a.opts.Exclude)
		case a.opts.Include != "":
			what = "classes under " + a.opts.Include
		case a.opts.Exclude != "":
			what = "every class outside java.base and " + a.opts.Exclude
		}
		notes := []string{"BCI: instrumented: " + what + "; native methods through wrappers, in classes loaded while collecting and without ROOTS (JVMTI native method prefix)"}
		if a.opts.AllMethods {
			notes = append(notes, "BCI: every method with code instrumented (ALLMETHODS)")
		} else {
			notes = append(notes, "BCI: trivial methods not instrumented, their time counted in their callers: methods that call nothing but java.base and other trivial methods, "+
				"have no loop, recover from no exception, take no monitor and have at most 35 bytes of bytecode on the paths that return, 70 with the trivial methods they call; paths that only end in a throw (or in a call to a method of the class's own that never returns) are not counted, nor an assert's code without -ea, -esa or a -da naming classes "+
				"(getters, setters, empty methods, argument checks, one-line delegates to the JDK and chains of them: what HotSpot inlines; main, run() and a ROOTS root always are); ALLMETHODS instruments them")
		}
		// What the probes cost the compiled code is no event's: a
		// new user's recursive-descent parser (33 ns a call) came out
		// 10 times its real share.
		notes = append(notes, "BCI: calibration removes the agent's own work from each event, not what the probes cost compiled code: "+
			"two native calls per call that it cannot remove, around which it keeps fewer values in registers, in methods made larger (inlined less often); "+
			fmt.Sprintf("methods of under about %d ns a call (calibrated self time over calls; jprof report xprof's NS/CALL, marked ~) show larger than they are, and so do subtrees made of many such calls; SAMPLE shows such code at its real speed", reports.ShortCallNs))
		if e := (jvmti.BCI{}).NativesRefused(); e == -1 {
			notes = append(notes, "BCI: native methods are not seen: attached to a running JVM, libjprof leaves them as they are (their wrappers could not be taken out at detach)")
		} else if e != 0 {
			notes = append(notes, fmt.Sprintf("Warning: BCI: native methods are not seen: the JVM refused a native method prefix (JVMTI error %d)", e))
		}
		return notes
	}
	return nil
}

// assertsNote says whether the trivial rule skipped assert statements'
// code in this run: two runs of one program leave out different methods
// when one turns assertions on.
func assertsNote(off bool) string {
	if off {
		return "BCI: assert statements' code does not count against trivial methods: the command line turns no assertions on and names none"
	}
	return "BCI: assert statements' code counts against trivial methods like any other: the command line turns assertions on or names classes (-ea, -esa, -da:…)"
}
