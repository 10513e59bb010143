//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0)
/*
 * ptt.bpf.c: the eBPF side of libjprof's Per-Thread Time facility.
 *
 * Keeps, for each registered thread, a slot in an mmapped array (see
 * ../ptt_slot.h for the layout and the protocol both sides follow):
 * on-CPU time accumulated at sched_switch (with sched_exit_tp catching
 * switch-ins sched_switch did not trace), and time spent in
 * asynchronous interrupts taken while the thread was on CPU, so that
 * user space can factor the interrupts out with a few loads and a vDSO
 * clock read and no syscall. The clock is read only when a registered
 * thread is involved, so unregistered tasks pay a cache check or one
 * hash lookup per switch.
 *
 * Two program sets are built: tp_btf (direct BTF access to the
 * sched_switch task pointers, cheapest) and raw_tp (for kernels whose
 * tp_btf load fails). The loader keeps one set and drops the other.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "ptt_slot.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Only the fields we need; CO-RE relocates their offsets against the
 * running kernel's BTF, so no vmlinux.h is needed. */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace {
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
	struct pid_namespace *ns;
} __attribute__((preserve_access_index));

struct pid {
	unsigned int level;
	struct upid numbers[1];
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	struct pid *thread_pid;
} __attribute__((preserve_access_index));

/* The work area. max_entries (nslots + 1) is set by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct jp_ptt_slot);
	__uint(max_entries, 4097);
} ptt_slots SEC(".maps");

/* tid -> slot index (1..nslots). The key is a global (init-namespace)
 * tid, written by user space or by resolve() below, or a pending key
 * (JP_PTT_PENDING_KEY) written by a thread in a PID namespace. Sized
 * 2 * nslots by the loader (a pending key and its resolution coexist
 * for a moment). Preallocated so lookups from scheduler and interrupt
 * context never allocate. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u32);
	__uint(max_entries, 8192);
} ptt_tids SEC(".maps");

/* Per-CPU state: interrupt nesting and a one-entry cache of the slot of
 * the task running on this CPU, so interrupts cost no hash lookup. */
struct cpu_state {
	__u64 depth;     /* interrupt nesting depth */
	__u32 irq_slot;  /* slot charged for the outermost interrupt in progress; 0 = none */
	__u32 cur_tid;   /* task the cache below describes */
	__u32 cur_slot;  /* its slot; 0 = not registered */
	__u32 pad;
	__u64 cur_gen;   /* header gen when cur_* was resolved */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_state);
	__uint(max_entries, 1);
} ptt_cpu SEC(".maps");

/* Per-CPU event counters for diagnostics (pttbpf.Stats). */
enum {
	STAT_HEALED_IN,   /* switch-ins first seen at sched_exit_tp */
	STAT_LOST_OUT,    /* switch-ins of a thread still marked on CPU */
	STAT_IRQ_UNBAL,   /* interrupt exits without an entry */
	STAT_IRQ_STRAY,   /* interrupts still open at a context switch */
	STAT_N,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, STAT_N);
} ptt_stats SEC(".maps");

static __always_inline void stat(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&ptt_stats, &i);

	if (v)
		(*v)++; /* per-CPU, and never nested with itself in a way that matters */
}

static __always_inline struct jp_ptt_slot *slot_at(__u32 idx)
{
	return bpf_map_lookup_elem(&ptt_slots, &idx);
}

/* struct jp_ptt_hdr overlays element 0. */
static __always_inline struct jp_ptt_hdr *hdr(void)
{
	return (struct jp_ptt_hdr *)slot_at(0);
}

static __always_inline __u64 hdr_gen(void)
{
	struct jp_ptt_hdr *h = hdr();

	/* A volatile load (clang has no BPF load-acquire before v18); the
	 * hash lookup that follows is a dependent helper call, not
	 * reordered before it. */
	return h ? *(volatile __u64 *)&h->gen : 0;
}

/*
 * slot_of returns the slot of tid, using this CPU's cache when it is
 * still valid. gen is read before the hash lookup: user space inserts
 * first and bumps gen second, so a lookup that misses a concurrent
 * insert is cached under an old gen and retried at the next event.
 */
