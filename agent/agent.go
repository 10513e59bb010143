package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/buildinfo"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"
	"github.com/libjprof/libjprof/ptt/ptthelper"
	"github.com/libjprof/libjprof/reports"
)

// agent is the single instance of libjprof in this JVM. The JVMTI layer
// holds it (through a cgo.Handle) for the life of the process.
type agent struct {
	opts     *Options
	pid      int
	log      *zap.Logger
	closeLog func()
	ptt      ptt.Status
	pttTSC   bool // the PTT reads scaled the TSC when calibration chose its tables
	tscWarn  sync.Once
	pttLease *ptthelper.Lease // jprof pttd's work area: held open for the life of the process
	metrics  []ptt.Metric
	jvm      jvmIdentity
	env      [][]uint64           // environmental overhead per metric and key
	kept     [][]int64            // what calibration keeps of each key's minimum (calibration.Entry.Kept)
	tables   []*calibration.Table // calibration table per metric, nil without
	notes    []string             // header notes for every report

	vm     jvmti.VMThread  // attached thread for JVMTI calls from Go
	server *control.Server // nil until VMInit, or if no port was free
	source source          // the event source that feeds the engine

	mu  sync.Mutex // serialises collection control and file writing
	seq int        // N of the last log-rt.N_<pid> written
	// heapSeq and dumpSeq are the N of the last log-heap.N_<pid> and
	// log-hprof.N_<pid>.hprof written.
	heapSeq, dumpSeq int
	// written is how many events (since the last reset) the last log-rt
	// held: VM death writes a final one only if there are more now.
	written uint64
	dead    bool       // VM death has begun
	shut    bool       // rtdriver shutdown: no more collection
	shutAt  time.Time  // when rtdriver shut it down
	base    baseline   // counts at the last reset, nil if none
	files   []string   // files written, for status and log-msg
	gen     *genWriter // nil without GENERIC
	jit     *jitWriter // nil without JITA2N or PERFMAP
	// pending is a delayed start not yet fired (start=N), nil if none.
	pending *pendingStart
	// retired keeps the log-jtnm lines of threads freed before VM death.
	retired retiredThreads
	reaper  *drainer

	// outErr is why LOGPATH cannot be written; nothing is collected then
	// (START ignored, rtdriver start refused): a JVM whose every thread
	// runs interpreted must get a report for it.
	outErr error
	// later is the PTT being set up while the JVM initialises (nil once
	// VM init has waited for it); pttErr why that failed: nothing is
	// collected then.
	later  *pttLater
	pttErr error
	// mainClass is the program's main class or jar (sun.java.command).
	mainClass string
	loaded    time.Time // when the agent loaded
	live      bool      // loaded into a running JVM (Agent_OnAttach)
	// loads counts the loads of the library that reached this agent:
	// 1 for the one that made it, one more for each later load
	// (attachAgain). The status says it, so that a command that loaded
	// the library can tell whether its load made the agent (loads=1)
	// or reached one that was there (jprof: not its to detach).
	loads     int
	since     time.Time // when collection last started; zero when off
	lastStart time.Time // when collection last started, kept when it stops
	lastStop  time.Time // when collection last stopped; zero if never
	resetAt   time.Time // the last reset; zero if none
	// collectedSinceReset: collection ran at some time since the last
	// reset (or since the first start, without one).
	collectedSinceReset bool
	// baseAt is when the counts of the next log-rt start: the first start
	// of collection, the last reset or the last interval flush, as
	// baseKind says (the header's interval).
	baseAt   time.Time
	baseKind reports.IntervalCounts
	// baseCPU is the process's CPU time at baseAt (setBase), for the
	// header's word on what the rows do not hold.
	baseCPU time.Duration
	// sampleBase is SAMPLE's counters and the process CPU time while
	// sampling when the report's counts last restarted (a reset, an
	// interval flush): a report's header gives what they gained since.
	sampleBase    jvmti.SampleStats
	sampleBaseCPU time.Duration
	started       bool // collection was on at some time
	// profiledSinceDetach: collection started since the last detach
	// (whose reply tells what that start left alone).
	profiledSinceDetach bool
}

