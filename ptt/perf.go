package ptt

/*
#include "ptt.h"
#include "ptt_internal.h"
*/
import "C"

import (
	"fmt"
	"syscall"
)

func perfEventName(m Metric) string {
	switch m {
	case Insts:
		return "PERF_COUNT_HW_INSTRUCTIONS"
	case Cycles:
		return "PERF_COUNT_HW_CPU_CYCLES"
	}
	return "PERF_COUNT_SW_DUMMY"
}

// probePerf opens (and closes) the event metric m needs on the calling
// thread, saying why it cannot be counted if so.
func probePerf(m Metric, excludeKernel bool) error {
	r := C.jp_ptt_perf_probe(C.int(m), cbool(excludeKernel))
	if r == 0 {
		return nil
	}
	err := syscall.Errno(-r)
	if err == syscall.ENOENT && m.hardware() {
		return fmt.Errorf("ptt: metric %s: perf_event_open(%s) returned ENOENT: %w on this host",
			m, perfEventName(m), ErrNoPMU)
	}
	return fmt.Errorf("ptt: metric %s: perf_event_open(%s): %w", m, perfEventName(m), err)
}

// setupPerf checks that this process can open the per-thread events
// every thread will open for itself at jp_ptt_thread_init.
func setupPerf(cfg Config) (Status, error) {
	if err := probePerf(Time, true); err != nil {
		return Status{}, err
	}
	excl := false
	var notes []string
	for _, m := range cfg.Metrics {
		if !m.hardware() {
			continue
		}
		err := probePerf(m, excl)
		if err != nil && !excl {
			// perf_event_paranoid >= 2 without CAP_PERFMON: user-only counts.
			if errUser := probePerf(m, true); errUser == nil {
				excl = true
				notes = append(notes, fmt.Sprintf("PTT perf: hardware metrics count user mode only (kernel counting refused: %v).", err))
				err = nil
			}
		}
		if err != nil {
			return Status{}, err
		}
	}
	C.jp_ptt_perf_exclude_kernel = cbool(excl)
	dispatches := perfCountsDispatches(cfg.Metrics)
	clock := publish(Perf, cfg, dispatches, false)

	ut := "cap_user_time is 0 here, which the record-based read does not need"
	if C.jp_ptt_perf_user_time() == 1 {
		ut = "cap_user_time is available but not needed"
	}
	ds := "dispatch counts from the switch records"
	if dispatches {
		notes = append(notes, clock)
	} else {
		ds = "no dispatch counts (they come with PTT_TIME, which is not asked)"
	}
	return Status{Backend: Perf, HasDispatches: dispatches, Notes: append([]string{
		"PTT backend perf: thread time from each thread's SW_DUMMY event (time_running at the last switch-in plus " +
			"CLOCK_MONOTONIC since its PERF_RECORD_SWITCH), " + ut + "; " +
			ds + "; interrupts not counted; interrupt time not factored out.",
		"PTT perf: one FD and two mmapped pages per thread; threads whose mmap is refused " +
			"(perf_event_mlock_kb) fall back to the clock backend (counted in log-msg).",
	}, notes...)}, nil
}

// perfCountsDispatches says whether the perf backend makes dispatch
// counts for metrics: jp_ptt_perf_read takes them from the switch
// records of the PTT_TIME column, so hardware metrics alone have none.
func perfCountsDispatches(metrics []Metric) bool {
	for _, m := range metrics {
		if m == Time {
			return true
		}
	}
	return false
}
