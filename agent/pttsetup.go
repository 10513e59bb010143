package main

// The agent's per-thread metrics: choosing the PTT backend and its
// metrics at start (from a jprof pttd's work area when asked), and what
// the reports say of the clock the reads took.

import (
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/ptt"
	"github.com/libjprof/libjprof/ptt/ptthelper"
)

// setupPTT asks the PTT for the metrics the options imply, falling back to
// thread time (with a warning) when an implied default cannot be counted.
func (a *agent) setupPTT() error {
	plan := a.opts.plan()
	st, err := a.pttSetup(plan.want)
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
		st, err = a.pttSetup(plan.want)
	}
	if err != nil {
		return fmt.Errorf("metrics %v: %w", plan.want, err)
	}
	for _, w := range st.Warnings {
		a.warn(w)
	}
	a.ptt = st
	a.pttTSC = ptt.ClockTSC()
	a.metrics = plan.want
	// A sampled tree's time is read by the signal handler, not the
	// PTT: the PTT's notes would describe what is not used.
	if len(plan.want) > 0 && !a.opts.sampledTree() {
		a.notes = append(a.notes, st.Notes...)
	}
	a.log.Info("PTT ready", zap.Stringer("backend", st.Backend), zap.Strings("notes", st.Notes),
		zap.Stringers("ptt", plan.want), zap.String("metrics", a.metricNames()))
	return nil
}

// pttSetup configures the PTT for metrics. The eBPF work area comes from
// a jprof pttd when PTTD= names one, or when this JVM cannot load the
// programs itself and a pttd listens at the default socket; otherwise
// ptt.Setup picks the best backend this process can have.
func (a *agent) pttSetup(metrics []ptt.Metric) (ptt.Status, error) {
	cfg := ptt.Config{Metrics: metrics, Force: a.opts.PTT, NoTSC: a.opts.NoTSC, Slots: a.opts.PTTSlots}
	wantBPF := len(metrics) > 0 && (cfg.Force == ptt.None || cfg.Force == ptt.BPF)
	sock := a.opts.PTTD
	if sock == "" {
		st, err := ptt.Setup(cfg)
		if err != nil || st.Backend == ptt.BPF || !wantBPF {
			return st, err
		}
		if _, serr := os.Stat(ptthelper.DefaultSocket); serr != nil {
			return st, nil
		}
		ptt.Close()
		sock = ptthelper.DefaultSocket
	}
	if wantBPF {
		st, err := a.pttFromHelper(cfg, sock)
		if err == nil {
			return st, nil
		}
		msg := fmt.Sprintf("PTT: jprof pttd at %s not usable (%v); using the best backend this JVM can load", sock, err)
		a.warn(msg)
		a.notes = append(a.notes, "Warning: "+msg)
	}
	return ptt.Setup(cfg)
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
