package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// sampleHeader says in a log-rt header that the tree is sampled, how,
// what its numbers mean, and what the sampler could not record.
func (a *agent) sampleHeader(p *reports.Profile) {
	s := a.opts.Sample
	name, what := "SAMPLED_CPU_TIME", "its own CPU time"
	if s.Kind == jvmti.SampleWall {
		name, what = "SAMPLED_WALL_TIME", "wall time"
	}
	for i := range p.Metrics {
		p.Metrics[i].Name = name
	}
	p.Notes = append(p.Notes,
		fmt.Sprintf("Sampled tree (SAMPLE=%s:%s): each thread sampled every %s of %s (%s, stacks walked by AsyncGetCallTrace); a partial calling context tree, not exact counts",
			s.Kind, period(s.Period), period(s.Period), what, s.Kind.Signal()),
		"CALLS = samples with this context on the stack (CEE: those in its callees; CALLS-CEE: samples with it on top)")
	if len(p.Metrics) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("BASE = %s the samples with this context on top stand for: each sample weighs the thread's time since its previous sample (ns)", strings.ToLower(strings.ReplaceAll(name, "_", " "))))
	}
	st := jvmti.SamplingStats().Since(a.sampleBase)
	since := "VM start"
	switch {
	case a.baseKind == reports.CumulativeSinceReset:
		since = "the reset at " + stamp(a.resetAt)
	case a.baseKind == reports.SinceFlush:
		since = "the last interval flush at " + stamp(a.baseAt)
	case a.live:
		since = "the attach at " + stamp(a.loaded)
	}
	line := fmt.Sprintf("Sampling since %s: %d samples; %d %s", since, st.Samples, st.Threads,
		plural(uint64(st.Threads), "Java thread sampled from its start", "Java threads sampled from their start"))
	// The Java threads' own: the JVM's threads are sampled at a period
	// of their own.
	if js := st.Samples - min(st.JVMSamples, st.Samples); js > 0 && st.Weight > st.JVMWeight {
		// POSIX CPU timers fire at the kernel's tick at the earliest,
		// and a loaded timer thread wakes late: the real interval can
		// be longer than the period asked for.
		line += fmt.Sprintf(", one per %s of %s on average", period(((st.Weight - st.JVMWeight) / time.Duration(js)).Truncate(time.Microsecond)), what)
	}
	line += fmt.Sprintf("; per thread at most %d contexts (SAMPLENODES=; storage for the first %d made at the thread's start, more as its tree grows) and %d frames",
		s.MaxNodes, min(s.MaxNodes, firstSampleNodes), s.Depth)
	if s.Kind != jvmti.SampleWall {
		line += fmt.Sprintf("; timers: %d perf task-clock events, %d POSIX CPU timers (these fire at the kernel's tick at the earliest)",
			st.PerfArmed, st.TimerArmed)
	}
	var failed []string
	for r, n := range st.Failed {
		failed = append(failed, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(failed)
	if st.Anchored > 0 {
		line += fmt.Sprintf("; %d stacks of threads in the VM walked once their last Java frame's pc was filled in", st.Anchored)
	}
	if st.StubPopped > 0 {
		line += fmt.Sprintf("; %d stacks of threads in the VM walked from the caller of the runtime stub that called into it (the stub under it: <stub_NAME> as the JVM names it, else <top_frame_not_walkable>)", st.StubPopped)
	}
	if n := st.Deferred + st.DeferredFailed + st.DeferredLost + st.DeferredPending; n > 0 {
		line += fmt.Sprintf("; %d stacks of threads in the VM that AsyncGetCallTrace could not walk (under a runtime stub, during a GC) walked by the VM after the sample, their last Java frame the sampled one before and after (<top_frame_not_walkable> under it); of such walks %d failed (under their pseudo-frame), %d were dropped as sampling stopped, %d were not done when this was written; %d blocked threads waited in their handler for their walk (%d gave up after 20 ms)",
			st.Deferred, st.DeferredFailed, st.DeferredLost, st.DeferredPending, st.Parked, st.ParkTimeouts)
	}
	if st.Recovered > 0 {
		line += fmt.Sprintf("; %d stacks walked from the caller of a top frame AsyncGetCallTrace could not place (under it the JVM's generated code the frame was in, <stub_NAME> as the JVM names it: a stub, an adapter, the interpreter; else <top_frame_not_walkable>)", st.Recovered)
	}
	if len(failed) > 0 {
		line += "; stacks not walkable (shown as pseudo-frames under the thread): " + strings.Join(failed, ", ")
	}
	p.Notes = append(p.Notes, line)
	caller, anchor, walkerFailed, pollUnknown := jvmti.SampleRecovery()
	if !caller || !anchor {
		p.Notes = append(p.Notes, fmt.Sprintf("SAMPLE: this JVM's structure table did not give what recovering failed walks needs "+
			"(the code cache's bounds: %v; a thread's last Java frame: %v): such samples stay under pseudo-frames at the thread's root", caller, anchor))
	} else if walkerFailed {
		p.Notes = append(p.Notes, "SAMPLE: the walker thread could not start or attach to the VM: samples of threads blocked in the VM under a runtime stub stay under <not_walkable_not_Java>")
	}
	if pollUnknown {
		p.Notes = append(p.Notes, "SAMPLE: where this JVM keeps a thread's safepoint polling word or its suspend flags was not found, or not confirmed: threads sampled in the VM under a runtime stub are not walked from the stub's caller in their handler but by the walker thread after the sample, and more of those walks fail")
	}
	if s.Kind != jvmti.SampleWall {
		p.Notes = append(p.Notes, processCoverage(st, jvmti.SampledProcessCPU()-a.sampleBaseCPU))
	}
	if st.Limited > 0 || st.Misses > 0 || st.Deep > 0 || st.TimerFailures > 0 || st.SetupFailures > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Warning: sampling: %d samples past a thread's capacity (<sample-node-limit>), %d frames of unregistered methods (<unknown-method>), %d stacks cut at the depth limit (<deeper-frames>), %d threads without a timer, %d threads not sampled (no memory)",
			st.Limited, st.Misses, st.Deep, st.TimerFailures, st.SetupFailures))
	}
}

