package jvmti

/*
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// LockConfig configures the lock source (LOCK=): threads blocked
// entering a contended monitor or waiting in Object.wait, recorded with
// their stacks when the delay reaches Threshold.
type LockConfig struct {
	Threshold time.Duration
	MaxNodes  uint32 // contexts per thread's tree
	Depth     uint32 // frames per stack
}

func configureLock(c *LockConfig) error {
	var errbuf [256]C.char
	if C.jp_lock_configure(C.uint64_t(c.Threshold), C.uint32_t(c.MaxNodes), C.uint32_t(c.Depth), &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("jvmti setup: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

// Locks is the lock source.
type Locks struct{}

// Name implements the agent's source interface.
func (Locks) Name() string { return "lock-events" }

// Start turns the monitor events on; a new collection epoch starts.
func (Locks) Start() error { return setLock(true) }

// Stop turns them off.
func (Locks) Stop() error { return setLock(false) }

// Detach stops and gives LockSupport its own bytes back.
func (Locks) Detach() error { return detach() }

func setLock(on bool) error {
	switch e := C.jp_lock_set(cbool(on)); {
	case e == -1:
		return ErrDead
	case e != 0:
		return fmt.Errorf("SetEventNotificationMode(monitor events, %v): JVMTI error %d", on, int(e))
	}
	return nil
}

// LockStats are the lock source's counters: [0] entering contended
// monitors, [1] Object.wait, [2] LockSupport.park. Park is 1 while
// LockSupport is rewritten, 0 before, -1 if it cannot be.
type LockStats struct {
	Events, Recorded [3]uint64
	Delay            [3]time.Duration
	Park             int
}

// ReadLockStats reads them.
func ReadLockStats() LockStats {
	var st C.jp_lock_stats
	C.jp_lock_stats_read(&st)
	var s LockStats
	s.Park = int(st.park)
	for i := range 3 {
		s.Events[i], s.Recorded[i], s.Delay[i] = uint64(st.events[i]), uint64(st.recorded[i]), time.Duration(st.delay_ns[i])
	}
	return s
}