static __always_inline struct jp_ptt_slot *slot_of(struct cpu_state *st, __u32 tid)
{
	__u64 gen = hdr_gen();
	__u32 idx = 0;

	if (st->cur_tid == tid && st->cur_gen == gen) {
		idx = st->cur_slot;
	} else {
		__u64 key = tid;
		__u32 *v = bpf_map_lookup_elem(&ptt_tids, &key);

		idx = v ? *v : 0;
		st->cur_tid = tid;
		st->cur_slot = idx;
		st->cur_gen = gen;
	}
	if (!idx)
		return 0;
	struct jp_ptt_slot *s = slot_at(idx);
	/* A stale entry (slot recycled meanwhile) must not be charged. */
	if (!s || s->tid != tid)
		return 0;
	return s;
}

/*
 * ns_key is task t's pending key: the inode of its PID namespace (the
 * innermost one, which its own gettid() and /proc/self/ns/pid refer
 * to) and its tid there, from t->thread_pid->numbers[level].
 */
static __always_inline __u64 ns_key(struct task_struct *t)
{
	struct pid *p = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	struct upid up;

	if (!p || level > 32) /* MAX_PID_NS_LEVEL */
		return 0;
	if (bpf_probe_read_kernel(&up, sizeof(up), &p->numbers[level]))
		return 0;
	return JP_PTT_PENDING_KEY(BPF_CORE_READ(up.ns, ns.inum), up.nr);
}

/*
 * resolve completes the registration of a thread in a PID namespace
 * (see ptt_slot.h): while some registration is pending, an
 * unregistered task's pending key is looked up; on a hit its global tid
 * is inserted for the slot and written into the slot's tid, which is
 * what the registering thread waits for. Costs nothing while no
 * registration is pending (one load of a header word already in cache
 * for gen).
 */
static __always_inline struct jp_ptt_slot *resolve(struct task_struct *t, __u32 tid)
{
	struct jp_ptt_hdr *h = hdr();

	if (!h || !*(volatile __u64 *)&h->pending)
		return 0;
	__u64 key = ns_key(t);
	if (!key)
		return 0;
	__u32 *v = bpf_map_lookup_elem(&ptt_tids, &key);
	if (!v)
		return 0;
	__u32 idx = *v;
	struct jp_ptt_slot *s = slot_at(idx);
	if (!idx || !s || !s->owner || s->tid)
		return 0;

	__u64 gkey = tid;
	__u32 *old = bpf_map_lookup_elem(&ptt_tids, &gkey);
	if (old && *old != idx) {
		/* A dead thread that had this tid never unregistered (tids
		 * are unique among live tasks): free its slot. */
		struct jp_ptt_slot *os = slot_at(*old);

		if (os && __sync_val_compare_and_swap(&os->tid, tid, 0) == tid)
			*(volatile __u32 *)&os->owner = 0;
	}
	if (bpf_map_update_elem(&ptt_tids, &gkey, &idx, BPF_ANY))
		return 0; /* retried at the task's next switch */
	if (__sync_val_compare_and_swap(&s->tid, 0, tid) != 0)
		return 0;
	__sync_fetch_and_add(&h->gen, 1);
	return s;
}

/* seq brackets: a full barrier each (fetch-and-add), so a reader on
 * another CPU sees an odd seq or a changed seq around any update. */
static __always_inline void upd_begin(struct jp_ptt_slot *s)
{
	__sync_fetch_and_add(&s->seq, 1);
}

static __always_inline void upd_end(struct jp_ptt_slot *s)
{
	__sync_fetch_and_add(&s->seq, 1);
}

static __always_inline struct cpu_state *cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ptt_cpu, &zero);
}

/* Close the interrupt in progress on this CPU, charging its slot. */
static __always_inline void irq_close(struct cpu_state *st, __u64 now)
{
	__u32 idx = st->irq_slot;

	if (idx) {
		struct jp_ptt_slot *s = slot_at(idx);

		if (s && s->irq_start) {
			upd_begin(s);
			if (now > s->irq_start)
				s->irq_ns += now - s->irq_start;
			s->irq_start = 0;
			upd_end(s);
		}
		st->irq_slot = 0;
	}
}

