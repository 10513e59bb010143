/*
 * ptt.h: per-thread metric reads for the agent's per-event hot path.
 *
 * The agent's C hot path includes this header and calls jp_ptt_read() as
 * the first (Early Read) and last (Late Read) thing it does for an event.
 * Which backend is used is chosen once, in Go, before any event is enabled
 * (ptt.Setup); the hot path only switches on jp_ptt.backend, a branch the
 * CPU predicts perfectly because it never changes.
 *
 * Everything here is plain C with no Go pointers. The globals it uses are
 * defined in ptt.c and ptt_bpf.c (package ptt); other cgo packages that
 * include this header link against them.
 */
#ifndef JP_PTT_H
#define JP_PTT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "ptt_slot.h"

#define JP_PTT_MAX_METRICS 8

/* Backends, best first. */
enum jp_ptt_backend {
	JP_PTT_NONE = 0,  /* no metrics (CALLTREE) */
	JP_PTT_CLOCK = 1, /* clock_gettime(CLOCK_THREAD_CPUTIME_ID) */
	JP_PTT_PERF = 2,  /* perf_event self-monitoring */
	JP_PTT_BPF = 3,   /* eBPF-maintained mmapped work area */
};

/* Metric kinds a backend may be asked for, in jp_ptt.metric[]. */
enum jp_ptt_metric {
	JP_M_TIME = 0,   /* thread CPU time, ns */
	JP_M_INSTS = 1,  /* instructions retired */
	JP_M_CYCLES = 2, /* CPU cycles */
};

/* One reading of a thread's metrics. */
typedef struct jp_ptt_reading {
	uint64_t v[JP_PTT_MAX_METRICS]; /* in the order of jp_ptt.metric[] */
	uint64_t dispatches;            /* times the thread was switched in */
	uint64_t interrupts;            /* asynchronous interrupts taken */
} jp_ptt_reading;

/* A pair (TSC, CLOCK_MONOTONIC) taken together on the reading thread,
 * and the dispatch it was taken in (jp_ptt_now). */
typedef struct jp_ptt_anchor {
	uint64_t in;   /* the backend's mark of the dispatch: switch-in stamp or record position */
	uint64_t tsc;
	uint64_t mono;
} jp_ptt_anchor;

/* Per-thread backend state, embedded in the agent's thread record and
 * initialised on the thread itself by jp_ptt_thread_init(). Only that
 * thread may read through it. */
typedef struct jp_ptt_thread {
	int tid;          /* gettid(): in the process's own PID namespace */
	int slot;         /* BPF work-area slot index, -1 if none */
	void *perf_page;  /* perf mmap (control page + ring), NULL if none */
	int perf_fd;
	int fallback;     /* 1 when this thread could not use jp_ptt.backend */
	/* The backend this thread's reads really use (enum jp_ptt_backend):
	 * jp_ptt.backend, or for a thread that fell back JP_PTT_PERF (bpf
	 * without a free slot) or JP_PTT_CLOCK (perf refused too, perf mmap
	 * refused, ...), and JP_PTT_CLOCK once it has called fini. Clock
	 * readings carry a syscall's overhead and no dispatch counts, so
	 * the engine must not mix their minima with the fast backend's. */
	int backend;
	unsigned int bpf_tid; /* bpf: the tid the BPF programs know (init PID namespace) */

	/* bpf: &work_area[slot], NULL when the thread has no slot. */
	const volatile struct jp_ptt_slot *bpf_slot;

	/* perf, time: ring = perf_page + one page, ring_mask = ring size - 1;
	 * perf_t0 = CLOCK_MONOTONIC just after the event was opened. */
	const volatile char *perf_ring;
	uint64_t perf_ring_mask;
	uint64_t perf_t0;
	size_t perf_len;

	/* perf, hardware metrics: one counter and control page per column
	 * of jp_ptt.metric[] (unused for JP_M_TIME columns). */
	int hw_fd[JP_PTT_MAX_METRICS];
	void *hw_page[JP_PTT_MAX_METRICS];

	/* bpf and perf: where this thread's TSC reads are anchored. */
	jp_ptt_anchor anchor;
} jp_ptt_thread;

/* Process-wide configuration, written once by ptt.Setup before events are
 * enabled and read-only afterwards. */
