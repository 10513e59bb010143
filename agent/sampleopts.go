package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"
)

// The SAMPLE option: its value's grammar, its defaults, and what it
// rules out among the other options.

// Sampling defaults: SAMPLE alone samples each thread every millisecond
// of its CPU time.
const (
	defaultSamplePeriod = time.Millisecond
	// defaultSampleNodes bounds a thread's sampled tree (ALLOC's and
	// LOCK's too): about 100 bytes a context, 25 MiB at most a thread;
	// storage for the first 16,384 is made when the thread starts, the
	// rest as the tree grows.
	defaultSampleNodes = 262144
	// firstSampleNodes is the engine's JP_PCCT_FIRST.
	firstSampleNodes = 16384
	// sampleDepth is the most frames one sample walks.
	sampleDepth = 2048
	// Bounds on the period: below 10 µs the handler would be most of
	// the thread's time; above a minute nothing is learnt.
	minSamplePeriod = 10 * time.Microsecond
	maxSamplePeriod = time.Minute
)

var sampleKinds = map[string]jvmti.SampleKind{"cpu": jvmti.SampleCPU, "timer": jvmti.SampleTimer, "wall": jvmti.SampleWall}

// setSample parses SAMPLE[=[cpu:|timer:|wall:]period].
func setSample(o *Options, v string, on bool) error {
	if !on {
		o.Sample = nil
		return nil
	}
	c := &jvmti.SampleConfig{Kind: jvmti.SampleCPU, Period: defaultSamplePeriod}
	spec := strings.ToLower(strings.TrimSpace(v))
	if kind, rest, ok := strings.Cut(spec, ":"); ok {
		k, known := sampleKinds[kind]
		if !known {
			return fmt.Errorf("unknown sampling kind %q: cpu, timer or wall", kind)
		}
		c.Kind, spec = k, rest
	} else if k, ok := sampleKinds[spec]; ok {
		c.Kind = k
		spec = ""
	}
	if spec != "" {
		d, err := time.ParseDuration(spec)
		if err != nil || d < minSamplePeriod || d > maxSamplePeriod {
			return fmt.Errorf("needs a period from %v to %v such as 1ms or 500us", minSamplePeriod, maxSamplePeriod)
		}
		c.Period = d
	}
	o.Sample = c
	return nil
}

// checkSample rejects what sampling cannot do, and sets what it implies:
// the metric is the time the samples stand for (no PTT backend beyond
// the clock, nothing to calibrate).
func (o *Options) checkSample() error {
	if o.Sample == nil {
		return nil
	}
	switch {
	case o.source != "":
		return &OptionError{Option: "SAMPLE", Reason: "one event source at a time: SAMPLE, BCI or METHODEVENTS"}
	case o.Roots != "":
		return &OptionError{Option: "ROOTS", Reason: "selects which method events to collect; sampling has none (use the default BCI or METHODEVENTS)"}
	case o.Generic:
		return &OptionError{Option: "SAMPLE", Reason: "log-gen (GENERIC, CALLTRACE, RAWGEN) records method events, which sampling has not"}
	case len(o.Metrics) > 0:
		return &OptionError{Option: "METRICS=", Reason: "does not apply with SAMPLE: a sampled tree's metric is the time its samples stand for"}
	case o.Mode == ModeCallFlow:
		return &OptionError{Option: "CALLFLOW", Reason: "counts instructions and cycles per event; SAMPLE has no events"}
	case o.PTT != ptt.None && o.PTT != ptt.Clock:
		return &OptionError{Option: "PTT=", Reason: "does not apply with SAMPLE: the sampling source reads no PTT"}
	case o.CalOut != "":
		return &OptionError{Option: "CALOUT=", Reason: "writes calibration minima, which SAMPLE has not"}
	}
	o.Sample.MaxNodes = o.SampleNodes
	o.Sample.Depth = sampleDepth
	o.Calibrate = false
	o.PTT = ptt.Clock
	return nil
}

// sampledTree: the source records stacks with metrics of its own
// (SAMPLE, ALLOC, LOCK), not method events with PTT metrics.
func (o *Options) sampledTree() bool { return o.Sample != nil || o.Alloc != nil || o.Lock != nil }

// modeName is what the state line and status call the run: SAMPLE for a
// sampled tree (whose Mode only says whether it carries the sampled time),
// else the log-rt mode, with "+JLM" when the lock monitor counts too.
func (o *Options) modeName() string {
	if o.JLM {
		return o.Mode.String() + "+JLM"
	}
	if o.Sample != nil {
		return "SAMPLE"
	}
	if o.Alloc != nil {
		return "ALLOC"
	}
	if o.Lock != nil {
		return "LOCK"
	}
	return o.Mode.String()
}
