package ptt

/*
#include "ptt.h"
#include "ptt_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/libjprof/libjprof/ptt/pttbpf"
)

// bpfState is what the bpf backend holds while it is configured.
type bpfState struct {
	objs *pttbpf.Objects // nil when the maps came from SetupFromFDs
}

func (s *bpfState) close() error {
	var errs []error
	if r := C.jp_ptt_bpf_detach(); r != 0 {
		errs = append(errs, fmt.Errorf("ptt: bpf work area left mapped: %w (threads still registered)", syscall.Errno(-r)))
	}
	if s.objs != nil {
		errs = append(errs, s.objs.Close())
	}
	return errors.Join(errs...)
}

func checkTimeOnly(b Backend, cfg Config) error {
	for _, m := range cfg.Metrics {
		if m != Time {
			return fmt.Errorf("ptt: metric %s: the %s backend counts only PTT_TIME", m, b)
		}
	}
	return nil
}

// setupBPF loads and attaches the programs (needs CAP_BPF+CAP_PERFMON)
// and hands the maps to the C side.
func setupBPF(cfg Config) (Status, error) {
	if err := checkTimeOnly(BPF, cfg); err != nil {
		return Status{}, err
	}
	objs, err := pttbpf.Load(pttbpf.Options{Slots: cfg.Slots})
	if err != nil {
		return Status{}, fmt.Errorf("ptt: load eBPF programs: %w", err)
	}
	st, err := attachBPF(cfg, objs.Slots.FD(), objs.Tids.FD())
	if err != nil {
		objs.Close()
		return Status{}, err
	}
	state.bpf.objs = objs
	st.Notes = append(st.Notes, fmt.Sprintf(
		"PTT bpf: %s programs on sched_switch and interrupt points %s%s.",
		objs.Mode, strings.Join(objs.Points, ", "), missing(objs.Missing)))
	if !objs.Healer {
		st.Notes = append(st.Notes, "PTT bpf: no sched_exit_tp on this kernel: "+
			"a switch-in sched_switch does not trace loses that time slice.")
	}
	return st, nil
}

func missing(m []string) string {
	if len(m) == 0 {
		return ""
	}
	return " (not on this kernel: " + strings.Join(m, ", ") + ")"
}

// SetupFromFDs configures the bpf backend from the map FDs of programs
// loaded elsewhere, e.g. by a privileged helper that passed them over a
// unix socket: the work area (slotsFD, BPF_F_MMAPABLE, header filled in)
// and the tid->slot hash (tidsFD). Holding the FDs needs no privilege.
// The FDs stay owned by the caller and must stay open until Close.
func SetupFromFDs(cfg Config, slotsFD, tidsFD int) (Status, error) {
	if len(cfg.Metrics) > MaxMetrics {
		return Status{}, fmt.Errorf("ptt: %d metrics asked, at most %d", len(cfg.Metrics), MaxMetrics)
	}
	if err := checkTimeOnly(BPF, cfg); err != nil {
		return Status{}, err
	}
	state.Lock()
	defer state.Unlock()
	closeLocked()
	return attachBPF(cfg, slotsFD, tidsFD)
}

func attachBPF(cfg Config, slotsFD, tidsFD int) (Status, error) {
	if r := C.jp_ptt_bpf_attach(C.int(slotsFD), C.int(tidsFD)); r != 0 {
		err := syscall.Errno(-r)
		if err == syscall.EINVAL {
			return Status{}, fmt.Errorf("ptt: map FD %d is not a PTT work area (bad header)", slotsFD)
		}
		return Status{}, fmt.Errorf("ptt: map the bpf work area: %w", err)
	}
	state.bpf = &bpfState{}
	publish(BPF, cfg, true, true)
	n := uint64(C.jp_ptt_bpf_nslots())
	return Status{Backend: BPF, HasDispatches: true, HasInterrupts: true, Notes: []string{
		"PTT backend bpf: eBPF work area mapped into the process; dispatch and interrupt counts; " +
			"asynchronous interrupt time (hard IRQs, softirqs, timer and IPI vectors) factored out; " +
			"a read is a vDSO CLOCK_MONOTONIC read and a few loads, no syscall; " +
			"time a hypervisor steals from the vCPU while the thread is on it counts as thread time.",
		fmt.Sprintf("PTT bpf: %d thread slots; threads beyond that fall back to the clock backend (counted in log-msg); "+
			"softirqs run in a thread's own context (local_bh_enable) count as interrupts.", n),
	}}, nil
}
