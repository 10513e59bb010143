package jvmti

/*
#include "jvmtiagent.h"
#include "sampling.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// SampleKind is what a sample's period counts.
type SampleKind int

const (
	// SampleCPU: each thread's own CPU time (a timer on its CPU-time
	// clock); only running threads are sampled.
	SampleCPU SampleKind = C.JP_SAMPLE_CPU
	// SampleWall: wall time; every thread is sampled each period,
	// running or waiting.
	SampleWall SampleKind = C.JP_SAMPLE_WALL
	// SampleTimer: like SampleCPU, with POSIX CPU timers only (no perf
	// events), which fire at the kernel's tick at the earliest.
	SampleTimer SampleKind = C.JP_SAMPLE_TIMER
)

func (k SampleKind) String() string {
	switch k {
	case SampleWall:
		return "wall"
	case SampleTimer:
		return "timer"
	}
	return "cpu"
}

// Signal names the signal the kind uses.
func (k SampleKind) Signal() string {
	if k == SampleWall {
		return "SIGVTALRM"
	}
	return "SIGPROF"
}

// SampleConfig selects the sampling source (Config.Sample).
type SampleConfig struct {
	Kind   SampleKind
	Period time.Duration
	// MaxNodes is each thread's sampled-tree capacity, allocated when
	// the thread starts; samples past it are counted and charged to
	// <sample-node-limit>.
	MaxNodes int
	// Depth is the most frames one sample walks; deeper stacks hang
	// under <deeper-frames>.
	Depth int
}

// Sampler is the sampling event source: per-thread timers, stacks
// walked by AsyncGetCallTrace in the signal handler, no method events.
type Sampler struct{}

// Name implements the agent's source interface.
func (Sampler) Name() string { return "asgct-sampling" }

// Start arms every sampled thread's timer (and those of threads that
// start later).
func (Sampler) Start() error { return setSampling(true) }

// Stop disarms them.
func (Sampler) Stop() error { return setSampling(false) }

// Detach is Stop: the timers are deleted when sampling stops.
func (Sampler) Detach() error { return detach() }

// SampledProcessCPU is the process's CPU time (every thread's, from the
// kernel) while sampling was on: what the samples of every thread would
// stand for if none were missed.
func SampledProcessCPU() time.Duration { return time.Duration(C.jp_sampling_process_cpu()) }

func setSampling(on bool) error {
	switch e := C.jp_sampling_set(cbool(on)); {
	case e == -1:
		return ErrDead
	case e != 0:
		return fmt.Errorf("sampling: starting the wall-clock timer thread, the JVM thread scanner or the walker thread failed: error %d", int(e))
	}
	return nil
}

func configureSampling(s *SampleConfig) error {
	var errbuf [256]C.char
	if s.Period <= 0 || s.MaxNodes < 16 || s.MaxNodes > 1<<30 || s.Depth < 1 || s.Depth > 1<<16 {
		return fmt.Errorf("sampling: bad configuration %+v", *s)
	}
	if C.jp_sampling_configure(C.int(s.Kind), C.uint64_t(s.Period.Nanoseconds()), C.uint32_t(s.MaxNodes),
		C.uint32_t(s.Depth), &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("sampling: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

// SampleStats are the sampling source's counters since VM start.
type SampleStats struct {
	Samples uint64 // signals handled on a sampled thread
	// Failed counts walks AsyncGetCallTrace refused, by pseudo-frame
	// name ("<GC_active>", ...); only reasons seen are present.
	Failed        map[string]uint64
	Misses        uint64 // frames whose jmethodID was not registered (<unknown-method>)
	Deep          uint64 // walks cut at the depth limit (<deeper-frames>)
	Limited       uint64 // samples charged to <sample-node-limit>
	Unowned       uint64 // signals on a thread without sampling state, or after a stop
	TimerFailures uint64
	SetupFailures uint64        // threads left unsampled for lack of memory
	Threads       uint64        // threads given sampling state
	Weight        time.Duration // the time all samples stand for
	// PerfArmed and TimerArmed count armings (cpu kind) with a perf
	// task-clock event and with a POSIX CPU timer (tick-bound).
	PerfArmed, TimerArmed uint64
	// Handler is the thread CPU time spent in the signal handler: the
	// sampler's own cost on the sampled threads (signal delivery aside).
	Handler time.Duration
	// Prepare is the time spent making the methods' jmethodIDs and
	// handles (Prepared of them) at class prepare and VM init.
	Prepare  time.Duration
	Prepared uint64
	// The JVM's own threads (GC, JIT compilers, VM thread; cpu kinds):
	// threads sampled, threads seen to end, their samples and the time
	// those stand for.
	JVMThreads, JVMEnded, JVMSamples uint64
	// JVMPeriod is the JVM threads' sampling period: the source's, or
	// JP_JVM_PERIOD_NS if that is longer.
	JVMPeriod time.Duration
	JVMWeight time.Duration
	// Recovered counts walks that failed at the top frame and were
	// walked from its caller (<top_frame_not_walkable>).
	Recovered uint64
	// Anchored counts walks of a thread in the VM that succeeded once
	// its last Java frame's pc was filled in.
	Anchored uint64
	// StubPopped counts walks of a thread in the VM that succeeded from
	// the caller of the runtime stub that called into it.
	StubPopped uint64
	// Deferred counts walks of a thread blocked in the VM that the
	// handler left to the walker thread and it made (JVMTI
	// GetStackTrace); DeferredFailed those it could not (the thread had
	// left the VM, or ended): these are counted in Failed too;
	// DeferredLost those whose sample was dropped (sampling stopped
	// first), DeferredPending those not yet added to a tree.
	Deferred, DeferredFailed, DeferredLost, DeferredPending uint64
	// Parked is the deferred walks of blocked threads whose handler
	// waited for the walker, ParkTimeouts those that gave up waiting.
	Parked, ParkTimeouts uint64
}

// Since is what the counters gained after old was read (a report's
// interval: since a reset or an interval flush). Threads, JVMThreads,
// JVMEnded, JVMPeriod and DeferredPending are states, not counts, and
// PerfArmed and TimerArmed say which timers sample the threads (a thread
// armed before still samples with its timer): they stay as they are now.
func (s SampleStats) Since(old SampleStats) SampleStats {
	d := s
	d.Samples -= old.Samples
	d.Failed = map[string]uint64{}
	for k, v := range s.Failed {
		if v > old.Failed[k] {
			d.Failed[k] = v - old.Failed[k]
		}
	}
	d.Misses -= old.Misses
	d.Deep -= old.Deep
	d.Limited -= old.Limited
	d.Unowned -= old.Unowned
	d.TimerFailures -= old.TimerFailures
	d.SetupFailures -= old.SetupFailures
	d.Weight -= old.Weight
	d.Handler -= old.Handler
	d.Prepare -= old.Prepare
	d.Prepared -= old.Prepared
	d.JVMSamples -= old.JVMSamples
	d.JVMWeight -= old.JVMWeight
	d.Recovered -= old.Recovered
	d.Anchored -= old.Anchored
	d.StubPopped -= old.StubPopped
	d.Deferred -= old.Deferred
	d.DeferredFailed -= old.DeferredFailed
	d.DeferredLost -= old.DeferredLost
	d.Parked -= old.Parked
	d.ParkTimeouts -= old.ParkTimeouts
	return d
}

// DebugNonSafepoints is what turning HotSpot's DebugNonSafepoints on at
// set-up gave: 0 on; 1 on and 2 off as the user set it (left alone); -1
// the VM's structure table not readable, -2 no such flag.
func DebugNonSafepoints() int { return int(C.jp_sampling_debuginfo()) }

// SampleRecovery says which recoveries of walks AsyncGetCallTrace fails
// HotSpot's structure table allowed: from the caller of the top frame,
// and from a thread's last Java frame; whether the walker thread for
// threads blocked in the VM failed to attach to the VM; and whether
// where a thread keeps its safepoint polling word or its suspend flags
// is unknown (no stub walks in the handler then).
func SampleRecovery() (fromCaller, fromAnchor, walkerFailed, pollUnknown bool) {
	r := C.jp_sampling_recovery()
	return r&1 != 0, r&2 != 0, r&4 != 0, r&8 != 0
}

// SamplingStats reads the counters.
func SamplingStats() SampleStats {
	var st C.jp_sample_stats
	C.jp_sampling_stats(&st)
	s := SampleStats{Samples: uint64(st.samples), Failed: map[string]uint64{}, Misses: uint64(st.misses),
		Deep: uint64(st.deep), Limited: uint64(st.limited), Unowned: uint64(st.unowned),
		TimerFailures: uint64(st.timer_failures), SetupFailures: uint64(st.setup_failures), Threads: uint64(st.threads),
		Weight: time.Duration(st.weight_ns), PerfArmed: uint64(st.perf_armed), TimerArmed: uint64(st.timer_armed),
		Handler: time.Duration(st.handler_ns), Prepare: time.Duration(st.prepare_ns), Prepared: uint64(st.prepared),
		JVMThreads: uint64(st.jvm_threads), JVMEnded: uint64(st.jvm_ended), JVMSamples: uint64(st.jvm_samples),
		JVMWeight: time.Duration(st.jvm_weight_ns), JVMPeriod: max(time.Duration(C.jp_sampling_period()), time.Duration(C.JP_JVM_PERIOD_NS)), Recovered: uint64(st.recovered), Anchored: uint64(st.anchored),
		StubPopped: uint64(st.stub_popped), Deferred: uint64(st.deferred), DeferredFailed: uint64(st.deferred_failed),
		DeferredLost: uint64(st.deferred_lost), DeferredPending: uint64(st.deferred_pending),
		Parked: uint64(st.parked), ParkTimeouts: uint64(st.park_timeouts)}
	for r := 0; r < C.JP_NREASONS; r++ {
		if n := uint64(st.reasons[r]); n > 0 {
			s.Failed[C.GoString(C.jp_sampling_reason(C.int(r)))] = n
		}
	}
	return s
}

// NameSampledMethods gives their names to the methods the sampled trees
// use: the sampler reserves a method's handle at class prepare and leaves
// the VM calls that name it until a report needs it. It must run on a
// thread attached to the VM; false if the calling thread is not.
func NameSampledMethods() (named int, ok bool) {
	n := C.jp_mid_name_used()
	return int(n), n >= 0
}
