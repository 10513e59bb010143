package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
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
		return "methods already running when collection started are seen from their next call (those entered while the classes were rewritten, from their return: as O: rows, one call each); native methods are not wrapped"
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
// for good), and one without its UNIX socket (it could not be opened at
// its first load: a directory of another user's where its socket goes,
// since removed, with or without the TCP port of PORT=; or its file was
// removed since) tries again, so that a JVM is not left unprofilable
// until it restarts.
func (a *agent) attachAgain(agentOpts string) error {
	// Counted whatever this load does: it did not make the agent.
	a.mu.Lock()
	a.loads++
	a.mu.Unlock()
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
	// The UNIX socket is what jprof and rtdriver -pid find the agent by:
	// tried again whenever it is missing, with no server at all or with
	// one on the TCP port of PORT= alone (its directory was another
	// user's when the agent loaded), or when its file was removed since.
	reopened := false
	if a.opts.RTDriver && (srv == nil || srv.SocketMissing()) {
		var err error
		if srv == nil {
			err = a.startServer()
		} else {
			err = srv.ListenUnix(control.SocketPath(control.SocketBase, os.Geteuid(), a.pid))
		}
		if err != nil {
			return fmt.Errorf("libjprof is already loaded in this JVM (since %s) but has no control socket, and still cannot open one: %v", stamp(a.loaded), err)
		}
		a.mu.Lock()
		srv = a.server
		// The warnings of the first load (no socket; TCP alone) no
		// longer hold for the reports written from now on.
		kept := a.notes[:0]
		for _, n := range a.notes {
			if !strings.HasPrefix(n, "Warning: rtdriver socket not available") &&
				!(strings.HasPrefix(n, "Warning: rtdriver: ") && strings.Contains(n, "trying one channel alone")) {
				kept = append(kept, n)
			}
		}
		a.notes = append(kept, "rtdriver socket opened at "+stamp(time.Now())+", by a later load (it could not be opened when the agent loaded, or was removed since)")
		a.mu.Unlock()
		reopened = true
	}
	switch {
	case srv == nil && !opts.Start:
		// NORTDRIVER at the first load (-agentpath): nothing reaches it.
		return fmt.Errorf("libjprof is already loaded in this JVM (since %s) with NORTDRIVER: it has no control channel, so this load, without START, does nothing; restart the program without NORTDRIVER to drive it",
			stamp(a.loaded))
	case srv == nil:
		a.log.Info("libjprof loaded again: the agent already loaded starts collecting (it has no control channel: NORTDRIVER)", zap.String("options", agentOpts))
		say("libjprof: loaded again: the agent loaded at %s starts collecting (no control channel: NORTDRIVER)", stamp(a.loaded))
	case reopened:
		a.log.Info("libjprof loaded again: the agent already loaded had no control socket and opened one now", zap.String("options", agentOpts),
			zap.String("addr", a.serverAddrs()))
		say("libjprof: loaded again: the agent loaded at %s had no control socket; it listens on %s now (options other than START are those of the first load)", stamp(a.loaded), a.serverAddrs())
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
