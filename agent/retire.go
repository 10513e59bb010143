package main

import (
	"fmt"
	"time"

	"github.com/libjprof/libjprof/engine"
)

// Threads come and go by the tens of thousands in servers. A thread's
// record stays while a report may still need its tree: an ended thread
// is packed into exact blocks as it ends, or a pass after (a large one),
// and freed once it can add nothing to a report (no events since the
// last reset).
const retireEvery = time.Second

// retire is the periodic pass.
func (a *agent) retire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.dead {
		a.retireLocked()
	}
}

// retireLocked frees ended threads that have nothing to report and packs
// the others. A log-gen writer first names every thread whose records
// it may still hold. The caller holds a.mu.
func (a *agent) retireLocked() int {
	if a.gen != nil {
		a.gen.drain(false)
	}
	// A thread can end between that drain and Retire, handing its last
	// log-gen buffer over as it ends: the writer then meets the buffer
	// after the record is gone, so it gets the names of the threads
	// freed here. (Not from inside Retire's callback: the writer holds
	// its lock while it looks threads up.)
	var names map[uint32]string
	n := engine.Retire(func(t engine.Thread) bool {
		if a.base.counters(t).Events != 0 {
			return false
		}
		if a.opts.ThreadInfo {
			a.retireLine(jtnmLine(t))
		}
		if a.gen != nil {
			if names == nil {
				names = map[uint32]string{}
			}
			names[t.ID()] = rootName(t)
		}
		delete(a.base, t.ID())
		return true
	}, retireEvery)
	if len(names) > 0 {
		a.gen.retiredThreads(names)
	}
	return n
}

// jtnmLine is a thread's line in log-jtnm.
func jtnmLine(t engine.Thread) string {
	end := "-"
	if t.EndNS() != 0 {
		end = fmt.Sprint(t.EndNS())
	}
	return fmt.Sprintf("%08x %d %s %s", t.TID(), t.StartNS(), end, rootName(t))
}
