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
	"unsafe"

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
	st, err := attachBPF(cfg, objs.Slots.FD(), objs.Tids.FD(), C.JP_PTT_OWNER_SELF)
	if err != nil {
		objs.Close()
		return Status{}, err
	}
	state.bpf.objs = objs
	st.Notes = append(st.Notes, fmt.Sprintf(
		"PTT bpf: %s programs on sched_switch and interrupt points %s%s.",
		objs.Mode, strings.Join(objs.Points, ", "), missing(objs.Missing)))
	if !objs.RenameTrigger {
		st.Notes = append(st.Notes, "PTT bpf: no task_rename tracepoint on this kernel: "+
			"in a PID namespace each thread blocks until its next switch-in at its start.")
	}
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
//
// owner is the token this process claims work-area slots under; it must
// be non-zero and differ from that of every other process sharing the
// area (jprof pttd hands one to each client: ptthelper.Lease.Owner).
func SetupFromFDs(cfg Config, slotsFD, tidsFD int, owner uint32) (Status, error) {
	if len(cfg.Metrics) > MaxMetrics {
		return Status{}, fmt.Errorf("ptt: %d metrics asked, at most %d", len(cfg.Metrics), MaxMetrics)
	}
	if err := checkTimeOnly(BPF, cfg); err != nil {
		return Status{}, err
	}
	state.Lock()
	defer state.Unlock()
	closeLocked()
	if owner == 0 {
		return Status{}, errors.New("ptt: owner token 0 is reserved for free slots")
	}
	return attachBPF(cfg, slotsFD, tidsFD, owner)
}

func attachBPF(cfg Config, slotsFD, tidsFD int, owner uint32) (Status, error) {
	if r := C.jp_ptt_bpf_attach(C.int(slotsFD), C.int(tidsFD), C.uint32_t(owner)); r != 0 {
		err := syscall.Errno(-r)
		if err == syscall.EINVAL {
			return Status{}, fmt.Errorf("ptt: map FD %d is not a PTT work area (bad header)", slotsFD)
		}
		if err == syscall.ENOENT {
			return Status{}, fmt.Errorf("ptt: /proc/self/ns/pid: %w (the PID namespace must be known to register threads)", err)
		}
		return Status{}, fmt.Errorf("ptt: map the bpf work area: %w", err)
	}
	// The set-up self-test: before any thread relies on the work area,
	// check on this thread that the programs really count for this
	// process (a dispatch seen, a sleep not charged).
	why := make([]byte, 256)
	if r := C.jp_ptt_bpf_selftest((*C.char)(unsafe.Pointer(&why[0])), C.size_t(len(why))); r != 0 {
		C.jp_ptt_bpf_detach()
		return Status{}, fmt.Errorf("ptt: %w: %s", ErrSelfTest, C.GoString((*C.char)(unsafe.Pointer(&why[0]))))
	}
	state.bpf = &bpfState{}
	clock := publish(BPF, cfg, true, true)
	n := uint64(C.jp_ptt_bpf_nslots())
	var ns []string
	if ino := uint32(C.jp_ptt_bpf_pidns()); ino != 0 {
		ns = []string{fmt.Sprintf("PTT bpf: this process runs in a PID namespace (pid:[%d]); each thread registers "+
			"under its namespace tid and, at its start, renames itself to its own name so that the eBPF programs "+
			"(task_rename, else its next switch-in) fill in its global tid "+
			"(threads never resolved use the clock backend, counted in log-msg).", ino)}
	}
	return Status{Backend: BPF, HasDispatches: true, HasInterrupts: true, Notes: append([]string{
		"PTT backend bpf: eBPF work area mapped into the process; dispatch and interrupt counts; " +
			"asynchronous interrupt time (hard IRQs, softirqs, timer and IPI vectors) factored out; " +
			"a read is a CLOCK_MONOTONIC read (see the clock note) and a few loads, no syscall; " +
			"time a hypervisor steals from the vCPU while the thread is on it counts as thread time.",
		fmt.Sprintf("PTT bpf: %d thread slots; threads beyond that read their own perf event, or the clock where perf is refused (counted in log-msg, named in the report); "+
			"softirqs run in a thread's own context (local_bh_enable) count as interrupts.", n),
		"PTT bpf: set-up self-test passed (a registered thread's 5 ms sleep was seen as a dispatch and not charged).",
		clock,
	}, ns...)}, nil
}
