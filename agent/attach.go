package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/internal/sourceopts"
	"github.com/libjprof/libjprof/jvmti"
)

// An agent loaded into a running JVM (Agent_OnAttach) differs from one
// loaded at start in what HotSpot grants it: no method entry and exit
// events (so no METHODEVENTS, and no ROOTS without BCI), and no VM init
// event (jvmti.LiveInit does its work at once). Everything else is the
// same agent, driven through its rtdriver socket.

// checkLive refuses the options an attached agent cannot honour, saying
// what to use instead.
func (o *Options) checkLive() error {
	switch {
	case o.Sample == nil && o.Alloc == nil && o.Lock == nil && !o.BCI:
		reason := "HotSpot grants method entry and exit events only to an agent loaded at the JVM's start"
		if o.Roots != "" {
			reason = "ROOTS without BCI uses method events: " + reason
		}
		return &OptionError{Option: sourceMethodEvents, Origin: originAttach, Known: true,
			Reason: reason + ": attach with BCI (the default) or SAMPLE, or restart the program with -agentpath"}
	case !o.RTDriver:
		return &OptionError{Option: "NORTDRIVER", Origin: originAttach, Known: true,
			Reason: "an attached agent is driven through its rtdriver socket (jprof, rtdriver): it cannot be turned off"}
	}
	return nil
}

// liveNote is the header's word on what an attach misses, by source.
func liveNote(s source) string {
	switch s.(type) {
	case jvmti.Sampler:
		return "threads that were running are named by their OS names (15 characters)"
	case jvmti.BCI:
		return "methods already running when collection started are seen from their next call; native methods are not wrapped"
	case jvmti.Allocs:
		return "allocations are sampled from the start of collection"
	case jvmti.Locks:
		return "waits that began before collection started are not seen"
	}
	return ""
}

// attachAgain is a second load of the library into this JVM (a second
// Agent_OnAttach, or one after -agentpath): the agent already here
// answers. Its event source cannot change; START starts collecting; the
// other options are those of the first load.
//
// An agent without a control channel does not answer, whatever the load
// says: one shut down by rtdriver refuses the load (its channel is gone
// for good).
func (a *agent) attachAgain(agentOpts string) error {
	opts, err := ParseOptions(agentOpts, "")
	if err != nil {
		return err
	}
	if got, want := opts.sourceName(), a.opts.sourceName(); got != want && sourceopts.Named(agentOpts) {
		return fmt.Errorf("libjprof is already loaded in this JVM with the %s source (since %s); it cannot change to %s: profile with %s, or restart the program",
			want, stamp(a.loaded), got, want)
	}
	a.mu.Lock()
	shut, shutAt, srv := a.shut, a.shutAt, a.server
	a.mu.Unlock()
	if shut {
		return fmt.Errorf("libjprof is already loaded in this JVM (since %s), but rtdriver shut it down at %s: it collects no more and its control channel is closed for good, so neither jprof nor rtdriver can reach it; restart the JVM to profile it again",
			stamp(a.loaded), stamp(shutAt))
	}
	switch {
	case srv == nil && !opts.Start:
		// NORTDRIVER, or no socket could be made: nothing reaches it.
		return fmt.Errorf("libjprof is already loaded in this JVM (since %s) without a control channel (NORTDRIVER, or its socket could not be made: its log-msg says): this load, without START, does nothing",
			stamp(a.loaded))
	case srv == nil:
		a.log.Info("libjprof loaded again: the agent already loaded starts collecting (it has no control channel)", zap.String("options", agentOpts))
		say("libjprof: loaded again: the agent loaded at %s starts collecting (it has no control channel)", stamp(a.loaded))
	default:
		a.log.Info("libjprof loaded again: the agent already loaded answers", zap.String("options", agentOpts),
			zap.String("addr", a.serverAddrs()))
		say("libjprof: loaded again: the agent loaded at %s answers (options other than START are those of the first load)", stamp(a.loaded))
	}
	if opts.Start {
		if err := a.Start(0); err != nil {
			return err
		}
	}
	return nil
}
