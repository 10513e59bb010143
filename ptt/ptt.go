package ptt

/*
#cgo CFLAGS: -O2 -Wall
#include "ptt.h"
#include "ptt_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"

	"github.com/libjprof/libjprof/ptt/pttbpf"
)

// Backend names a PTT mechanism.
type Backend int

const (
	None  Backend = C.JP_PTT_NONE
	Clock Backend = C.JP_PTT_CLOCK
	Perf  Backend = C.JP_PTT_PERF
	BPF   Backend = C.JP_PTT_BPF
)

func (b Backend) String() string {
	switch b {
	case None:
		return "none"
	case Clock:
		return "clock"
	case Perf:
		return "perf"
	case BPF:
		return "bpf"
	}
	return fmt.Sprintf("backend(%d)", int(b))
}

// ParseBackend maps an option value (bpf, perf, clock) to a Backend.
// "auto" and "" mean None: let Setup choose.
func ParseBackend(name string) (Backend, error) {
	switch strings.ToLower(name) {
	case "bpf", "ebpf":
		return BPF, nil
	case "perf":
		return Perf, nil
	case "clock":
		return Clock, nil
	case "auto", "":
		return None, nil
	}
	return None, fmt.Errorf("unknown PTT backend %q (valid: bpf, perf, clock, auto)", name)
}

// Metric is one per-thread metric the PTT can count.
type Metric int

const (
	Time   Metric = C.JP_M_TIME
	Insts  Metric = C.JP_M_INSTS
	Cycles Metric = C.JP_M_CYCLES
)

// MaxMetrics is how many metrics can be counted at once.
const MaxMetrics = C.JP_PTT_MAX_METRICS

// ParseMetric maps an option name (PTT_TIME, PTT_INSTS, PTT_CYCLES) to a Metric.
func ParseMetric(name string) (Metric, error) {
	switch strings.ToUpper(name) {
	case "PTT_TIME":
		return Time, nil
	case "PTT_INSTS":
		return Insts, nil
	case "PTT_CYCLES":
		return Cycles, nil
	}
	return 0, fmt.Errorf("unknown metric %q (valid: PTT_TIME, PTT_INSTS, PTT_CYCLES)", name)
}

func (m Metric) String() string {
	switch m {
	case Time:
		return "PTT_TIME"
	case Insts:
		return "PTT_INSTS"
	case Cycles:
		return "PTT_CYCLES"
	}
	return fmt.Sprintf("metric(%d)", int(m))
}

// Unit is the unit of the metric's values.
func (m Metric) Unit() string {
	switch m {
	case Time:
		return "ns"
	case Insts:
		return "instructions"
	case Cycles:
		return "cycles"
	}
	return "?"
}

// hardware says whether m needs a PMU counter.
func (m Metric) hardware() bool { return m == Insts || m == Cycles }

// Hardware says whether any of metrics counts in the CPU's PMU.
func Hardware(metrics []Metric) bool {
	for _, m := range metrics {
		if m.hardware() {
			return true
		}
	}
	return false
}

// ErrNoPMU is wrapped by Setup's error when a metric needs a hardware
// counter the machine does not have, so that a caller can fall back to
// PTT_TIME for an implied (not explicitly asked) metric.
var ErrNoPMU = errors.New("no hardware PMU")

// Config asks for a backend and metrics.
type Config struct {
	Metrics []Metric
	// Force names a backend to use instead of the best available;
	// None means choose automatically.
	Force Backend
	// Slots is the number of threads the bpf backend can serve at once;
	// 0 means pttbpf.DefaultSlots. Threads beyond it use the clock.
	Slots int
	// NoTSC makes the bpf and perf reads take CLOCK_MONOTONIC from the
	// vDSO on every read instead of scaling the TSC (see readClock).
	NoTSC bool
}

// Status says what Setup chose.
type Status struct {
	Backend       Backend
	HasDispatches bool
	HasInterrupts bool
	Notes         []string // limitations and fallbacks, for log-msg and report headers
	// Warnings repeat the Notes a user must not miss (stderr): a
	// backend that loaded but failed its set-up self-test.
	Warnings []string
}

// ErrSelfTest is wrapped by the error of a bpf set-up whose self-test
// failed: the programs loaded but do not count this process's threads.
var ErrSelfTest = errors.New("eBPF self-test failed")

// state is the process-wide backend state behind the C globals.
var state struct {
	sync.Mutex
	backend Backend
	bpf     *bpfState
}

// Setup chooses a backend for cfg and configures the C side. It must run
// before any method event is enabled. Calling it again replaces the
// previous backend (see Close).
func Setup(cfg Config) (Status, error) {
	if len(cfg.Metrics) > MaxMetrics {
		return Status{}, fmt.Errorf("ptt: %d metrics asked, at most %d", len(cfg.Metrics), MaxMetrics)
	}
	state.Lock()
	defer state.Unlock()
	closeLocked()

	if len(cfg.Metrics) == 0 {
		return Status{Backend: None}, nil
	}
	hw := false
	for _, m := range cfg.Metrics {
		switch {
		case m.hardware():
			hw = true
		case m != Time:
			return Status{}, fmt.Errorf("ptt: unknown metric %s", m)
		}
	}

	// Candidates, best first. Only perf can count hardware metrics.
	var order []Backend
	switch {
	case cfg.Force != None:
		order = []Backend{cfg.Force}
	case hw:
		order = []Backend{Perf}
	default:
		order = []Backend{BPF, Perf, Clock}
	}

	var notes, warnings []string
	for i, b := range order {
		st, err := setupLocked(b, cfg)
		if err == nil {
			st.Notes = append(notes, st.Notes...)
			st.Warnings = append(warnings, st.Warnings...)
			return st, nil
		}
		if i == len(order)-1 {
			return Status{}, err
		}
		note := fmt.Sprintf("PTT backend %s unavailable: %v.", b, err)
		notes = append(notes, note)
		// A broken self-test, and missing capabilities (the one
		// reason a user can fix at once), are said on stderr too.
		if errors.Is(err, ErrSelfTest) || errors.Is(err, pttbpf.ErrCaps) {
			warnings = append(warnings, note)
		}
	}
	panic("unreachable")
}

func setupLocked(b Backend, cfg Config) (Status, error) {
	switch b {
	case BPF:
		return setupBPF(cfg)
	case Perf:
		return setupPerf(cfg)
	case Clock:
		return setupClock(cfg)
	}
	return Status{}, fmt.Errorf("ptt: cannot force backend %s", b)
}

// publish writes the C configuration. The backend goes last: a thread
// that sees it also sees the rest (all before events are enabled anyway).
// It returns the note on the clock the reads use.
func publish(b Backend, cfg Config, dispatches, interrupts bool) string {
	note := ""
	C.jp_ptt.tsc_mult = 0
	C.jp_ptt.min_tick = 0
	if b == BPF || b == Perf {
		var mult, tick uint64
		mult, tick, note = readClock(cfg)
		C.jp_ptt.tsc_mult = C.uint64_t(mult)
		C.jp_ptt.min_tick = C.uint64_t(tick)
	}
	C.jp_ptt.nmetrics = C.int(len(cfg.Metrics))
	for i, m := range cfg.Metrics {
		C.jp_ptt.metric[i] = C.int(m)
	}
	C.jp_ptt.has_dispatches = cbool(dispatches)
	C.jp_ptt.has_interrupts = cbool(interrupts)
	C.jp_ptt.backend = C.int(b)
	state.backend = b
	return note
}

// readClock chooses how the bpf and perf reads take CLOCK_MONOTONIC, the
// clock their kernel-side stamps use: by scaling the TSC (jp_ptt_now) when
// the CPU says its TSC is invariant (constant_tsc, nonstop_tsc) and the
// kernel's own clock is the TSC's (clocksource tsc, or kvm-clock, which a
// KVM guest's kernel computes from the TSC); else by a vDSO clock read
// each time. A thread re-anchors at each dispatch, so TSCs of different
// CPUs are never compared and only the rate must hold: it is measured
// against the clock twice (over 2 ms each: the few-ns skew of a (TSC,
// clock) pair is then a few ppm) and the two must agree, and each later
// anchor checks it again (jp_ptt_tsc_check), going back to the vDSO read
// if it moved. The TSC's step (tick, in ns) is measured too: a time delta
// shorter than one step is not trusted to set a calibration minimum (the
// engine's "did not tick" rule).
func readClock(cfg Config) (mult, tick uint64, note string) {
	vdso := "PTT clock: each read takes CLOCK_MONOTONIC from the vDSO"
	if cfg.NoTSC {
		return 0, 0, vdso + " (NOTSC)."
	}
	b, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	cs := strings.TrimSpace(string(b))
	if cs != "tsc" && cs != "kvm-clock" {
		return 0, 0, fmt.Sprintf("%s: the kernel's clocksource is %q, not one computed from the TSC (tsc, kvm-clock).", vdso, cs)
	}
	if !cpuFlags("constant_tsc", "nonstop_tsc") {
		return 0, 0, vdso + ": the CPU does not report an invariant TSC (constant_tsc, nonstop_tsc)."
	}
	mult = uint64(C.jp_ptt_tsc_rate(2))
	again := uint64(C.jp_ptt_tsc_rate(2))
	if mult == 0 || again == 0 {
		return 0, 0, vdso + ": the TSC could not be measured against it."
	}
	if d := math.Abs(float64(again)-float64(mult)) / float64(mult); d > 200e-6 {
		return 0, 0, fmt.Sprintf("%s: two measures of the TSC's rate against it differ by %.0f ppm.", vdso, d*1e6)
	}
	mult = (mult + again) / 2
	C.jp_ptt_tsc_drifts = 0
	C.jp_ptt_tsc_drift_ppm = 0
	step := uint64(C.jp_ptt_tsc_step())
	tick = (step*mult + 1<<31) >> 32
	return mult, tick, fmt.Sprintf("PTT clock: reads scale the TSC to CLOCK_MONOTONIC (%.3f GHz measured; clocksource %s), anchored on a vDSO clock read "+
		"once per dispatch, the rate checked again at each anchor (NOTSC: a vDSO read every time). Two back-to-back TSC reads "+
		"differ by %d ticks (%d ns): shorter time deltas set no calibration minimum.", float64(1<<32)/float64(mult), cs, step, tick)
}

// ClockTSC says whether the bpf and perf reads scale the TSC now (false:
// a vDSO clock read each, from the start or since the rate moved).
func ClockTSC() bool {
	state.Lock()
	defer state.Unlock()
	return state.backend != Clock && state.backend != None && C.jp_ptt_tsc_mult_load() != 0
}

// cpuFlags says whether /proc/cpuinfo lists every one of flags.
func cpuFlags(flags ...string) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "flags") {
			continue
		}
		have := map[string]bool{}
		for _, f := range strings.Fields(line[strings.IndexByte(line, ':')+1:]) {
			have[f] = true
		}
		for _, f := range flags {
			if !have[f] {
				return false
			}
		}
		return true
	}
	return false
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func setupClock(cfg Config) (Status, error) {
	for _, m := range cfg.Metrics {
		if m.hardware() {
			return Status{}, fmt.Errorf("ptt: metric %s needs a hardware counter; the clock backend counts only PTT_TIME", m)
		}
	}
	_ = publish(Clock, cfg, false, false)
	return Status{Backend: Clock, Notes: []string{
		"PTT backend clock: CLOCK_THREAD_CPUTIME_ID, a syscall per read (~245 ns); " +
			"no dispatch or interrupt counts (getrusage(RUSAGE_THREAD) could count dispatches at ~190 ns/read, not used); " +
			"interrupt time not factored out.",
	}}, nil
}

// Announce tells the C side how many metrics, and which, a Setup still
// to come will configure, without a backend: what the engine sizes its
// nodes by when it is set up first (the agent loads the eBPF programs
// while the JVM initialises). No thread may read the PTT until Setup
// returns.
func Announce(metrics []Metric) error {
	if len(metrics) > MaxMetrics {
		return fmt.Errorf("ptt: %d metrics asked, at most %d", len(metrics), MaxMetrics)
	}
	state.Lock()
	defer state.Unlock()
	C.jp_ptt.nmetrics = C.int(len(metrics))
	for i, m := range metrics {
		C.jp_ptt.metric[i] = C.int(m)
	}
	return nil
}

// Configured returns the backend Setup configured (None when none).
func Configured() Backend {
	state.Lock()
	defer state.Unlock()
	return state.backend
}

// Close detaches the backend and returns the C side to no metrics.
// Threads must have called jp_ptt_thread_fini first: a bpf work area
// still in use is left mapped (not unmapped under its readers).
func Close() error {
	state.Lock()
	defer state.Unlock()
	return closeLocked()
}

func closeLocked() error {
	C.jp_ptt.backend = C.JP_PTT_NONE
	C.jp_ptt.nmetrics = 0
	C.jp_ptt.has_dispatches = 0
	C.jp_ptt.has_interrupts = 0
	state.backend = None
	var err error
	if state.bpf != nil {
		err = state.bpf.close()
		state.bpf = nil
	}
	return err
}

// Counters are the C side's running counts, for log-msg.
type Counters struct {
	// Fallbacks counts threads that got the clock instead of the
	// configured backend (no free slot, perf mmap refused, ...).
	Fallbacks uint64
	// PerfFallbacks counts the bpf threads without a slot that read
	// their own perf event (included in Fallbacks); the others read the
	// clock.
	PerfFallbacks uint64
	// NoSlot counts bpf registrations refused because all Slots were
	// in use (included in Fallbacks).
	NoSlot uint64
	// Unresolved counts bpf registrations of threads in a PID namespace
	// whose global tid the BPF side never resolved (no context switch
	// seen; included in Fallbacks).
	Unresolved uint64
	// TSCDrifts counts anchors that found the TSC's rate moved by more
	// than 0.1% against the clock; the first turned the TSC path off
	// (ClockTSC), by TSCDriftPPM.
	TSCDrifts, TSCDriftPPM uint64
	// SlotsInUse (held by this process) and Slots describe the bpf
	// work area.
	SlotsInUse, Slots uint64
	// BPF are the eBPF programs' counters (zero unless this process
	// loaded them).
	BPF pttbpf.Stats
}

// ReadCounters returns the current Counters.
func ReadCounters() Counters {
	c := Counters{
		Fallbacks:     uint64(C.jp_ptt_fallbacks_load()),
		PerfFallbacks: uint64(C.jp_ptt_perf_fallbacks_load()),
		TSCDrifts:     uint64(C.jp_ptt_tsc_drifts_load()),
		TSCDriftPPM:   uint64(C.jp_ptt_tsc_drift_ppm_load()),
		NoSlot:        uint64(C.jp_ptt_bpf_no_slot()),
		Unresolved:    uint64(C.jp_ptt_bpf_unresolved()),
		SlotsInUse:    uint64(C.jp_ptt_bpf_in_use()),
		Slots:         uint64(C.jp_ptt_bpf_nslots()),
	}
	state.Lock()
	defer state.Unlock()
	if state.bpf != nil && state.bpf.objs != nil {
		c.BPF, _ = state.bpf.objs.Stats() // diagnostics only
	}
	return c
}
