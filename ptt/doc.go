// Package ptt is libjprof's Per-Thread Time facility: per-thread metric
// values (thread CPU time, and hardware counters where a PMU exists) with
// counts of dispatches and interrupts, read from the agent's C hot path.
//
// The reads themselves are C (ptt.h), inlined into the hot path, because a
// Go call per event costs more than the whole event budget. Go chooses and
// configures the backend (Setup, SetupFromFDs, Close) and reports on it.
//
// # Backends
//
// Setup picks the best available one, or the one Config.Force names
// (ParseBackend maps the PTT= option), and says which in Status.Notes.
//
//   - bpf: eBPF programs (package pttbpf; tp_btf, or raw_tp where tp_btf
//     does not load) on sched_switch, on the asynchronous interrupt entry
//     and exit points (hard IRQs, softirqs, local timer, IPIs, irq_work)
//     and on sched_exit_tp keep per-thread slots in a BPF_F_MMAPABLE
//     array mapped into the process. Full PTT semantics: dispatch and
//     interrupt counts, interrupt time factored out. A read is a
//     CLOCK_MONOTONIC read (see The clock) and a few loads (BENCHMARKS.md
//     has its cost beside bare clock reads). Loading needs CAP_BPF+CAP_PERFMON; registering
//     threads needs only the two map FDs, so a privileged helper can load
//     the programs and pass the FDs to SetupFromFDs.
//   - perf: per-thread SW_DUMMY event with context_switch=1. Thread time
//     is time_running at the last switch-in plus CLOCK_MONOTONIC since the
//     switch-in record, which needs no cap_user_time (0 on virtual machines
//     with kvm-clock);
//     dispatches are counted from the switch records; interrupts are not
//     seen. Hardware metrics (PTT_INSTS, PTT_CYCLES) are read with rdpmc
//     where a PMU exists; without one Setup fails with ErrNoPMU.
//   - clock: CLOCK_THREAD_CPUTIME_ID, a syscall per read, no counts.
//
// # The work area (bpf)
//
// See ptt_slot.h. Element 0 of the array is a header (magic, a generation
// counter, the slot count, the pending registrations); elements 1..n are
// 64-byte slots, one per registered thread: seq, dispatches, interrupts,
// run_ns (on-CPU time of finished dispatches), last_in (switch-in time
// of the current dispatch, 0 when off CPU), irq_ns (interrupt time taken
// on CPU), irq_start (interrupt in progress), tid, owner. The BPF side
// brackets every slot update with two increments of seq; the reader
// (jp_ptt_bpf_slot_read) is the Performance Inspector's retry loop
// (README, References: [PI]): read seq and the
// counts, the clock and the slot, re-read seq, retry while it changed or
// was odd, then
//
//	time = run_ns + (now - last_in) - irq_ns - (now - irq_start)
//
// (the terms in parentheses only when last_in or irq_start is set).
//
// jp_ptt_thread_init on the thread claims a slot with a compare-and-swap
// of its owner word in the shared area (processes sharing one jprof pttd
// each claim under their own owner token), registers the thread's tid
// for it and starts the clock; jp_ptt_thread_fini undoes that. A thread
// that finds no free slot falls back to the clock (ReadCounters().NoSlot).
//
// The programs know a thread by its tid in the initial PID namespace. A
// process in another PID namespace (a container) cannot learn that tid,
// so its threads register under (namespace inode, namespace tid) and the
// programs, which compute that pair from the task, fill in the global
// tid when the thread renames itself to its own name (task_rename; or
// at its next switch-in, the thread blocking briefly, on kernels
// without that tracepoint).
// Setup checks it all on one thread first (a dispatch seen across a
// 5 ms sleep, the sleep not charged) and otherwise does not use bpf.
//
// # Limits
//
// Time a hypervisor steals from the vCPU while the thread is on it counts
// as thread time with the bpf and perf backends (the kernel leaves it out
// of CLOCK_THREAD_CPUTIME_ID under PARAVIRT_TIME_ACCOUNTING, but user
// space cannot read the steal clock, so subtracting it would make
// readings go backwards). This VM's kernel does not trace switches away
// from the sandbox's own tasks; the sched_exit_tp program catches the
// switch-ins sched_switch misses (ReadCounters().BPF.HealedSwitchIns).
//
// # The clock
//
// Both bpf and perf add CLOCK_MONOTONIC elapsed since the thread's
// switch-in to what the kernel recorded then, so every read takes the
// clock. A vDSO clock_gettime orders the TSC read and takes a seqlock;
// where the kernel's clock is computed from an invariant TSC (clocksource
// tsc, or kvm-clock in a KVM guest, with constant_tsc and nonstop_tsc),
// the read instead scales a bare RDTSC from a per-thread anchor, a (TSC,
// vDSO clock) pair the thread takes at its first read of each dispatch
// (jp_ptt_now). A dispatch runs on one CPU, so TSCs of different CPUs are
// never compared (kvm-clock's guests are not promised synchronized ones)
// and only the TSC's rate matters: Setup measures it twice against the
// clock and each new anchor checks it again; if it moved by more than
// 0.1% (a VM moved to another host), every read goes back to the vDSO
// clock and Counters say so. Setup also measures the TSC's step (some
// CPUs and hypervisors advance it in 10 ns steps, sometimes a short one):
// a time delta below one step sets no calibration minimum.
// Config.NoTSC (option NOTSC) keeps the vDSO read.
//
// # Measuring
//
// internal/ptttest times N reads in one C loop (so cgo is paid once)
// beside bare vDSO and rdtsc reads, for the tests and bench; it is not
// part of this package so that the agent does not link it.
package ptt
