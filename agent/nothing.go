package main

// What the agent says when a collection recorded nothing: at VM death
// (no final log-rt) and in a flush's reply, each with what to change.

import "fmt"

// sayNothingCollected tells the user, at VM death, why a run wrote no
// log-rt and what to add. The caller holds a.mu.
func (a *agent) sayNothingCollected() {
	var msg string
	switch {
	case a.outErr != nil:
		return // said at load
	case !a.started && a.server != nil:
		msg = fmt.Sprintf("nothing collected: no START in the options and no rtdriver start came; add START, or run `%s` while the program runs",
			a.rtdriverHint("start"))
	case !a.started:
		msg = "nothing collected: no START in the options and no rtdriver socket to start it; add START"
	case !a.resetAt.IsZero():
		msg = "nothing collected since the last reset at " + stamp(a.resetAt) + ": no final log-rt"
	case a.opts.Roots != "":
		msg = "nothing collected: collection was on, but no root method (ROOTS=" + a.opts.Roots + ") ran while it was"
	default:
		msg = "nothing collected: collection was on, but while it was " + a.nothingSeen()
	}
	say("libjprof: %s", msg)
	a.log.Warn(msg)
}

// nothingSeen says what did not happen while collection was on, for a
// collection that recorded nothing.
func (a *agent) nothingSeen() string {
	switch {
	case a.opts.Sample != nil:
		return "no thread was sampled running Java code"
	case a.opts.Alloc != nil:
		return "no allocation was sampled"
	case a.opts.Lock != nil:
		return "no thread waited for a lock past the threshold"
	}
	return "none of the methods it sees ran: " + a.seenMethods()
}

// seenMethods says which methods an exact source sees, for "nothing
// collected".
func (a *agent) seenMethods() string {
	switch {
	case a.opts.Roots != "":
		return "the roots (ROOTS=" + a.opts.Roots + ") and what they call"
	case a.opts.BCI && a.opts.Include != "":
		return "methods of classes under INCLUDE=" + a.opts.Include + " but trivial ones and those of classes left as they were (log-msg names them)"
	case a.opts.BCI && a.opts.AllMethods:
		return "every method outside java.base"
	case a.opts.BCI:
		return "methods outside java.base but trivial ones and those of classes left as they were (log-msg names them)"
	}
	return "Java methods"
}