typedef struct jp_ptt_config {
	int backend;                     /* enum jp_ptt_backend */
	int nmetrics;                    /* 0..JP_PTT_MAX_METRICS */
	int metric[JP_PTT_MAX_METRICS];  /* enum jp_ptt_metric per column */
	int has_dispatches;              /* backend counts dispatches */
	int has_interrupts;              /* backend counts interrupts */
	/* CLOCK_MONOTONIC ns per TSC tick << 32 (jp_ptt_tsc_rate), 0 when
	 * reads use the vDSO clock instead. */
	uint64_t tsc_mult;
	/* The smallest time two reads can tell apart (ns): the TSC's step
	 * (jp_ptt_tsc_step). A time delta below it did not really tick. */
	uint64_t min_tick;
} jp_ptt_config;

extern jp_ptt_config jp_ptt;

/* jp_ptt_tsc_rate measures the TSC against CLOCK_MONOTONIC over ms
 * milliseconds: the jp_ptt.tsc_mult to use, 0 if the TSC cannot serve
 * (not x86, not ticking, or slower than 0.5 GHz). Only meaningful when the
 * kernel itself keeps time with the TSC (clocksource tsc: invariant and
 * synchronized across CPUs), which the caller checks. */
uint64_t jp_ptt_tsc_rate(int ms);
/* jp_ptt_tsc_step is the TSC's usual step between two back-to-back reads,
 * in ticks: the read's latency, or the counter's granularity where it
 * advances in steps (AMD CPUs and some hypervisors: 10 ns). */
uint64_t jp_ptt_tsc_step(void);

/* Called on the thread itself, before its first read; returns 0 or -errno.
 * On failure the thread falls back to the clock backend (t->fallback = 1)
 * and its reads still work. */
int jp_ptt_thread_init(jp_ptt_thread *t);
/* Called on the thread itself at its end; releases the slot or fd. Reads
 * after fini use the clock. */
void jp_ptt_thread_fini(jp_ptt_thread *t);

/* ---- clocks ---- */

static inline uint64_t jp_ptt_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Thread CPU time: a real syscall (BENCHMARKS.md has its cost). */
static inline uint64_t jp_ptt_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return jp_ptt_ts_ns(&ts);
}

/* CLOCK_MONOTONIC through the vDSO (no syscall): the clock the BPF
 * programs (bpf_ktime_get_ns) and perf (use_clockid) stamp with. */
static inline uint64_t jp_ptt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return jp_ptt_ts_ns(&ts);
}

#define jp_ptt_barrier() __asm__ __volatile__("" ::: "memory")

/* ---- bpf backend ---- */

/*
 * JP_PTT_SLOT_HOOK(slot, attempt) runs between the snapshot and the
 * re-read of seq. It is empty in the agent; a test translation unit
 * defines it before including this header to change the slot there
 * and force a retry (see testhooks.go).
 */
#ifndef JP_PTT_SLOT_HOOK
#define JP_PTT_SLOT_HOOK(s, attempt) ((void)0)
#endif
/* The clock the bpf and perf reads use; a test may script it (and then
 * gets no TSC reads). */
#ifndef JP_PTT_READ_CLOCK
#define JP_PTT_READ_CLOCK() jp_ptt_mono_ns()
#if defined(__x86_64__)
#define JP_PTT_TSC 1
#endif
#endif

/* Ticks an anchor serves for: its extrapolation stays within 64 bits
 * (tsc_mult < 2^33) and short enough that the TSC's rate against
 * CLOCK_MONOTONIC (slewed by NTP) cannot drift it by more than a few ns. */
#define JP_PTT_TSC_SPAN (1ull << 31)

/* A new anchor at least this long after the thread's previous one checks
 * the TSC's rate: over 10 ms, a skew of microseconds between CPUs' TSCs
 * stays below the threshold (jp_ptt_tsc_check). */
#define JP_PTT_TSC_CHECK_NS 10000000ull

/* jp_ptt_tsc_check compares the clock's advance since the anchor a with
 * the TSC's scaled by mult; where they part by more than 0.1% (the TSC's
 * rate changed: a VM moved to another host, a TSC that is not invariant
 * after all), it turns the TSC path off for every thread (jp_ptt.tsc_mult
 * = 0: each read takes the vDSO clock from then on) and counts it. Cold:
 * at most once per dispatch of 10 ms or more. */
void jp_ptt_tsc_check(const jp_ptt_anchor *a, uint64_t tsc, uint64_t mono, uint64_t mult);

/* jp_ptt_anchor_renew takes a new anchor for the dispatch marked in (c: a
 * TSC read just before) and returns its clock value; cold, out of line. */
