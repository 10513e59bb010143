package main

// The agent's per-thread metrics: choosing the PTT backend and its
// metrics at start (from a jprof pttd's work area when asked), and what
// the reports say of the clock the reads took.

import (
	"fmt"
	"os"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/ptt"
	"github.com/libjprof/libjprof/ptt/ptthelper"
)

// setupPTT asks the PTT for the metrics the options imply, falling back to
// thread time (with a warning) when an implied default cannot be counted.
// With later, thread time on the best backend is set up after the load
// returns (setupPTTLater): hardware counters, and a fallback from them,
// are still decided here.
func (a *agent) setupPTT(later bool) error {
	plan := a.opts.plan()
	later = later && len(plan.want) > 0 // without metrics there is nothing to load
	if later && !ptt.Hardware(plan.want) {
		return a.setupPTTLater(plan.want)
	}
	st, extra, err := a.pttSetup(plan.want)
	a.notes = append(a.notes, extra...)
	if err != nil && plan.fallback != nil {
		msg := fmt.Sprintf("%s's default metrics %v cannot be counted here (%v); using %v instead",
			a.opts.Mode, plan.want, err, plan.fallback)
		// Every run on a machine without a PMU (the README's demo on
		// most VMs) says this: one short line on stderr, the details
		// in log-msg and the log-rt header.
		say("libjprof: warning: %v not countable here; using %v (why: log-msg, log-rt header)",
			plan.want, plan.fallback)
		a.log.Warn(msg)
		a.notes = append(a.notes, "Warning: "+msg)
		plan.want = plan.fallback
		if later && !ptt.Hardware(plan.want) {
			return a.setupPTTLater(plan.want)
		}
		st, extra, err = a.pttSetup(plan.want)
		a.notes = append(a.notes, extra...)
	}
	if err != nil {
		return fmt.Errorf("metrics %v: %w", plan.want, err)
	}
	a.metrics = plan.want
	a.notes = append(a.notes, a.pttReady(st)...)
	return nil
}

// pttReady takes the PTT set up for a.metrics and returns the notes the
// reports carry about it.
func (a *agent) pttReady(st ptt.Status) []string {
	for _, w := range st.Warnings {
		a.warn(w)
	}
	a.ptt = st
	a.pttTSC = ptt.ClockTSC()
	a.log.Info("PTT ready", zap.Stringer("backend", st.Backend), zap.Strings("notes", st.Notes),
		zap.Stringers("ptt", a.metrics), zap.String("metrics", a.metricNames()))
	// A sampled tree's time is read by the signal handler, not the
	// PTT: the PTT's notes would describe what is not used.
	if len(a.metrics) > 0 && !a.opts.sampledTree() {
		return st.Notes
	}
	return nil
}

// pttLater is a PTT set up while the JVM initialises: loading and
// verifying the eBPF programs takes tens of ms, which the JVM's own
// start-up (its classes, its threads) then hides on another CPU.
type pttLater struct {
	done  chan struct{} // closed when the PTT and calibration are set up
	begin chan struct{} // closed by the load once the engine is set up
	err   error
	notes []string // the PTT's, placed where a set-up at load puts them
	at    int
	cal   []string // calibration's, placed after the load's notes
	took  time.Duration
}

// laterPTT says whether this load may set the PTT up later: an event
// source that makes no event before VM init (BCI loaded at start; with
// THREADINFO threads get their records, with PTT reads, as they start),
// the backend left to the agent (a backend or pttd asked for that cannot
// be had stops the JVM, as it must at load), and no CALTABLE (one that
// does not fit stops it too).
func (a *agent) laterPTT(live bool) bool {
	o := a.opts
	return o.BCI && !live && !o.ThreadInfo && o.PTT == ptt.None && o.PTTD == "" && o.CalTable == "" &&
		o.Sample == nil && o.Alloc == nil && o.Lock == nil && !o.Generic
}

// setupPTTLater announces metrics to the engine and sets the PTT up on
// another thread once the load has set the engine up (beginLater);
// awaitPTT waits for it.
func (a *agent) setupPTTLater(metrics []ptt.Metric) error {
	if err := ptt.Announce(metrics); err != nil {
		return err
	}
	a.metrics = metrics
	l := &pttLater{done: make(chan struct{}), begin: make(chan struct{}), at: len(a.notes)}
	a.later = l
	go func() {
		defer close(l.done)
		<-l.begin
		t0 := time.Now()
		st, extra, err := a.pttSetup(metrics)
		if err != nil {
			// Not expected: the clock, the last backend tried, counts
			// thread time anywhere.
			msg := fmt.Sprintf("PTT: set-up failed (%v); reading the thread clock", err)
			a.warn(msg)
			extra = append(extra, "Warning: "+msg)
			st, err = ptt.Setup(ptt.Config{Metrics: metrics, Force: ptt.Clock})
		}
		if err != nil {
			l.err = fmt.Errorf("metrics %v: %w", metrics, err)
			return
		}
		l.notes = append(extra, a.pttReady(st)...)
		if a.opts.Calibrate && len(metrics) > 0 {
			cal, err := a.readCalibration()
			if err != nil {
				msg := fmt.Sprintf("calibration: the built-in table could not be set (%v): minima from this run only", err)
				a.warn(msg)
				cal = append(cal, "Warning: "+msg)
			}
			l.cal = cal
		}
		l.took = time.Since(t0)
	}()
	return nil
}