// source is an event source as the agent drives it: START and rtdriver
// start and stop the source, never a JVM event switch directly.
type source interface {
	Name() string
	Start() error
	Stop() error
	// Detach stops and takes the source out of the program (jvmti's
	// jp_source_ops.detach): what an attached profile leaves behind.
	Detach() error
}

// envGODEBUG is the GODEBUG the Go runtime saw.
func envGODEBUG() string { return os.Getenv("GODEBUG") }

// newAgent loads libjprof: at the JVM's start, or live (Agent_OnAttach)
// into a running JVM.
func newAgent(vm unsafe.Pointer, agentOpts, envOpts string, live bool) (*agent, error) {
	opts, err := ParseOptions(agentOpts, envOpts)
	if err != nil {
		return nil, attachError(err, live)
	}
	if live {
		if err := opts.checkLive(); err != nil {
			return nil, err
		}
	}
	// The agent's Go heap holds only transient report buffers and lives
	// in the JVM's process: keep its peak close to what is live (Go
	// allocates per report and per drain, never per event, so the extra
	// collections cost nothing measurable). GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25)
	}
	a := &agent{opts: opts, pid: os.Getpid(), loaded: time.Now(), live: live, loads: 1}
	a.log, a.closeLog, err = openLogMsg(opts, a.pid)
	if err == nil {
		said.setLog(a.log)
		closeLog := a.closeLog
		a.closeLog = func() { said.setLog(nil); closeLog() }
	}
	if err != nil {
		var stop error
		if a.outErr, stop = logPathError(opts, err); stop != nil {
			return nil, attachError(stop, live)
		}
	}
	a.log.Info("libjprof loading", zap.String("version", strings.TrimSpace(buildinfo.String("libjprof"))),
		zap.String("options", agentOpts), zap.String("JPROFOPTS", envOpts),
		zap.String("mode", opts.modeName()), zap.String("logpath", opts.LogPath))
	if !opts.RTDriver && !opts.Start {
		msg := "NORTDRIVER without START: nothing can be collected in this JVM; add START to the options, or drop NORTDRIVER and use rtdriver start"
		a.warn(msg)
	}

	if opts.BCI {
		for _, msg := range filterWarnings(opts.Include, opts.Exclude) {
			a.warn(msg)
			a.notes = append(a.notes, "Warning: "+msg)
		}
	}
	if off, why := asyncPreemptOff(); !off {
		msg := "Go asynchronous preemption is on: " + why + "; Java threads may receive SIGURG"
		a.warn(msg)
	}
	if err := a.setupPTT(a.laterPTT(live)); err != nil {
		a.log.Error("PTT setup failed", zap.Error(err))
		a.closeLog()
		return nil, err
	}
	// START with an unwritable LOGPATH is ignored (openLogMsg said so).
	// Attached, START waits for the attach to be complete (below).
	start := opts.Start && a.outErr == nil && !live
	if start {
		a.started, a.since, a.lastStart = true, a.loaded, a.loaded
		a.setBase(a.loaded, reports.CumulativeSinceStart)
		a.collectedSinceReset = true
	}
	cfg := jvmti.Config{Start: start, Calibrate: opts.Calibrate, LogGen: opts.genMode(),
		JIT: opts.JitA2N || opts.PerfMap, MaxMethods: opts.MaxMethods, EagerThreads: opts.ThreadInfo,
		VThreads: opts.VThreads, Sample: opts.Sample, Alloc: opts.Alloc, Lock: opts.Lock, Live: live,
		Note: func(msg string) {
			if m, ok := strings.CutPrefix(msg, "info: "); ok {
				a.log.Info(m)
				return
			}
			if m, ok := strings.CutPrefix(msg, "say: "); ok {
				say("libjprof: %s", m)
				msg = m
			}
			a.log.Warn(msg)
		}}
	a.source = jvmti.MethodEvents{}
	if opts.Roots != "" && !opts.BCI && opts.Sample == nil {
		cfg.Roots = opts.Roots
		a.notes = append(a.notes, "ROOTS: method events only on a thread inside a root method, from its entry to its return (that thread runs interpreted meanwhile; the rest of the program keeps the JIT)")
	}
	switch {
	case opts.Sample != nil:
		a.source = jvmti.Sampler{}
	case opts.Alloc != nil:
		a.source = jvmti.Allocs{}
	case opts.Lock != nil:
		a.source = jvmti.Locks{}
	case opts.BCI:
		a.source = jvmti.BCI{}
		cfg.BCI = &jvmti.BCIConfig{Include: opts.Include, Exclude: opts.Exclude, Roots: opts.Roots,
			AllMethods: opts.AllMethods, Natives: true, JLM: opts.JLM, FFMProbes: opts.FFMProbes}
		a.bciCache(cfg.BCI, live)
	}
	engine.SetLateRead(opts.LateRead)
	if err := jvmti.Setup(vm, a, cfg); err != nil {
		a.log.Error("JVMTI setup failed", zap.Error(err))
		a.closeLog()
		return nil, err
	}
	a.notes = append(a.notes, a.sourceNotes()...)
	a.jvm = readJVMIdentity()
	a.mainClass = mainClass(jvmti.SystemProperty("sun.java.command"))
	if a.later != nil {
		// The engine is set up: the PTT may be, and calibration after
		// it (it reads the JVM's identity, read above).
		a.beginLater()
	} else if opts.Calibrate && len(a.metrics) > 0 {
		if err := a.loadCalibration(); err != nil {
			a.log.Error("calibration setup failed", zap.Error(err))
			a.closeLog()
			return nil, err
		}
	}
	if opts.Generic {
		g, err := a.startLogGen()
		if err != nil {
			// Like an unwritable LOGPATH: said, and the JVM runs on.
			say("libjprof: %v", err)
			a.log.Error("log-gen not written", zap.Error(err))
		}
		a.gen = g
	}
	if opts.JitA2N || opts.PerfMap {
		a.jit = a.startJIT()
	}
	if live {
		a.notes = append(a.notes, "Attached to the running JVM at "+stamp(a.loaded)+": what ran before is not seen; "+liveNote(a.source))
		// VM init's work, on this (the attaching) thread: the rtdriver
		// socket, through which jprof drives the rest.
		if err := jvmti.LiveInit(); err != nil {
			a.log.Error("attach failed", zap.Error(err))
			return nil, err
		}
		if opts.Start && a.outErr == nil {
			if err := a.Start(0); err != nil {
				a.log.Error("START after attach failed", zap.Error(err))
				return nil, err
			}
		}
	}
	a.log.Info("libjprof loaded", zap.Bool("start", opts.Start), zap.Bool("attached", live))
	return a, nil
}

