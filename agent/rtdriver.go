package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// The agent is the rtdriver's Controller. Every method takes a.mu: the
// control server, a delayed start and VM death never overlap.

var errVMDead = errors.New("the VM is shutting down")

// startServer listens for rtdriver commands: on the JVM's UNIX socket,
// and on TCP when PORT= asks for it. A channel that cannot be had is said
// in log-msg and on stderr, the other is kept, and the JVM runs on; the
// error is why there is no channel at all (nil when there is one).
// Called at VM init (or at the attach), and again by a later load into
// a JVM whose agent has no channel (attachAgain): whatever kept it from
// the socket then (a socket directory of another user's in /tmp) may be
// gone.
func (a *agent) startServer() error {
	cfg := control.Config{
		Controller: a,
		Socket:     control.SocketPath(control.SocketBase, os.Geteuid(), a.pid),
		NoTCP:      a.opts.Port == 0,
		Host:       a.opts.Host,
		Port:       a.opts.Port,
		Token:      a.opts.Token,
		Logger:     a.log,
	}
	srv, err := control.Listen(cfg)
	if err != nil && !cfg.NoTCP {
		// Keep the TCP port the user asked for when the socket fails, and
		// the socket when the port does.
		msg := fmt.Sprintf("rtdriver: %v; trying one channel alone", err)
		a.log.Warn(msg)
		only := cfg
		only.Socket = ""
		if srv, err = control.Listen(only); err != nil {
			only = cfg
			only.NoTCP = true
			srv, err = control.Listen(only)
		}
		if err == nil {
			say("libjprof: warning: %s; rtdriver listens on %s only", msg, srv.Addr())
			a.addNote(fmt.Sprintf("Warning: %s; rtdriver listened on %s only", msg, srv.Addr()))
		}
	}
	if err != nil {
		msg := fmt.Sprintf("rtdriver socket not available: %v", err)
		say("libjprof: %s", msg)
		a.log.Warn(msg)
		a.addNote("Warning: " + msg)
		return err
	}
	// control.Listen has logged "rtdriver listening" with the addresses.
	a.mu.Lock()
	a.server = srv
	a.mu.Unlock()
	go func() {
		if err := srv.Serve(); err != nil {
			a.log.Error("rtdriver server stopped", zap.Error(err))
		}
	}()
	return nil
}

// addNote adds a header note for every later report.
func (a *agent) addNote(note string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.notes = append(a.notes, note)
}

// serverAddrs is what the state line says of the control channels: the
// UNIX socket and the TCP address, joined by "+"; "off" without a server.
func (a *agent) serverAddrs() string {
	if a.server == nil {
		return "off"
	}
	var parts []string
	for _, addr := range a.server.Addrs() {
		parts = append(parts, addr.String())
	}
	return strings.Join(parts, "+")
}

// rtdriverHint is the rtdriver command line that reaches this agent and
// sends cmd, for messages that tell the user what to run.
func (a *agent) rtdriverHint(cmd string) string {
	if a.server != nil {
		// The UNIX socket comes first when there is one.
		if tcp, ok := a.server.Addr().(*net.TCPAddr); ok {
			return fmt.Sprintf("rtdriver -p %d -c %s", tcp.Port, cmd)
		}
	}
	return fmt.Sprintf("rtdriver -pid %d -c %s", a.pid, cmd)
}

// pendingStart is a start=N waiting to fire.
type pendingStart struct {
	timer *time.Timer
	at    time.Time
}

// cancelPending drops a delayed start that has not fired. The caller
// holds a.mu.
func (a *agent) cancelPending() {
	if a.pending != nil {
		a.pending.timer.Stop()
		a.pending = nil
		a.log.Info("pending start cancelled")
	}
}

// Start implements control.Controller.
func (a *agent) Start(delay time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if delay <= 0 {
		a.cancelPending()
		return a.startLocked()
	}
	if a.dead || engine.Dead() {
		return errVMDead
	}
	if a.outErr != nil {
		return fmt.Errorf("not collecting: %v (nothing could be written)", a.outErr)
	}
	a.cancelPending()
	p := &pendingStart{at: time.Now().Add(delay)}
	p.timer = time.AfterFunc(delay, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.pending != p {
			return // cancelled or replaced
		}
		a.pending = nil
		var noop control.Noop
		if err := a.startLocked(); errors.As(err, &noop) {
			a.log.Info("delayed start: " + string(noop))
		} else if err != nil {
			a.log.Error("delayed start failed", zap.Error(err))
		}
	})
	a.pending = p
	a.log.Info("start scheduled", zap.Duration("delay", delay))
	return nil
}

