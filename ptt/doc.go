// Package ptt is libjprof's Per-Thread Time facility: per-thread metric
// values (thread CPU time, and hardware counters where a PMU exists) with
// counts of dispatches and interrupts, read from the agent's C hot path.
//
// Backends, best first: an eBPF-maintained work area mapped into the
// process (full PTT semantics: dispatch and interrupt counts, interrupt
// time factored out), perf_event self-monitoring, and
// clock_gettime(CLOCK_THREAD_CPUTIME_ID). Setup picks the best available
// one, or the one forced by the PTT= option, and says which in its Status.
//
// The reads themselves are C (ptt.h), inlined into the hot path, because a
// Go call per event costs more than the whole event budget.
package ptt
