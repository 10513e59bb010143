/*
 * ptt.h: per-thread metric reads for the agent's per-event hot path.
 *
 * The agent's C hot path includes this header and calls jp_ptt_read() as
 * the first (Early Read) and last (Late Read) thing it does for an event.
 * Which backend is used is chosen once, in Go, before any event is enabled
 * (ptt.Setup); the hot path only switches on jp_ptt.backend, a branch the
 * CPU predicts perfectly because it never changes.
 *
 * Everything here is plain C with no Go pointers.
 */
#ifndef JP_PTT_H
#define JP_PTT_H

#include <stdint.h>
#include <time.h>

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

/* Per-thread backend state, embedded in the agent's thread record and
 * initialised on the thread itself by jp_ptt_thread_init(). */
typedef struct jp_ptt_thread {
	int tid;
	int slot;         /* BPF work-area slot, -1 if none */
	void *perf_page;  /* perf mmap page, NULL if none */
	int perf_fd;
	int fallback;     /* 1 when this thread could not use jp_ptt.backend */
} jp_ptt_thread;

/* Process-wide configuration, written once by ptt.Setup before events are
 * enabled and read-only afterwards. */
typedef struct jp_ptt_config {
	int backend;                     /* enum jp_ptt_backend */
	int nmetrics;                    /* 0..JP_PTT_MAX_METRICS */
	int metric[JP_PTT_MAX_METRICS];  /* enum jp_ptt_metric per column */
	int has_dispatches;              /* backend counts dispatches */
	int has_interrupts;              /* backend counts interrupts */
} jp_ptt_config;

extern jp_ptt_config jp_ptt;

/* Called on the thread itself, before its first read; returns 0 or -errno.
 * On failure the thread falls back to the clock backend. */
int jp_ptt_thread_init(jp_ptt_thread *t);
/* Called on the thread itself at its end; releases the slot or fd. */
void jp_ptt_thread_fini(jp_ptt_thread *t);

static inline uint64_t jp_ptt_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* jp_ptt_read fills r with the calling thread's current metrics. */
static inline void jp_ptt_read(const jp_ptt_thread *t, jp_ptt_reading *r)
{
	(void)t;
	switch (jp_ptt.backend) {
	case JP_PTT_CLOCK:
	default:
		r->v[0] = jp_ptt_clock_ns();
		r->dispatches = 0;
		r->interrupts = 0;
		break;
	}
}

#endif /* JP_PTT_H */