func (a *agent) startLocked() error {
	if a.dead || engine.Dead() {
		return errVMDead
	}
	if a.shut {
		return errors.New("profiling was shut down")
	}
	if a.outErr != nil {
		return fmt.Errorf("not collecting: %v (nothing could be written)", a.outErr)
	}
	if a.pttErr != nil {
		return fmt.Errorf("not collecting: %v (no per-thread metric can be read)", a.pttErr)
	}
	if engine.Collecting() {
		return control.Noop(control.AlreadyCollecting + " since " + stamp(a.since))
	}
	if err := a.vm.Do(a.source.Start); err != nil {
		if errors.Is(err, jvmti.ErrDead) {
			return errVMDead
		}
		return err
	}
	a.warnObsoleteLater()
	a.profiledSinceDetach = true
	a.started, a.since = true, time.Now()
	a.lastStart = a.since
	switch {
	case a.baseAt.IsZero():
		a.setBase(a.since, reports.CumulativeSinceStart)
	case !a.collectedSinceReset:
		// Nothing collected since the last reset (an end, a profile's
		// stop; a straggling event of the collection it ended aside):
		// the next report's interval starts now, not at that reset.
		a.setBase(a.since, a.baseKind)
	}
	a.collectedSinceReset = true
	a.log.Info("collection started", zap.String("source", a.source.Name()))
	return nil
}

// stamp is how replies and status show a time: local, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02T15:04:05Z07:00")
}

func (a *agent) stopLocked() error {
	a.cancelPending()
	if !engine.Collecting() {
		return nil
	}
	err := a.vm.Do(a.source.Stop)
	a.quiesce() // collection may be off even when the stop failed
	if err != nil {
		return err
	}
	a.since, a.lastStop = time.Time{}, time.Now()
	a.log.Info("collection stopped")
	return nil
}

// Flush implements control.Controller.
func (a *agent) Flush() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	return a.flushLocked(false)
}

// FlushInterval implements control.Controller: the log-rt holds what
// happened since the previous interval flush (or reset, or start), and
// the counts it read become the baseline of the next report, in the same
// pass: no event falls between two intervals or into both.
func (a *agent) FlushInterval() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	return a.flushLocked(true)
}

func (a *agent) flushLocked(interval bool) (string, error) {
	if a.eventsSinceReset() == 0 {
		// An empty log-rt would look like a profile of nothing.
		from, fromAt := "the JVM started", time.Time{}
		switch {
		case a.baseKind == reports.SinceFlush:
			from, fromAt = "the last interval flush at "+stamp(a.baseAt), a.baseAt
		case !a.resetAt.IsZero():
			from, fromAt = "the last reset at "+stamp(a.resetAt), a.resetAt
		case a.live:
			from = "the attach at " + stamp(a.loaded)
		}
		// Whether collection was on at some time since from decides the
		// reason: a collection started before from may have run on into
		// it (a reset or an interval flush while collecting, then end).
		since := ""
		started := a.lastStart.After(fromAt)
		switch on := engine.Collecting(); {
		case on && started:
			since = "collecting since " + stamp(a.lastStart) + ", but"
		case on:
			since = "collecting throughout, but"
		case started:
			since = "collection was on from " + stamp(a.lastStart) + ", but while it was"
		case a.lastStop.After(fromAt):
			since = "collection was on until " + stamp(a.lastStop) + ", but while it was"
		}
		why := " (not collecting: send start)"
		if since != "" {
			why = fmt.Sprintf(" (%s %s)", since, a.nothingSeen())
		}
		return "", control.Noop("nothing collected since " + from + why + "; no file written")
	}
	path, totals, err := a.writeLogRT(interval)
	if err != nil {
		a.log.Error("flush failed", zap.Error(err))
		return "", err
	}
	a.log.Info("log-rt written", zap.String("file", path))
	a.logThreadSummary(totals)
	return path, nil
}

// Reset implements control.Controller.
func (a *agent) Reset() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errVMDead
	}
	a.resetLocked()
	return nil
}

func (a *agent) resetLocked() {
	engine.WithThreads(func(ts []engine.Thread) {
		a.base = newBaseline(ts, len(a.metrics))
	})
	a.written = 0
	if a.opts.JLM {
		jvmti.ResetJLM()
	}
	a.resetAt = time.Now()
	a.setBase(a.resetAt, reports.CumulativeSinceReset)
	a.collectedSinceReset = engine.Collecting()
	a.sampleRestart()
	// Threads that have ended can add nothing to a later report.
	freed := a.retireLocked()
	a.log.Info("counts reset", zap.Int("endedThreadsFreed", freed))
}

// End implements control.Controller: stop, flush, reset.
func (a *agent) End() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	if err := a.stopLocked(); err != nil {
		return "", err
	}
	path, err := a.flushLocked(false)
	if err != nil {
		return "", err
	}
	a.resetLocked()
	return path, nil
}

