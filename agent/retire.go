package main

import (
	"fmt"
	"time"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/reports"
)

// Threads come and go by the tens of thousands in servers. A thread's
// record stays while a report may still need its tree: an ended thread
// is packed into exact blocks at the next pass, and freed once it can
// add nothing to a report (no events since the last reset).
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
	return engine.Retire(func(t engine.Thread) bool {
		if a.base.counters(t).Events != 0 {
			return false
		}
		if a.opts.ThreadInfo {
			a.retired = append(a.retired, jtnmLine(t))
		}
		delete(a.base, t.ID())
		return true
	})
}

// jtnmLine is a thread's line in log-jtnm.
func jtnmLine(t engine.Thread) string {
	end := "-"
	if t.EndNS() != 0 {
		end = fmt.Sprint(t.EndNS())
	}
	return fmt.Sprintf("%08x %d %s %s", t.TID(), t.StartNS(), end, reports.RootName(t.TID(), t.Name()))
}