uint64_t jp_ptt_anchor_renew(jp_ptt_anchor *a, uint64_t in, uint64_t mult, uint64_t c);

/*
 * jp_ptt_now is CLOCK_MONOTONIC for a read in the dispatch marked in.
 *
 * With jp_ptt.tsc_mult set it is an RDTSC (cheaper still) scaled from an
 * anchor, a (TSC, vDSO clock) pair taken by this thread in this dispatch
 * and renewed at each dispatch and after JP_PTT_TSC_SPAN ticks; instead
 * of a vDSO clock read per call (~23 ns: it orders the TSC read and takes
 * a seqlock). Within one dispatch two reads differ by exactly their TSC
 * difference scaled; the anchor's own error (the pair is not taken at one
 * instant: a few ns) shifts every read of the dispatch alike, so it only
 * shows in a delta that spans a dispatch, which the engine does not
 * calibrate with anyway.
 */
static inline uint64_t jp_ptt_now(jp_ptt_anchor *a, uint64_t in)
{
#ifdef JP_PTT_TSC
	uint64_t mult = __atomic_load_n(&jp_ptt.tsc_mult, __ATOMIC_RELAXED);
	if (mult != 0 && a != NULL) {
		uint64_t c = __builtin_ia32_rdtsc();
		uint64_t dc = c - a->tsc;
		if (__builtin_expect(a->in == in && dc < JP_PTT_TSC_SPAN, 1))
			return a->mono + ((dc * mult) >> 32);
		return jp_ptt_anchor_renew(a, in, mult, c);
	}
#else
	(void)a;
	(void)in;
#endif
	return JP_PTT_READ_CLOCK();
}

/*
 * jp_ptt_bpf_slot_read_at is the PTT read over one slot; see ptt_slot.h
 * for the protocol. a is the reading thread's anchor, or NULL for a
 * vDSO clock read. Returns the number of retries.
 */
static inline int jp_ptt_bpf_slot_read_at(const volatile struct jp_ptt_slot *s, jp_ptt_anchor *a, jp_ptt_reading *r)
{
	uint64_t q1, q2, now, run, in, irq, ist, d, n;
	int attempt = 0;

	for (;;) {
		q1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		d = s->dispatches;
		n = s->interrupts;
		in = s->last_in;
		now = jp_ptt_now(a, in);
		run = s->run_ns;
		irq = s->irq_ns;
		ist = s->irq_start;
		JP_PTT_SLOT_HOOK(s, attempt);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		q2 = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
		if (q1 == q2 && !(q1 & 1))
			break;
		attempt++;
	}
	/* The bpf and vDSO clocks are the same CLOCK_MONOTONIC but read
	 * through different paths; clamp the few-ns disagreements. */
	if (in && now > in)
		run += now - in;
	if (ist && now > ist) /* only seen by a reader on another thread */
		irq += now - ist;
	r->v[0] = run > irq ? run - irq : 0;
	r->dispatches = d;
	r->interrupts = n;
	return attempt;
}

static inline int jp_ptt_bpf_slot_read(const volatile struct jp_ptt_slot *s, jp_ptt_reading *r)
{
	return jp_ptt_bpf_slot_read_at(s, NULL, r);
}

/* ---- perf backend ---- */

/* Syscall paths (ptt_perf.c), for states the mmap cannot answer. */
uint64_t jp_ptt_perf_time_slow(const jp_ptt_thread *t);
uint64_t jp_ptt_perf_count_slow(const jp_ptt_thread *t, int col);

/* A PERF_RECORD_SWITCH with sample_id_all and PERF_SAMPLE_TIME only:
 * header + u64 time. */
#define JP_PTT_PERF_REC 16

/*
 * Thread time from the perf mmap (see ptt_perf.c): time_running as of
 * the last switch-in, plus CLOCK_MONOTONIC elapsed since that switch-in,
 * taken from the PERF_RECORD_SWITCH record it wrote. The ring holds
 * only switch records (out, in, out, in...), so while the thread runs
 * data_head / 32 is its dispatch count. lock changes at each switch-in,
 * which is what the retry checks.
 */
