package main

// The thread summary: what each report learnt of the threads, written to
// log-msg at VM death.

import (
	"strings"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"

	"go.uber.org/zap"
)

// endedThreadLines is how many ended threads get a log-msg line of their
// own; the rest (there can be tens of thousands) are summed in one.
const endedThreadLines = 32

// threadSummary is what a report learnt of the threads, kept for log-msg
// in bounded memory: live threads and the first ended ones each, the
// other ended threads summed.
type threadSummary struct {
	lines  []threadTotals
	ended  int // ended threads with a line of their own
	summed int // ended threads in rest
	rest   threadTotals
}

func (s *threadSummary) add(t threadTotals) {
	if !t.ended || s.ended < endedThreadLines {
		if t.ended {
			s.ended++
		}
		s.lines = append(s.lines, t)
		return
	}
	r := &s.rest
	if s.summed == 0 {
		r.root, r.ended, r.metrics = "other ended threads", true, make([]uint64, len(t.metrics))
	}
	s.summed++
	r.excs += t.excs
	r.counters.Events += t.counters.Events
	r.counters.UnmatchedExits += t.counters.UnmatchedExits
	r.counters.MissedExits += t.counters.MissedExits
	r.counters.AllocFailures += t.counters.AllocFailures
	r.nodes += t.nodes
	for k := range r.metrics {
		r.metrics[k] += t.metrics[k]
	}
	r.ds += t.ds
	r.in += t.in
}

// logThreadSummary writes what the last report learnt of each thread to
// log-msg (see threadSummary), then the PTT's and the registry's
// counters. s may be nil (no report was written).
func (a *agent) logThreadSummary(s *threadSummary) {
	line := func(t threadTotals, extra ...zap.Field) {
		fields := append([]zap.Field{zap.String("thread", t.root), zap.Uint64("events", t.counters.Events),
			zap.Uint64("exceptionExits", t.excs),
			zap.Int("nodes", t.nodes), zap.Uint64("unmatchedExits", t.counters.UnmatchedExits),
			zap.Uint64("missedExits", t.counters.MissedExits), zap.Uint64("allocFailures", t.counters.AllocFailures)}, extra...)
		if len(a.metrics) > 0 {
			// The sampled sources' trees hold their own metrics in the
			// PTT's slots: named as the report names them.
			names := strings.Split(a.metricNames(), "+")
			for k, m := range a.metrics {
				name := m.String()
				if k < len(names) && a.opts.sampledTree() {
					name = names[k]
				}
				fields = append(fields, zap.Uint64(name, t.metrics[k]))
			}
			if a.ptt.HasDispatches {
				fields = append(fields, zap.Uint64("dispatches", t.ds))
			}
			if a.ptt.HasInterrupts {
				fields = append(fields, zap.Uint64("interrupts", t.in))
			}
		}
		a.log.Info("thread summary", fields...)
	}
	if s != nil {
		for _, t := range s.lines {
			if t.ended {
				line(t, zap.Bool("ended", true))
			} else {
				line(t)
			}
		}
		if s.summed > 0 {
			line(s.rest, zap.Int("threads", s.summed))
		}
	}
	if len(a.metrics) > 0 {
		c := ptt.ReadCounters()
		a.log.Info("PTT summary", zap.Stringer("backend", a.ptt.Backend), zap.Uint64("fallbackThreads", c.Fallbacks), zap.Uint64("perfFallbackThreads", c.PerfFallbacks),
			zap.Bool("tscReads", ptt.ClockTSC()), zap.Uint64("tscRateMoved", c.TSCDrifts), zap.Uint64("noSlot", c.NoSlot), zap.Uint64("unresolved", c.Unresolved), zap.Uint64("slotsInUse", c.SlotsInUse), zap.Uint64("slots", c.Slots),
			zap.Any("bpfCounters", c.BPF))
	}
	a.log.Info("method registry", zap.Int("methods", engine.Methods()), zap.Int("limit", engine.MaxMethods()),
		zap.Uint64("refused", engine.MethodsOver()))
	if a.opts.Sample != nil {
		a.logSampling()
	}
	if a.opts.Lock != nil {
		st := jvmti.ReadLockStats()
		a.log.Info("lock recording", zap.Uint64s("events", st.Events[:]), zap.Uint64s("recorded", st.Recorded[:]),
			zap.Durations("delay", st.Delay[:]))
	}
	if a.opts.Alloc != nil {
		st := jvmti.ReadAllocStats()
		a.log.Info("allocation sampling", zap.Uint64("samples", st.Samples), zap.Uint64("sampledBytes", st.SampledBytes),
			zap.Uint64("bytesTheyStandFor", st.WeightBytes), zap.Uint64("threads", st.Threads), zap.Uint64("lost", st.Lost))
	}
}
