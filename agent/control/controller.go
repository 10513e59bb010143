package control

import "time"

// Controller is what the agent does on behalf of rtdriver commands.
//
// The Server never calls two Controller methods at the same time, so an
// implementation needs no locking against itself; it may still be called
// concurrently with the agent's own threads (JVMTI callbacks) and must
// synchronise with those. A call that is in progress when Server.Close
// returns runs to completion: calls cannot be interrupted, and Close does not
// wait for them, so Close stays prompt and a Controller method may call
// Close without deadlock. No call starts after Close has returned.
//
// Strings returned are put into one reply line; the Server replaces line
// breaks and control characters, so implementations need not.
type Controller interface {
	// Start begins collecting, or schedules the start after delay when delay
	// is positive. It must not block for the delay.
	// Start while collecting returns a Noop saying so.
	Start(delay time.Duration) error
	// Flush writes the next log-rt.N_<pid> and returns its path. With
	// nothing collected since the last reset it writes no file and
	// returns a Noop saying so.
	Flush() (path string, err error)
	// FlushInterval writes the next log-rt.N_<pid> with only what
	// happened since the previous interval flush (or reset, or the
	// start), and makes now the start of the next interval; as Flush
	// otherwise.
	FlushInterval() (path string, err error)
	// Reset discards the data collected so far.
	Reset() error
	// End stops collecting, flushes and resets; it returns the flushed path.
	End() (path string, err error)
	// Status describes the agent in one line: collecting or not, backend,
	// threads, events, files written.
	Status() string
	// ForceGC asks the JVM for a garbage collection.
	ForceGC() error
	// Roots changes the roots of selective bytecode instrumentation
	// ("all": every method) or of method events; an error where the
	// event source has none. The detail says how many methods match.
	Roots(roots string) (detail string, err error)
	// Detach stops collecting (what was collected stays, for a later
	// flush) and takes the event source out of the program: instrumented
	// classes get their own bytes back, timers and events are off. A later
	// Start profiles again. The detail says what was restored.
	Detach() (detail string, err error)
	// Heap writes the JVM's class histogram (instances and bytes per
	// class, after a full GC) as log-heap.N_<pid> and returns its path.
	Heap() (path string, err error)
	// HeapDump writes an HPROF heap dump of the live objects as
	// log-hprof.N_<pid>.hprof and returns its path.
	HeapDump() (path string, err error)
	// Shutdown stops profiling for good. When it succeeds the Server
	// answers, then closes its listener and connections; Shutdown need
	// not call Server.Close (if it does, its reply is lost). The detail
	// says what it did besides.
	Shutdown() (detail string, err error)
}

// Noop is what a Controller method returns when it did nothing because
// there was nothing to do ("already collecting", "nothing collected
// since ..."). The reply is OK, with the text as its detail: a script's
// "start,flush" goes on, and the user reads what happened.
type Noop string

func (n Noop) Error() string { return string(n) }

// AlreadyCollecting begins a start's Noop: collection was on already. A
// client that needs the profile to itself (jprof profile) reads it as a
// refusal: another command started it.
const AlreadyCollecting = "already collecting"