static inline uint64_t jp_ptt_perf_time(jp_ptt_thread *t, uint64_t *dispatches)
{
	const volatile struct perf_event_mmap_page *pg = (const volatile struct perf_event_mmap_page *)t->perf_page;
	uint32_t seq;
	uint64_t head, run, now, v;
	int slow;

	do {
		seq = pg->lock;
		jp_ptt_barrier();
		head = pg->data_head;
		run = pg->time_running;
		now = jp_ptt_now(&t->anchor, head);
		slow = 0;
		if (head == 0) {
			/* Never switched out since the event was opened. */
			v = now > t->perf_t0 ? now - t->perf_t0 : 0;
		} else {
			const volatile char *rec = t->perf_ring + ((head - JP_PTT_PERF_REC) & t->perf_ring_mask);
			const volatile struct perf_event_header *h = (const volatile struct perf_event_header *)rec;
			uint64_t ts = *(const volatile uint64_t *)(rec + 8);

			if (h->type == PERF_RECORD_SWITCH && !(h->misc & PERF_RECORD_MISC_SWITCH_OUT))
				v = run + (now > ts ? now - ts : 0);
			else
				slow = 1, v = 0; /* unexpected record: not a switch-in */
		}
		jp_ptt_barrier();
	} while (pg->lock != seq);
	*dispatches = head / (2 * JP_PTT_PERF_REC);
	if (slow)
		v = jp_ptt_perf_time_slow(t);
	return v;
}

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t jp_ptt_rdpmc(uint32_t c)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(c));
	return (uint64_t)hi << 32 | lo;
}
#define JP_PTT_HAVE_RDPMC 1
#else
#define JP_PTT_HAVE_RDPMC 0
static inline uint64_t jp_ptt_rdpmc(uint32_t c) { (void)c; return 0; }
#endif

/* A hardware counter of the calling thread: rdpmc under the control
 * page's seqlock (the documented perf self-monitoring read), or read()
 * when the kernel does not allow rdpmc. */
static inline uint64_t jp_ptt_perf_count(const jp_ptt_thread *t, int col)
{
	const volatile struct perf_event_mmap_page *pg = (const volatile struct perf_event_mmap_page *)t->hw_page[col];
	uint32_t seq, idx;
	uint64_t count;
	int ok;

	do {
		seq = pg->lock;
		jp_ptt_barrier();
		idx = pg->index;
		count = pg->offset;
		ok = JP_PTT_HAVE_RDPMC && pg->cap_user_rdpmc && idx && pg->pmc_width;
		if (ok) {
			/* sign-extend the pmc_width-bit counter */
			int64_t pmc = (int64_t)jp_ptt_rdpmc(idx - 1);
			unsigned w = 64 - pg->pmc_width;

			count += (uint64_t)((pmc << w) >> w);
		}
		jp_ptt_barrier();
	} while (pg->lock != seq);
	if (!ok)
		count = jp_ptt_perf_count_slow(t, col);
	return count;
}

static inline void jp_ptt_perf_read(jp_ptt_thread *t, jp_ptt_reading *r)
{
	uint64_t d = 0;

	for (int i = 0; i < jp_ptt.nmetrics; i++)
		r->v[i] = jp_ptt.metric[i] == JP_M_TIME ? jp_ptt_perf_time(t, &d) : jp_ptt_perf_count(t, i);
	r->dispatches = d;
	r->interrupts = 0;
}

/* jp_ptt_read_other is jp_ptt_read for every case but a bpf slot's. */
static __attribute__((noinline, unused)) void jp_ptt_read_other(jp_ptt_thread *t, jp_ptt_reading *r)
{
	switch (jp_ptt.backend) {
	case JP_PTT_BPF:
		if (t->perf_page) { /* no slot: its own perf event */
			jp_ptt_perf_read(t, r);
			return;
		}
		break;
	case JP_PTT_PERF:
		if (t->perf_page) {
			jp_ptt_perf_read(t, r);
			return;
		}
		break;
	case JP_PTT_NONE:
		return;
	}
	/* clock backend, and threads that fell back to it */
	r->v[0] = jp_ptt_clock_ns();
	r->dispatches = 0;
	r->interrupts = 0;
}

/* jp_ptt_read fills r with the calling thread's current metrics. The bpf
 * slot's read, the common case, is inlined into the per-event path: a
 * call there costs its register saves on every event. */
static inline __attribute__((always_inline)) void jp_ptt_read(jp_ptt_thread *t, jp_ptt_reading *r)
{
	if (__builtin_expect(jp_ptt.backend == JP_PTT_BPF && t->bpf_slot != NULL, 1)) {
		jp_ptt_bpf_slot_read_at(t->bpf_slot, &t->anchor, r);
		return;
	}
	jp_ptt_read_other(t, r);
}

#endif /* JP_PTT_H */