static __always_inline int on_switch(__u32 prev_tid, struct task_struct *next, __u32 next_tid)
{
	struct cpu_state *st = cpu();
	struct jp_ptt_slot *s;
	__u64 now = 0; /* read only when a registered thread is involved */

	if (!st)
		return 0;
	/*
	 * No context switch happens inside a hard or soft interrupt on a
	 * non-RT kernel, so a non-zero depth here means an exit we never
	 * saw (programs attached or detached mid-interrupt): close it.
	 */
	if (st->depth) {
		now = bpf_ktime_get_ns();
		irq_close(st, now);
		st->depth = 0;
		stat(STAT_IRQ_STRAY);
	}

	/* Switch-out: the dispatch's on-CPU time joins run_ns. */
	if (prev_tid) {
		s = slot_of(st, prev_tid);
		if (s && s->last_in) {
			if (!now)
				now = bpf_ktime_get_ns();
			upd_begin(s);
			if (now > s->last_in)
				s->run_ns += now - s->last_in;
			s->last_in = 0;
			upd_end(s);
		}
	}

	/* Switch-in: a new dispatch. The lookup also refreshes the cache
	 * for the interrupts this task will take. */
	if (next_tid) {
		s = slot_of(st, next_tid);
		if (!s)
			s = resolve(next, next_tid);
		if (s) {
			if (!now)
				now = bpf_ktime_get_ns();
			/* Still on CPU: its switch-out was not traced, so that
			 * dispatch's time is lost; start afresh. */
			if (s->last_in)
				stat(STAT_LOST_OUT);
			upd_begin(s);
			s->dispatches++;
			s->last_in = now;
			upd_end(s);
		}
	} else {
		st->cur_tid = 0;
		st->cur_slot = 0;
	}
	return 0;
}

/*
 * Switch-in healer, in the context of the task that has just been
 * switched in (sched_exit_tp fires at the end of __schedule when it
 * switched). sched_switch is not traced on some switches, e.g. from
 * tasks a kernel hides from tracing: some hosts' kernels do that for
 * their sandbox's own agent. A thread switched in that way would look off
 * CPU for its whole time slice; here it is put back on CPU (a few
 * hundred ns late: the switch itself is not counted) and its dispatch
 * counted. When sched_switch saw the switch-in, last_in is set and
 * this is a cache hit and one compare.
 */
static __always_inline int on_sched_exit(int is_switch)
{
	struct cpu_state *st;
	struct jp_ptt_slot *s;
	__u32 tid;

	if (!is_switch)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	st = cpu();
	if (!tid || !st)
		return 0;
	s = slot_of(st, tid);
	if (!s)
		s = resolve((struct task_struct *)bpf_get_current_task(), tid);
	if (!s || s->last_in)
		return 0;
	upd_begin(s);
	s->dispatches++;
	s->last_in = bpf_ktime_get_ns();
	upd_end(s);
	stat(STAT_HEALED_IN);
	return 0;
}

/*
 * Registration trigger: a thread of a PID namespace that has inserted its
 * pending key renames itself to its own name (prctl PR_SET_NAME), which
 * runs this at once in its own context, so its registration is resolved
 * without waiting for a context switch. Renames are rare, and cost one
 * header load here while no registration is pending.
 */
static __always_inline int on_rename(struct task_struct *t, __u32 tid)
{
	struct cpu_state *st = cpu();

	if (st && tid && !slot_of(st, tid))
		resolve(t, tid);
	return 0;
}

/*
 * Interrupt entry. Only the outermost entry charges: depth is bumped
 * first (atomically, since a hard interrupt can preempt this program
 * while it runs for a soft interrupt), so a nested entry always sees a
 * non-zero old depth and leaves the slot alone.
 */
