package main

import (
	"fmt"
	"time"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"
)

// The ALLOC and LOCK options: sampled allocations, or monitor
// contention, as the event source; both record JVMTI events' stacks into
// sampled trees with two metrics.

// defaultAllocInterval is about one sample per 512 KiB a thread
// allocates, as async-profiler's allocation profiler defaults to.
const defaultAllocInterval = 512 << 10

// setAlloc parses ALLOC[=interval].
func setAlloc(o *Options, v string, on bool) error {
	if !on {
		o.Alloc = nil
		return nil
	}
	c := &jvmti.AllocConfig{Interval: defaultAllocInterval}
	if v != "" {
		n, err := parseSize(v)
		if err != nil || n > 1<<30 {
			return fmt.Errorf("needs an interval in bytes such as 512k or 1m (at most 1g)")
		}
		c.Interval = uint64(n)
	}
	o.Alloc = c
	return nil
}

// defaultLockThreshold: shorter waits are not recorded (they are
// counted in log-msg).
const defaultLockThreshold = 10 * time.Microsecond

// setLock parses LOCK[=threshold].
func setLock(o *Options, v string, on bool) error {
	if !on {
		o.Lock = nil
		return nil
	}
	c := &jvmti.LockConfig{Threshold: defaultLockThreshold}
	if v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Hour {
			return fmt.Errorf("needs a threshold such as 10us, 1ms or 0 (every wait)")
		}
		c.Threshold = d
	}
	o.Lock = c
	return nil
}

// checkEventSource rejects what ALLOC and LOCK cannot do, and sets what
// they imply, as checkSample does for SAMPLE.
func (o *Options) checkEventSource() error {
	name, what := "ALLOC", "allocation sampling"
	switch {
	case o.Alloc == nil && o.Lock == nil:
		return nil
	case o.Lock != nil:
		name, what = "LOCK", "lock recording"
	}
	switch {
	case o.Alloc != nil && o.Lock != nil, o.Sample != nil || o.source != "":
		return &OptionError{Option: name, Reason: "one event source at a time: ALLOC, LOCK, SAMPLE, BCI or METHODEVENTS"}
	case o.Roots != "":
		return &OptionError{Option: "ROOTS", Reason: "selects which method events to collect; " + what + " has none"}
	case o.Generic:
		return &OptionError{Option: name, Reason: "log-gen (GENERIC, CALLTRACE, RAWGEN) records method events, which " + what + " has not"}
	case len(o.Metrics) > 0:
		return &OptionError{Option: "METRICS=", Reason: "does not apply with " + name + ": the tree has metrics of its own"}
	case o.Mode == ModeCallFlow || o.Mode == ModeCallTree:
		return &OptionError{Option: o.Mode.String(), Reason: "does not apply with " + name + ": the tree has metrics of its own"}
	case o.PTT != ptt.None && o.PTT != ptt.Clock:
		return &OptionError{Option: "PTT=", Reason: "does not apply with " + name + ": " + what + " reads no PTT"}
	case o.CalOut != "":
		return &OptionError{Option: "CALOUT=", Reason: "writes calibration minima, which " + what + " has not"}
	}
	if o.Alloc != nil {
		o.Alloc.MaxNodes, o.Alloc.Depth = uint32(o.SampleNodes), sampleDepth
	} else {
		o.Lock.MaxNodes, o.Lock.Depth = uint32(o.SampleNodes), sampleDepth
	}
	o.Calibrate = false
	o.PTT = ptt.Clock
	return nil
}
