package main

import (
	"fmt"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"
)

// The ALLOC option: sampled allocations as the event source.

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

// checkAlloc rejects what allocation sampling cannot do, and sets what
// it implies, as checkSample does for SAMPLE.
func (o *Options) checkAlloc() error {
	if o.Alloc == nil {
		return nil
	}
	switch {
	case o.Sample != nil || o.source != "":
		return &OptionError{Option: "ALLOC", Reason: "one event source at a time: ALLOC, SAMPLE, BCI or METHODEVENTS"}
	case o.Roots != "":
		return &OptionError{Option: "ROOTS", Reason: "selects which method events to collect; allocation sampling has none"}
	case o.Generic:
		return &OptionError{Option: "ALLOC", Reason: "log-gen (GENERIC, CALLTRACE, RAWGEN) records method events, which allocation sampling has not"}
	case len(o.Metrics) > 0:
		return &OptionError{Option: "ALLOC", Reason: "the tree's metrics are the bytes and objects its samples stand for; METRICS= does not apply"}
	case o.Mode == ModeCallFlow || o.Mode == ModeCallTree:
		return &OptionError{Option: "ALLOC", Reason: "the allocation tree has its own metrics; CALLTREE and CALLFLOW do not apply"}
	case o.PTT != ptt.None && o.PTT != ptt.Clock:
		return &OptionError{Option: "ALLOC", Reason: "allocation sampling reads no PTT; PTT= does not apply"}
	case o.CalOut != "":
		return &OptionError{Option: "ALLOC", Reason: "CALOUT= writes calibration minima, which allocation sampling has not"}
	}
	o.Alloc.MaxNodes = uint32(o.SampleNodes)
	o.Alloc.Depth = sampleDepth
	o.Calibrate = false
	o.PTT = ptt.Clock
	return nil
}