// Status implements control.Controller.
func (a *agent) Status() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var events uint64
	threads, live := 0, 0
	engine.WithThreads(func(ts []engine.Thread) {
		threads = len(ts)
		for _, t := range ts {
			events += a.base.counters(t).Events
			if !t.Ended() {
				live++
			}
		}
	})
	state := "stopped"
	switch {
	case a.dead:
		state = "vm-dead"
	case a.shut:
		state = "shut-down"
	case engine.Collecting():
		state = "collecting"
	}
	last := "-"
	if len(a.files) > 0 {
		last = a.files[len(a.files)-1]
		// jprof profile converts the file and removes it.
		if _, err := os.Stat(last); errors.Is(err, fs.ErrNotExist) {
			last += "(removed)"
		}
	}
	pending := "-"
	if a.pending != nil {
		pending = fmt.Sprintf("%.0fs", time.Until(a.pending.at).Seconds())
	}
	line := fmt.Sprintf("state=%s since=%s pid=%d main=%s mode=%s source=%s metrics=%s backend=%s threads=%d live=%d events=%d methods=%d logpath=%s files=%d last=%s pending-start=%s attached=%v",
		state, stamp(a.since), a.pid, a.mainClass, a.opts.modeName(), a.source.Name(), a.metricNames(), a.pttName(), threads, live, events, engine.Methods(),
		a.opts.LogPath, len(a.files), last, pending, a.live)
	// Where the counts of the next log-rt start (its Interval_Start):
	// the last reset or interval flush, or a start with nothing collected
	// since the one before; earlier than since= when a collection that
	// was stopped without an end (or ended with nothing to write) left
	// its counts. jprof takes a final log-rt whose interval starts here
	// or later as this agent's (finalLogRT).
	line += " interval-start=" + stamp(a.baseAt)
	// How many loads of the library reached this agent, the one that
	// made it included (see agent.loads).
	line += fmt.Sprintf(" loads=%d", a.loads)
	if s := a.opts.Sample; s != nil {
		line += fmt.Sprintf(" sample=%s:%s", s.Kind, period(s.Period))
	}
	if b, ok := a.source.(jvmti.BCI); ok {
		// Instrumented code that runs while not collecting: it grows
		// after a stop, not after a detach.
		line += fmt.Sprintf(" instrumenting=%v idle-probe-calls=%d jlm=%s", b.Instrumenting(), b.Stats().IdleCalls, onOff(a.opts.JLM))
	}
	if _, ok := a.source.(jvmti.Locks); ok {
		// LockSupport rewritten (collecting or stopped) or as it was
		// (before the first start, after a detach).
		park := map[int]string{1: "rewritten", 0: "original", -1: "unavailable"}[jvmti.ReadLockStats().Park]
		line += " locksupport=" + park
	}
	return line
}

// ForceGC implements control.Controller.
func (a *agent) ForceGC() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errVMDead
	}
	return a.vm.Do(jvmti.ForceGC)
}

// Roots implements control.Controller: with BCI, re-instruments the
// running JVM for new roots of selective instrumentation; with method
// events started with ROOTS, moves the roots' breakpoints. The reply
// says how many methods match (a warning when none does).
func (a *agent) Roots(roots string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	if roots != "all" {
		n, err := normalizeRoots(roots)
		if err != nil {
			return "", fmt.Errorf("bad roots: %v+... ('*' any run of characters, '?' one), or all with BCI", err)
		}
		roots = n
	}
	var detail string
	switch s := a.source.(type) {
	case jvmti.BCI:
		if err := a.vm.Do(func() error {
			if err := s.SetRoots(roots); err != nil {
				return err
			}
			if roots != "all" {
				detail = a.rootsReply(roots)
			}
			return nil
		}); err != nil {
			return "", err
		}
		a.log.Info("BCI roots changed", zap.String("roots", roots), zap.String("reply", detail))
	case jvmti.MethodEvents:
		if roots == "all" {
			return "", fmt.Errorf("roots=all: method events on every thread are a JVM started without ROOTS")
		}
		if err := a.vm.Do(func() error {
			if err := s.SetRoots(roots); err != nil {
				return err
			}
			detail = a.rootsReply(roots)
			return nil
		}); err != nil {
			return "", err
		}
		a.log.Info("roots changed", zap.String("roots", roots), zap.Int("rootMethods", s.RootMethods()))
	default:
		return "", fmt.Errorf("roots needs the BCI or the method-event source")
	}
	// What the summary at VM death speaks of: roots=all instruments
	// every method, as without ROOTS.
	a.opts.Roots = roots
	if roots == "all" {
		a.opts.Roots = ""
	}
	return detail, nil
}

// checkControl refuses rtdriver settings that would open the agent to
// more than its owner: HOST= only says where the TCP port listens, and
// beyond loopback nobody's user can be told, so a token must say who may.
func (o *Options) checkControl() *OptionError {
	switch {
	case !o.RTDriver:
		return nil
	case o.Host != "" && o.Port == 0:
		return &OptionError{Option: "HOST", Reason: "says where the rtdriver TCP port listens: needs PORT= (without PORT= rtdriver uses the JVM's UNIX socket only)"}
	case o.Port != 0 && o.Token == "" && o.Host != "" && !control.IsLoopback(o.Host):
		return &OptionError{Option: "HOST", Reason: fmt.Sprintf("%s is not loopback: listening beyond this host needs TOKEN= (only a peer on this host can be told by its user)", o.Host)}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// plural is one or many, as n says.
func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
