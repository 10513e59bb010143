package main

import (
	"fmt"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/jvmti"
)

// virtualThreadNotes are the header lines on virtual threads (JDK 21+):
// how they are profiled, or, where they are not followed between
// carriers (the JVM does not say when they move, or NOVTHREADS), what
// that costs: an exact tree's carriers have unmatched and missed exits;
// a sampled one's (ALLOC, LOCK) events are on their carriers' trees, and
// LOCK loses a wait that ends on another carrier than it began on.
func virtualThreadNotes(ts []engine.Thread, noVThreads, sampled, lock bool) []string {
	mode, started := jvmti.VirtualThreads()
	switch {
	case mode == jvmti.VirtualThreadsTracked && started > 0:
		n := 0
		for _, t := range ts {
			if t.Virtual() {
				n++
			}
		}
		return []string{fmt.Sprintf("Virtual threads: %d started, %d with a tree of their own in this report (virtual-<name or id>, TID the JVM's thread id); "+
			"followed across carriers through the JVM's mount/unmount events; the JVM's switches between them are charged to no thread", started, n)}
	case mode == jvmti.VirtualThreadsSampled && started > 0:
		return []string{fmt.Sprintf("Virtual threads: %d started, sampled on their carriers: a virtual thread's samples are in the tree of the carrier "+
			"(ForkJoinPool-*-worker-*) it ran on, with the Java frames on the carrier's stack (HotSpot copies a mounted virtual thread's frames back a few at a time: "+
			"a stack may go from Continuation.enterSpecial straight to them); no virtual thread has a tree of its own", started)}
	case mode == jvmti.VirtualThreadsDetected && started > 0:
		why := "this JVM does not say when they mount or unmount"
		if noVThreads {
			why = "NOVTHREADS: they were not followed across carriers"
		}
		what := "their frames are on their carriers' trees, which are not exact (unmatched and missed exits)"
		if sampled {
			what = "their events are on their carriers' trees"
		}
		if lock {
			what += ", and a wait that began on one carrier and ended on another is not recorded"
		}
		return []string{fmt.Sprintf("Warning: %d virtual threads ran, but %s: %s", started, why, what)}
	}
	return nil
}

// logVirtualThreads says in log-msg how virtual threads were profiled.
func (a *agent) logVirtualThreads() {
	mode, started := jvmti.VirtualThreads()
	switch mode {
	case jvmti.VirtualThreadsTracked:
		a.log.Info(fmt.Sprintf("virtual threads: %d started, each profiled on a record of its own (mount/unmount events)", started))
	case jvmti.VirtualThreadsSampled:
		if started > 0 {
			a.log.Info(fmt.Sprintf("virtual threads: %d started, sampled on their carriers (their samples are in the carriers' trees)", started))
		}
	case jvmti.VirtualThreadsDetected:
		if started > 0 {
			a.log.Warn(fmt.Sprintf("virtual threads: %d started; the JVM gives no mount/unmount events: their carriers' trees are not exact", started))
		}
	}
}
