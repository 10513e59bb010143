/*
 * state.h: the process-wide engine state jp (threads.c) and jp_source,
 * the hooks of the event source feeding it. Apart because it holds a
 * part of most other concerns (thread lists, registry limit, calibration
 * minima, log-gen handover), so it comes after their headers.
 */
#ifndef JP_STATE_H
#define JP_STATE_H

#include <stdint.h>
#include "thread.h"
#include "loggen.h"

/* An event source's hooks. resolve turns the source's key of a method
 * into a registry handle; it runs on the event's thread the first time
 * a calling context is seen, and may take locks and call the VM. */
typedef struct jp_source {
	const char *name;
	uint32_t (*resolve)(uintptr_t key);
	/* The metrics are the source's own values (a sample's weight, an
	 * allocation's bytes, a wait's delay), added where they happen, not
	 * PTT readings between events: nothing is read or charged when a
	 * virtual thread switches carriers. */
	int own_values;
} jp_source;

/* Process-wide engine state (one instance). */
typedef struct jp_state {
	const jp_source *source;  /* the source feeding the engine */
	int nmetrics;             /* copy of jp_ptt.nmetrics */
	uint32_t node_stride;     /* sizeof(jp_node) + 8*nmetrics */
	volatile uint32_t epoch;  /* bumped when collection (re)starts */
	jp_thread *threads;       /* list head, pushed with CAS; unlinked only by Go */
	jp_ended *ended;          /* packed ended threads: Go's alone */
	uint32_t nthreads;        /* ids given out */
	volatile int collecting;  /* the source delivers events */
	volatile int dead;        /* VM death seen: no more collection */
	/* Events are recorded inside ROOTS only: a thread's time after its
	 * last root exit is not its root's (jp_thread_detach). */
	volatile int roots;
	void (*src_state_free)(void *); /* frees jp_thread.src_state, if a source keeps one */
	uint32_t max_methods;     /* registry limit */
	uint64_t methods_over;    /* registrations refused: limit or memory */
	/* Calibration: minimum delta per key and metric, [key*nmetrics+k],
	 * shared by all threads, lowered with CAS; UINT64_MAX = never seen. */
	uint64_t *minima;
	/* The same for threads whose reads fell back to the clock (a
	 * syscall per read, hundreds of ns more per event than bpf or perf):
	 * NULL unless the backend is bpf or perf. The environmental overhead
	 * (env) is the glue that runs without profiling, the same for both. */
	uint64_t *minima_fb;
	/* What calibration keeps of each key's minimum, per key and metric
	 * (same layout; calibration.Entry.Kept), for the online-calibrated
	 * values of log-gen. */
	int64_t *env;
	/* The calibration table's minimum per key and metric (same layout;
	 * UINT64_MAX: none), for log-gen's online values: a run's minimum
	 * more than JP_OWN_MIN_EXCESS times it spans real work, and the
	 * table's is removed instead (calibration.FinalMinimum). */
	uint64_t *tmin;
	int calibrate;
	/* late_read: a second PTT read at the end of each event (JProf's
	 * Early/Late Read split), so that no delta holds the event's own
	 * work; 0: one read per event, the next delta holding this event's
	 * work after its read, which calibration removes with the rest of
	 * the glue. Set before the first event. */
	int late_read;
	/* log-gen */
	int loggen;
	int genraw;                      /* raw deltas, for post-processing */
	jp_genbuf *gen_full;             /* handover list, newest first */
	volatile uint32_t gen_pending;   /* buffers handed over, not yet freed */
	uint64_t gen_waits;              /* times a thread waited for the writer */
} jp_state;

extern jp_state jp;

/* jp_engine_init sets the engine up before any event: metrics come from
 * the PTT configuration (jp_ptt). Returns 0, or -1 with err filled. */
int jp_engine_init(const jp_source *src, int calibrate, int loggen, uint32_t max_methods, char *err, int errlen);

static inline jp_thread *jp_threads(void)
{
	return __atomic_load_n(&jp.threads, __ATOMIC_ACQUIRE);
}

#endif /* JP_STATE_H */