// attachError words an option error for an attach: the options came
// from jprof (its -e and -opts), and the JVM runs on without the agent.
func attachError(err error, live bool) error {
	if !live {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), originAgent, originAttach)
	msg = strings.ReplaceAll(msg, "so the JVM does not start", "so the agent is not loaded (the JVM runs on)")
	return errors.New(msg)
}

// VMReady implements jvmti.Preparer: at VM init, before the event source
// sets its Java side up (the first events come then).
func (a *agent) VMReady() { a.awaitPTT() }

// VMInit implements jvmti.Handler.
func (a *agent) VMInit() {
	a.log.Info("VM initialised", zap.Bool("collecting", engine.Collecting()), zap.String("source", a.source.Name()))
	if b, ok := a.source.(jvmti.BCI); ok {
		// Known once the agent's Java side is set up (bci.c, at VM init).
		a.notes = append(a.notes, "BCI: probes: "+b.Probes())
		if !a.opts.AllMethods {
			a.notes = append(a.notes, assertsNote(b.AssertsOff()))
		}
	}
	if a.opts.RTDriver {
		_ = a.startServer() // said and noted; the JVM runs on
	}
	a.reaper = startDrainer(retireEvery, a.retire)
	go engine.PrepareFence()
	a.sayState()
}

// sayState prints the one line that tells the user, at VM start, what
// this agent does: version, mode, metrics, PTT backend, event source,
// whether and how collection starts, the rtdriver address (only known
// once the socket is open, hence at VMInit) and where files go.
func (a *agent) sayState() {
	start := "rtdriver"
	switch {
	case a.outErr != nil:
		start = "never(LOGPATH-not-writable)"
	case a.started:
		start = "now"
	case !a.opts.RTDriver:
		start = "never(NORTDRIVER)"
	case a.server == nil:
		start = "never(no-rtdriver-socket)"
	}
	addr := a.serverAddrs()
	backend := a.pttName()
	line := fmt.Sprintf("mode=%s metrics=%s ptt=%s source=%s start=%s rtdriver=%s logpath=%s",
		a.opts.modeName(), a.metricNames(), backend, a.source.Name(), start, addr, a.opts.LogPath)

	a.mu.Lock() // rtdriver roots= may change them already
	roots := a.opts.Roots
	a.mu.Unlock()
	if _, ok := a.source.(rootSource); ok && roots != "" {
		n, what := a.rootsMatched(roots)
		line += fmt.Sprintf(" roots=%s (%s %s; more as classes load)", roots, methodsMatch(n), what)
	}
	say("libjprof %s: %s", version(), line)
	a.log.Info("libjprof state", zap.String("state", line))
	if _, ok := a.source.(jvmti.MethodEvents); ok {
		say("libjprof: note: %s", methodEventsShort)
	}
	if _, ok := a.source.(rootSource); ok && roots != "" {
		a.sayRootProblems(roots)
	}
}

