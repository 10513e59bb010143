/*
 * ptt_slot.h: the eBPF PTT work area, shared by the BPF program
 * (pttbpf/ptt.bpf.c) and the user-space reader (ptt.h).
 *
 * The work area is one BPF_F_MMAPABLE array map mapped into the process.
 * Element 0 is a header (jp_ptt_hdr); elements 1..nslots are per-thread
 * slots (jp_ptt_slot), one 64-byte cache line each so that threads on
 * different CPUs never share a line. A tid->slot hash map says which
 * thread a slot is counting for.
 *
 * Several processes can share one work area (jprof pttd hands the same
 * maps to every JVM), so a slot is claimed in the area itself: a
 * compare-and-swap of its owner word from 0 to the claimant's owner
 * token (pttd gives each client connection its own; a process that
 * loaded the programs itself uses JP_PTT_OWNER_SELF). pttd frees the
 * slots of a client whose connection closed (pttbpf.Objects.Reclaim).
 *
 * Thread ids
 *
 *   The BPF programs know a thread by its pid in the initial PID
 *   namespace (task->pid). A thread inside a PID namespace (a
 *   container) only knows its namespace-local tid. Such a thread
 *   registers under a pending key, (namespace inode << 32 | local tid),
 *   and the BPF side, which can compute that key for any task from
 *   task->thread_pid, resolves it when the thread renames itself (or at
 *   its next switch-in): it inserts the global tid and writes it into
 *   the slot's tid. See ptt_bpf.c and ptt.bpf.c.
 *
 * Plain C types only: this header is compiled both for the host and for
 * the BPF target, where <stdint.h> is not available.
 *
 * Who writes what
 *
 *   The BPF programs write a slot only on the CPU where its thread runs,
 *   and only while the thread is not executing (switched out, switching
 *   in, or interrupted), and tid once when it resolves a pending
 *   registration. User space writes a slot only when registering it
 *   (before the tid->slot entry exists), with one compare-and-swap of
 *   last_in right after, and when it clears tid and owner at fini (see
 *   ptt_bpf.c).
 *
 * Update protocol (BPF side)
 *
 *   Every change to a slot is bracketed by two increments of seq:
 *   seq odd means an update is in progress. Each bracket also changes
 *   one of the PTT counts (dispatches at switch-in, interrupts at the
 *   outermost interrupt entry) or completes an interval started by one
 *   (switch-out, interrupt exit). seq is therefore the paper's "count of
 *   dispatches and interrupts", extended to every slot update so that
 *   the read is also correct from a thread other than the owner.
 *
 * Read protocol (user side, jp_ptt_bpf_slot_read in ptt.h)
 *
 *   q1 = seq (acquire); counts, now = CLOCK_MONOTONIC, run_ns, last_in,
 *   irq_ns, irq_start; q2 = seq (after an acquire fence); retry while
 *   q1 is odd or q1 != q2. Then
 *     time = run_ns + (last_in ? now - last_in : 0)
 *                   - irq_ns - (irq_start ? now - irq_start : 0)
 *   When the reader is the slot's own thread, the BPF writer runs on the
 *   same CPU and preempts the reader, so a seq change between q1 and q2
 *   is exactly "the thread was dispatched or interrupted meanwhile".
 */
#ifndef JP_PTT_SLOT_H
#define JP_PTT_SLOT_H

#define JP_PTT_SLOT_SIZE 64
#define JP_PTT_HDR_MAGIC 0x31545450504aull /* "JPPTT1" little-endian */

/* One thread's slot. All times are CLOCK_MONOTONIC nanoseconds
 * (bpf_ktime_get_ns() in BPF, clock_gettime(CLOCK_MONOTONIC) in user
 * space: the same clock). */
struct jp_ptt_slot {
	unsigned long long seq;        /* odd while BPF updates the slot */
	unsigned long long dispatches; /* switch-ins seen since registration */
	unsigned long long interrupts; /* outermost asynchronous interrupts taken on CPU */
	unsigned long long run_ns;     /* on-CPU ns of completed dispatches (interrupts included) */
	unsigned long long last_in;    /* time of the current dispatch's switch-in; 0 = off CPU */
	unsigned long long irq_ns;     /* ns of completed interrupts taken while on CPU */
	unsigned long long irq_start;  /* start of the interrupt in progress; 0 = none */
	unsigned int tid;              /* thread (init-namespace tid) counted here; 0 = none or pending */
	unsigned int owner;            /* owner token of the process holding the slot; 0 = free */
};

/* Owner token of a process that loaded the programs itself (its work
 * area is its own); jprof pttd hands out tokens from 2 up. */
#define JP_PTT_OWNER_SELF 1u

/* The initial PID namespace's inode number (PROC_PID_INIT_INO): a
 * process whose /proc/self/ns/pid has it knows its global tids. */
#define JP_PTT_INIT_PIDNS 0xEFFFFFFCu

/* tid->slot keys: a global tid, or a pending registration. */
#define JP_PTT_PENDING_KEY(ns_ino, ns_tid) ((unsigned long long)(ns_ino) << 32 | (unsigned int)(ns_tid))

/* Element 0 of the work area. */
struct jp_ptt_hdr {
	unsigned long long magic;  /* JP_PTT_HDR_MAGIC, written by the loader */
	unsigned long long gen;    /* bumped by user space after each tid->slot insert/delete */
	unsigned long long nslots; /* usable slots (elements 1..nslots) */
	unsigned long long pending; /* pending registrations: the BPF side resolves while > 0 */
	unsigned long long pad[4];
};

#endif /* JP_PTT_SLOT_H */