// beginLater lets the PTT's set-up begin, once the load has set the
// engine up (which reads the announced metrics).
func (a *agent) beginLater() {
	if a.later != nil {
		close(a.later.begin)
	}
}

// awaitPTT waits, at VM init, for a PTT set up while the JVM initialised,
// before any event can read it. Where no backend at all could be had,
// not even the thread clock (which cannot fail for thread time), the JVM
// runs on: nothing is collected, and the reason is said on stderr and in
// log-msg.
func (a *agent) awaitPTT() {
	l := a.later
	if l == nil {
		return
	}
	t0 := time.Now()
	<-l.done
	a.later = nil
	waited := time.Since(t0)
	a.notes = slices.Insert(a.notes, l.at, l.notes...)
	a.notes = append(a.notes, l.cal...)
	a.log.Info("PTT set up while the JVM initialised", zap.Duration("took", l.took), zap.Duration("waitedAtVMInit", waited))
	if l.err != nil {
		msg := fmt.Sprintf("no PTT backend could be set up (%v): nothing is collected in this JVM", l.err)
		a.log.Error(msg)
		say("libjprof: error: %s", msg)
		a.notes = append(a.notes, "Warning: "+msg)
		a.mu.Lock()
		a.pttErr = l.err
		if a.started {
			_ = a.source.Stop()
			a.started, a.since = false, time.Time{}
		}
		a.mu.Unlock()
	}
}

// pttSetup configures the PTT for metrics. The eBPF work area comes from
// a jprof pttd when PTTD= names one, or when this JVM cannot load the
// programs itself and a pttd listens at the default socket; otherwise
// ptt.Setup picks the best backend this process can have.
//
// Its notes are warnings for the reports beyond the Status's.
func (a *agent) pttSetup(metrics []ptt.Metric) (ptt.Status, []string, error) {
	cfg := ptt.Config{Metrics: metrics, Force: a.opts.PTT, NoTSC: a.opts.NoTSC, Slots: a.opts.PTTSlots}
	// The bpf backend counts thread time only: a pttd cannot serve
	// hardware counters.
	wantBPF := len(metrics) > 0 && !ptt.Hardware(metrics) && (cfg.Force == ptt.None || cfg.Force == ptt.BPF)
	sock := a.opts.PTTD
	if sock == "" {
		st, err := ptt.Setup(cfg)
		if err != nil || st.Backend == ptt.BPF || !wantBPF {
			return st, nil, err
		}
		if _, serr := os.Stat(ptthelper.DefaultSocket); serr != nil {
			return st, nil, nil
		}
		ptt.Close()
		sock = ptthelper.DefaultSocket
	}
	if wantBPF {
		st, err := a.pttFromHelper(cfg, sock)
		if err == nil {
			return st, nil, nil
		}
		msg := fmt.Sprintf("PTT: jprof pttd at %s not usable (%v); using the best backend this JVM can load", sock, err)
		a.warn(msg)
		st, err = ptt.Setup(cfg)
		return st, []string{"Warning: " + msg}, err
	}
	st, err := ptt.Setup(cfg)
	return st, nil, err
}

func (a *agent) pttFromHelper(cfg ptt.Config, sock string) (ptt.Status, error) {
	lease, err := ptthelper.Fetch(sock)
	if err != nil {
		return ptt.Status{}, err
	}
	st, err := ptt.SetupFromFDs(cfg, lease.SlotsFD, lease.TidsFD, lease.Owner)
	if err != nil {
		lease.Close()
		return st, err
	}
	a.pttLease = lease
	st.Notes = append(st.Notes, "PTT bpf work area from jprof pttd at "+sock)
	return st, nil
}

// tscDriftNote says, once the TSC path turned itself off, when reads went
// to the vDSO clock; the first time also on stderr and in log-msg.
func (a *agent) tscDriftNote() string {
	if !a.pttTSC {
		return ""
	}
	c := ptt.ReadCounters()
	if c.TSCDrifts == 0 {
		return ""
	}
	n := fmt.Sprintf("Warning: PTT: the TSC's rate moved by %d ppm against CLOCK_MONOTONIC during the run (a VM moved to another host?): "+
		"reads took the vDSO clock from then on, which costs more than the calibration tables of TSC reads remove: later events' times read high", c.TSCDriftPPM)
	a.tscWarn.Do(func() {
		say("libjprof: %s", n)
		a.log.Warn(n)
	})
	return n
}