// rootSource is an event source that collects only under root methods
// (ROOTS): RootMethods is how many methods of the loaded classes are
// roots now.
type rootSource interface{ RootMethods() int }

// version is the build's version (make sets it; "(devel)" otherwise).
func version() string {
	if buildinfo.Version != "" {
		return buildinfo.Version
	}
	return "(devel)"
}

// mainClass is the first word of sun.java.command: the main class, or
// the jar with -jar.
func mainClass(cmd string) string {
	if f := strings.Fields(cmd); len(f) > 0 {
		return f[0]
	}
	return "-"
}

// quiesce waits for the events under way when collection stopped
// (engine.Quiesce), so that the log-rt written next, and log-gen, end at
// the same event.
func (a *agent) quiesce() {
	if n := engine.Quiesce(); n > 0 {
		a.log.Warn("threads still in an event a second after collection stopped: their last events may be missing from the log-rt", zap.Int("threads", n))
	}
}

// VMDeath implements jvmti.Handler: the final log-rt.
func (a *agent) VMDeath() {
	a.mu.Lock() // a later load may open the server (attachAgain)
	srv := a.server
	a.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if a.shut {
		a.removeShutdownMarker()
	}
	if a.reaper != nil {
		a.reaper.Stop()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dead = true
	a.cancelPending()
	// Method events are already off (the C callback turned them off);
	// callbacks under way then end first.
	if a.started {
		a.quiesce()
	}
	// Whether anything happened since the last log-rt is counted, not
	// remembered: a flush racing VM death cannot tell whether collection
	// is still on. A JVM that never collected has no events: no file.
	var totals *threadSummary
	if ev := a.eventsSinceReset(); a.seq == 0 && ev == 0 {
		a.sayNothingCollected()
	} else if ev != a.written {
		t0 := time.Now()
		path, tt, err := a.writeLogRT(false)
		totals = tt
		if err != nil {
			say("libjprof: %v", err)
			a.log.Error("final log-rt not written", zap.Error(err))
		} else {
			a.log.Info("final log-rt written", zap.String("file", path), zap.Duration("took", time.Since(t0)))
		}
	}
	if a.gen != nil {
		path, n, err := a.gen.finish(a)
		if err != nil {
			say("libjprof: %v", err)
			a.log.Error("log-gen not written", zap.Error(err), zap.Uint64("events", n))
		} else {
			a.files = append(a.files, path)
			a.log.Info("log-gen written", zap.String("file", path), zap.Uint64("events", n),
				zap.Uint64("writerWaits", engine.GenWaits()), zap.String("finalDrainFence", engine.GenFence()))
		}
	}
	if a.opts.CalOut != "" {
		a.writeCalOut()
	}
	if a.jit != nil {
		a.jit.finish()
	}
	if a.opts.ThreadInfo {
		a.writeJtnm()
	}
	a.logThreadSummary(totals)
	a.logVirtualThreads()
	if b, ok := a.source.(jvmti.BCI); ok {
		st := b.Stats()
		a.log.Info("BCI summary", zap.Uint64("classesRewritten", st.Rewritten), zap.Uint64("classesLeftAsTheyWere", st.Failed),
			zap.Uint64("classesLeftForARunningLoop", st.KeptRunning), zap.Uint64("classesLeftInstrumentedAtDetach", st.KeptAtDetach),
			zap.Uint64("transformerCalls", st.Hooks), zap.Duration("transformerTime", st.HookTime),
			zap.Uint64("retransformCalls", st.Retransforms), zap.Duration("retransformTime", st.RetransformTime),
			zap.Uint64("firstRunsFollowed", st.Expands), zap.Uint64("probeCallsWhileNotCollecting", st.IdleCalls),
			zap.Duration("followTime", st.ExpandTime))
		if sz, ok := b.Sizes(); ok {
			// What the transformer keeps (README, Bounded memory).
			a.log.Info("BCI maps", zap.Uint64("methodNames", sz.MethodNames), zap.Uint64("classesKnown", sz.Classes),
				zap.Uint64("methodsDeclared", sz.Declared), zap.Uint64("methodsReached", sz.Reached),
				zap.Uint64("classesForgotten", sz.ClassesForgot), zap.Uint64("trivialMethodsLeftOut", sz.TrivialLeft),
				zap.Uint64("nativeMethodsWrapped", sz.NativesWrapped))
			if a.opts.BCICacheOn {
				a.log.Info("BCI cache", zap.String("dir", a.opts.BCICache), zap.Uint64("classesRead", sz.CacheHits),
					zap.Uint64("classesNotHeld", sz.CacheMisses), zap.Uint64("classesAdded", sz.CacheStored))
			}
		}
	}
	if r, ok := a.source.(rootSource); ok && a.opts.Roots != "" {
		fields := []zap.Field{zap.String("roots", a.opts.Roots), zap.Int("rootMethods", r.RootMethods())}
		if m, ok := r.(jvmti.MethodEvents); ok {
			fields = append(fields, zap.Uint64("rootEntriesNotCollected", m.Refused()))
			if n := m.Refused(); n > 0 {
				msg := fmt.Sprintf("ROOTS: %d root entries not collected: on virtual threads while VTHREADS is off, or the JVM refused to turn method events on for the thread", n)
				a.warn(msg)
			}
		}
		a.log.Info("ROOTS summary", fields...)
		if r.RootMethods() == 0 {
			msg := "ROOTS: no loaded method matched " + a.opts.Roots + ": nothing was collected"
			if _, bci := r.(jvmti.BCI); bci {
				msg = "ROOTS: no instrumented method matched " + a.opts.Roots + " (none loaded, or only in classes never instrumented: java.base, or left out by INCLUDE or EXCLUDE): nothing was collected"
			}
			a.warn(msg)
		}
	}
	a.log.Info("VM death")
	a.closeLog()
}

// fileName is <LOGPATH>/<LOGPREFIX>-<kind>[.<seq>]_<pid>.
func (a *agent) fileName(kind string, seq int) string {
	name := a.opts.LogPrefix + "-" + kind
	if seq > 0 {
		name += fmt.Sprintf(".%d", seq)
	}
	return filepath.Join(a.opts.LogPath, fmt.Sprintf("%s_%d", name, a.pid))
}

// pttName is the PTT backend the state line and status name: none for
// ALLOC and LOCK, whose metrics are the events' own, no thread's reading
// (the clock backend the agent keeps under them measures nothing).
func (a *agent) pttName() string {
	if a.opts.Alloc != nil || a.opts.Lock != nil {
		return "none"
	}
	return a.ptt.Backend.String()
}
