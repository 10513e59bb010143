package ptt

/*
#include "ptt.h"
*/
import "C"

import (
	"fmt"
	"strings"
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

// Config asks for a backend and metrics.
type Config struct {
	Metrics []Metric
	// Force names a backend to use instead of the best available;
	// None means choose automatically.
	Force Backend
}

// Status says what Setup chose.
type Status struct {
	Backend        Backend
	HasDispatches  bool
	HasInterrupts  bool
	Notes          []string // limitations and fallbacks, for log-msg and report headers
}

// Setup chooses a backend for cfg and configures the C side. It must run
// before any method event is enabled.
func Setup(cfg Config) (Status, error) {
	if len(cfg.Metrics) > MaxMetrics {
		return Status{}, fmt.Errorf("ptt: %d metrics asked, at most %d", len(cfg.Metrics), MaxMetrics)
	}
	if len(cfg.Metrics) == 0 {
		C.jp_ptt.backend = C.JP_PTT_NONE
		C.jp_ptt.nmetrics = 0
		return Status{Backend: None}, nil
	}
	for _, m := range cfg.Metrics {
		if m != Time {
			return Status{}, fmt.Errorf("ptt: metric %s needs a hardware PMU counter, not available with the clock backend", m)
		}
	}
	if cfg.Force != None && cfg.Force != Clock {
		return Status{}, fmt.Errorf("ptt: backend %s is not built yet", cfg.Force)
	}
	C.jp_ptt.backend = C.JP_PTT_CLOCK
	C.jp_ptt.nmetrics = C.int(len(cfg.Metrics))
	for i, m := range cfg.Metrics {
		C.jp_ptt.metric[i] = C.int(m)
	}
	C.jp_ptt.has_dispatches = 0
	C.jp_ptt.has_interrupts = 0
	return Status{Backend: Clock, Notes: []string{
		"PTT backend clock: CLOCK_THREAD_CPUTIME_ID syscall per read; no dispatch or interrupt counts; interrupt time not factored out",
	}}, nil
}
