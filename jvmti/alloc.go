package jvmti

/*
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// AllocConfig configures the allocation source (ALLOC=): HotSpot's
// sampled allocations (JEP 331), one about every Interval bytes a thread
// allocates, each with its stack into the thread's sampled tree.
type AllocConfig struct {
	Interval uint64 // mean bytes between samples, per thread
	MaxNodes uint32 // contexts per thread's tree
	Depth    uint32 // frames per stack
}

func configureAlloc(c *AllocConfig) error {
	var errbuf [256]C.char
	if C.jp_alloc_configure(C.uint64_t(c.Interval), C.uint32_t(c.MaxNodes), C.uint32_t(c.Depth), &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("jvmti setup: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

// Allocs is the allocation source: Start turns the sampled allocation
// events on (with the interval), Stop off.
type Allocs struct{}

// Name implements the agent's source interface.
func (Allocs) Name() string { return "alloc-sampling" }

// Start turns allocation sampling on; a new collection epoch starts.
func (Allocs) Start() error { return setAlloc(true) }

// Stop turns it off.
func (Allocs) Stop() error { return setAlloc(false) }

// Detach is Stop: the events are off, nothing else is in the program.
func (Allocs) Detach() error { return detach() }

func setAlloc(on bool) error {
	switch e := C.jp_alloc_set(cbool(on)); {
	case e == -1:
		return ErrDead
	case e != 0:
		return fmt.Errorf("SetEventNotificationMode(SampledObjectAlloc, %v): JVMTI error %d", on, int(e))
	}
	return nil
}

// AllocStats are the allocation source's counters since it started.
type AllocStats struct {
	Samples      uint64 // allocations sampled
	SampledBytes uint64 // their own sizes, summed
	WeightBytes  uint64 // the bytes they stand for (the tree's total)
	Threads      uint64 // threads that had a sample
	Lost         uint64 // samples not recorded (no memory for a thread's tree)
	// Callback is the time spent in the sampling callback (stack
	// walk, names, tree): the agent's own cost, HotSpot's sampler aside.
	Callback time.Duration
}

// ReadAllocStats reads them.
func ReadAllocStats() AllocStats {
	var st C.jp_alloc_stats
	C.jp_alloc_stats_read(&st)
	return AllocStats{Samples: uint64(st.samples), SampledBytes: uint64(st.sampled_bytes),
		WeightBytes: uint64(st.weight_bytes), Threads: uint64(st.threads), Lost: uint64(st.lost),
		Callback: time.Duration(st.callback_ns)}
}
