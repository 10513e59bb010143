package main

import (
	"fmt"
	"time"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// allocHeader says in a log-rt header that the tree holds sampled
// allocations, and names its metrics as pprof's users know them (Go's
// and Pyroscope's alloc_space and alloc_objects).
func (a *agent) allocHeader(p *reports.Profile) {
	c := a.opts.Alloc
	nameMetrics(p, reports.Metric{Name: "ALLOC_SPACE", Unit: "bytes"}, reports.Metric{Name: "ALLOC_OBJECTS", Unit: "count"})
	st := jvmti.ReadAllocStats()
	p.Notes = append(p.Notes,
		fmt.Sprintf("Sampled allocations (ALLOC=%d): HotSpot samples about one allocation every %d bytes a thread allocates (JVMTI SampledObjectAlloc); each sample's stack, with the allocated class as its leaf frame, is in the thread's tree", c.Interval, c.Interval),
		"CALLS = samples with this context on the stack; ALLOC_SPACE and ALLOC_OBJECTS = the bytes and objects the samples with this context on top stand for: an object of s bytes is sampled with probability p = 1 - exp(-s/interval), so it stands for s/p bytes and 1/p objects (unbiased estimates; 1/p rounded at random to a whole count). An estimate is as good as its samples: a small object stands for many (one of 24 bytes sampled at 512 KiB for about 22,000), so a class or context with few CALLS has a rough ALLOC_OBJECTS",
		fmt.Sprintf("Allocation sampling since the agent loaded (every collection period; the tree holds this report's): %d samples of %d bytes in all, standing for %d bytes; threads with samples: %d; %s in the agent's callback, %s a sample",
			st.Samples, st.SampledBytes, st.WeightBytes, st.Threads, st.Callback.Round(time.Microsecond), perSample(st.Callback, st.Samples)))
	if st.Lost > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Warning: allocation sampling: %d samples not recorded (no memory for a thread's tree)", st.Lost))
	}
}

// nameMetrics gives an event-driven source's tree its own metrics'
// names in place of the PTT slots that carry them.
func nameMetrics(p *reports.Profile, names ...reports.Metric) {
	for i := range p.Metrics {
		if i < len(names) {
			p.Metrics[i] = names[i]
		}
	}
}

func perSample(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return (d / time.Duration(n)).Round(10 * time.Nanosecond)
}

// lockHeader says in a log-rt header that the tree holds lock waits, and
// names its metrics as Go's mutex profile does (delay, contentions).
func (a *agent) lockHeader(p *reports.Profile) {
	nameMetrics(p, reports.Metric{Name: "DELAY", Unit: "nanoseconds"}, reports.Metric{Name: "CONTENTIONS", Unit: "count"})
	st := jvmti.ReadLockStats()
	p.Notes = append(p.Notes,
		fmt.Sprintf("Lock waits (LOCK=%s): threads blocked entering a contended monitor (leaf \"lock <class>\"), waiting in Object.wait (leaf \"wait <class>\") or parked by java.util.concurrent (LockSupport.park, leaf \"park <blocker's class>\", e.g. a ReentrantLock's Sync) for at least %s, with the stack where the wait ended", a.opts.Lock.Threshold, a.opts.Lock.Threshold),
		"CALLS = waits with this context on the stack; DELAY and CONTENTIONS = the time the waits with this context on top lasted (ns) and how many there were",
		fmt.Sprintf("Lock waits since the agent loaded (every collection period; the tree holds this report's): entering %d (%d recorded, %s in all), Object.wait %d (%d recorded, %s in all), parked %d (%d recorded, %s in all)",
			st.Events[0], st.Recorded[0], st.Delay[0].Round(time.Microsecond), st.Events[1], st.Recorded[1], st.Delay[1].Round(time.Microsecond),
			st.Events[2], st.Recorded[2], st.Delay[2].Round(time.Microsecond)))
	if st.Park < 0 {
		p.Notes = append(p.Notes, "LockSupport could not be rewritten (log-msg says why): java.util.concurrent's waits (ReentrantLock and the like) are not here")
	}
}