// sampleRestart notes SAMPLE's counters where a report's counts restart
// (a reset, an interval flush), for the next header.
func (a *agent) sampleRestart() {
	if a.opts.Sample != nil {
		a.sampleBase, a.sampleBaseCPU = jvmti.SamplingStats(), jvmti.SampledProcessCPU()
	}
}

// period writes a sampling period as SAMPLE= reads it, in ASCII ("100us").
func period(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d%time.Microsecond == 0 || d > time.Millisecond:
		return fmt.Sprintf("%dus", d/time.Microsecond)
	}
	return fmt.Sprintf("%dns", d.Nanoseconds())
}

// walkerFailed says that the walker thread of blocked threads could not
// attach to the VM; pollUnknown that a thread's polling word was not
// found.
func walkerFailed() bool { _, _, f, _ := jvmti.SampleRecovery(); return f }
func pollUnknown() bool  { _, _, _, u := jvmti.SampleRecovery(); return u }

// logSampling writes the sampling source's counters to log-msg.
func (a *agent) logSampling() {
	st := jvmti.SamplingStats()
	a.log.Info("sampling summary", zap.String("kind", a.opts.Sample.Kind.String()), zap.Duration("period", a.opts.Sample.Period),
		zap.Uint64("samples", st.Samples), zap.Duration("weight", st.Weight), zap.Duration("inHandler", st.Handler),
		zap.Uint64("methodsPrepared", st.Prepared), zap.Duration("preparing", st.Prepare), zap.Uint64("threads", st.Threads),
		zap.Any("notWalkable", st.Failed), zap.Uint64("walkedFromCaller", st.Recovered), zap.Uint64("walkedFromAnchor", st.Anchored), zap.Uint64("walkedPastStub", st.StubPopped), zap.Uint64("walkedAfterSample", st.Deferred), zap.Uint64("walkAfterSampleFailed", st.DeferredFailed), zap.Uint64("walkAfterSampleDropped", st.DeferredLost), zap.Uint64("walkAfterSamplePending", st.DeferredPending), zap.Uint64("walkWaitedFor", st.Parked), zap.Uint64("walkWaitGaveUp", st.ParkTimeouts), zap.Bool("walkerFailed", walkerFailed()), zap.Bool("pollingWordUnknown", pollUnknown()), zap.Uint64("unknownMethods", st.Misses), zap.Uint64("deepStacks", st.Deep),
		zap.Uint64("pastNodeLimit", st.Limited), zap.Uint64("signalsWithoutState", st.Unowned),
		zap.Uint64("timerFailures", st.TimerFailures), zap.Uint64("perfArmed", st.PerfArmed), zap.Uint64("timerArmed", st.TimerArmed), zap.Uint64("threadsNotSampled", st.SetupFailures),
		zap.Uint64("jvmThreads", st.JVMThreads), zap.Uint64("jvmThreadsEnded", st.JVMEnded), zap.Uint64("jvmSamples", st.JVMSamples), zap.Duration("jvmWeight", st.JVMWeight),
		zap.Duration("processCPUWhileSampling", jvmti.SampledProcessCPU()))
}

// nameSampled names the methods the sampled trees use before a report
// reads them (jvmti.NameSampledMethods), on the attached thread when the
// caller (an rtdriver flush) is not a Java thread.
func (a *agent) nameSampled() {
	t0 := time.Now()
	n, ok := jvmti.NameSampledMethods()
	if !ok {
		err := a.vm.Do(func() error { n, _ = jvmti.NameSampledMethods(); return nil })
		if err != nil {
			a.log.Warn("sampled methods not named: the report shows them without names", zap.Error(err))
			return
		}
	}
	a.log.Info("sampled methods named", zap.Int("methods", n), zap.Duration("took", time.Since(t0)))
}

// processCoverage compares the time the samples stand for with the
// process's CPU time while sampling was on.
func processCoverage(st jvmti.SampleStats, cpu time.Duration) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	line := fmt.Sprintf("Process CPU time while sampling: %s; the samples stand for %s", ms(cpu), ms(st.Weight))
	if cpu > 0 {
		line += fmt.Sprintf(" (%.1f%%)", float64(st.Weight)/float64(cpu)*100)
	}
	line += fmt.Sprintf(": Java threads %s, the JVM's own threads and the profiler's %s (%d threads: GC, JIT compilers, the VM thread, the profiler's (<profiler_thread>) and others, each under a root of its name and a pseudo-frame of its kind, no frames, "+
		"sampled every %s of their CPU time, each sample weighing the time since their last). "+
		"Not sampled: threads that ended before a scan (every 100 ms) saw them, and each thread's time after its last sample",
		ms(st.Weight-st.JVMWeight), ms(st.JVMWeight), st.JVMThreads, st.JVMPeriod)
	return line
}