static __always_inline int on_irq_entry(void)
{
	struct cpu_state *st = cpu();

	if (!st)
		return 0;
	if (__sync_fetch_and_add(&st->depth, 1) != 0)
		return 0;

	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct jp_ptt_slot *s = tid ? slot_of(st, tid) : 0;

	/* last_in == 0: registered but no dispatch seen yet, and user space
	 * has not started the clock either; nothing to factor out of. */
	if (!s || !s->last_in) {
		st->irq_slot = 0;
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	upd_begin(s);
	s->interrupts++;
	s->irq_start = now;
	upd_end(s);
	st->irq_slot = st->cur_slot;
	return 0;
}

/* Interrupt exit: the outermost exit charges the interval. An exit with
 * depth 0 is one whose entry happened before we attached: ignored. */
static __always_inline int on_irq_exit(void)
{
	struct cpu_state *st = cpu();

	if (!st)
		return 0;
	if (!st->depth) {
		stat(STAT_IRQ_UNBAL);
		return 0;
	}
	if (st->depth == 1)
		irq_close(st, bpf_ktime_get_ns());
	__sync_fetch_and_sub(&st->depth, 1);
	return 0;
}

/* ---- tp_btf set ---- */

SEC("tp_btf/sched_switch")
int tpbtf_sched_switch(unsigned long long *ctx)
{
	/* TP_PROTO(bool preempt, struct task_struct *prev,
	 *          struct task_struct *next, unsigned int prev_state) */
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];

	return on_switch(prev->pid, next, next->pid);
}

SEC("tp_btf/sched_exit_tp")
int tpbtf_sched_exit_tp(unsigned long long *ctx)
{
	/* TP_PROTO(bool is_switch) */
	return on_sched_exit((int)(ctx[0] & 1));
}

SEC("tp_btf/task_rename")
int tpbtf_task_rename(unsigned long long *ctx)
{
	/* TP_PROTO(struct task_struct *task, const char *comm) */
	struct task_struct *t = (struct task_struct *)ctx[0];

	return on_rename(t, t->pid);
}

#define TPBTF_PAIR(name)                                  \
	SEC("tp_btf/" #name "_entry")                     \
	int tpbtf_##name##_entry(void *ctx) { return on_irq_entry(); } \
	SEC("tp_btf/" #name "_exit")                      \
	int tpbtf_##name##_exit(void *ctx) { return on_irq_exit(); }

/* ---- raw_tp set: same logic, pid read with a CO-RE probe read ---- */

SEC("raw_tp/sched_switch")
int rawtp_sched_switch(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];

	return on_switch(BPF_CORE_READ(prev, pid), next, BPF_CORE_READ(next, pid));
}

SEC("raw_tp/sched_exit_tp")
int rawtp_sched_exit_tp(struct bpf_raw_tracepoint_args *ctx)
{
	return on_sched_exit((int)(ctx->args[0] & 1));
}

SEC("raw_tp/task_rename")
int rawtp_task_rename(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *t = (struct task_struct *)ctx->args[0];

	return on_rename(t, BPF_CORE_READ(t, pid));
}

#define RAWTP_PAIR(name)                                  \
	SEC("raw_tp/" #name "_entry")                     \
	int rawtp_##name##_entry(void *ctx) { return on_irq_entry(); } \
	SEC("raw_tp/" #name "_exit")                      \
	int rawtp_##name##_exit(void *ctx) { return on_irq_exit(); }

/*
 * Asynchronous interrupt points. irq_handler_* wraps each device IRQ
 * action, softirq_* each softirq vector run (at irq exit or in a
 * task's local_bh_enable), the rest are x86 system vectors; the loader
 * drops those the running kernel lacks. The names double as the
 * program-name suffixes the loader looks for (pttbpf.IRQPoints).
 */
#define IRQ_POINTS(X)            \
	X(irq_handler)           \
	X(softirq)               \
	X(local_timer)           \
	X(call_function)         \
	X(call_function_single)  \
	X(reschedule)            \
	X(irq_work)              \
	X(x86_platform_ipi)

IRQ_POINTS(TPBTF_PAIR)
IRQ_POINTS(RAWTP_PAIR)
