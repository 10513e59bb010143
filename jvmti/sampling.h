/*
 * sampling.h: the sampling source's kinds and counters, shared by
 * sampling.c and the Go side (sampling.go).
 */
#ifndef JP_SAMPLING_H
#define JP_SAMPLING_H

#include <stdint.h>

enum jp_sample_kind {
	JP_SAMPLE_CPU = 0,  /* per-thread CPU-time timers, SIGPROF */
	JP_SAMPLE_WALL = 1, /* a timer thread signals every thread, SIGVTALRM */
	JP_SAMPLE_TIMER = 2, /* cpu with POSIX CPU timers only, no perf events */
};

/* AsyncGetCallTrace's failure codes, negated: 0 no Java frame ... 10
 * safepoint (HotSpot prims/forte.cpp). */
#define JP_NREASONS 11

/* The JVM's own threads are sampled at this period of their CPU time at
 * the least: their samples name only their kind, and each weighs the
 * CPU time since the thread's last, so a longer period keeps their
 * total and costs them, the JIT compilers above all, fewer signals. */
#define JP_JVM_PERIOD_NS 10000000ull

/* Counters since VM start; all uint64_t (jp_sampling_stats copies them
 * as an array). */
typedef struct jp_sample_stats {
	uint64_t samples;        /* signals handled on a sampled thread */
	uint64_t reasons[JP_NREASONS]; /* walks that failed, by reason */
	uint64_t misses;         /* frames whose jmethodID was not registered */
	uint64_t deep;           /* walks cut at the depth limit */
	uint64_t limited;        /* samples charged to <sample-node-limit> */
	uint64_t unowned;        /* signals on a thread without state, or after stop */
	uint64_t timer_failures; /* timers that could not be made */
	uint64_t setup_failures; /* threads left unsampled (no memory) */
	uint64_t threads;        /* threads given sampling state */
	uint64_t weight_ns;      /* time all samples stand for */
	uint64_t perf_armed;     /* cpu: threads armed with a perf task-clock event */
	uint64_t timer_armed;    /* cpu: threads armed with a POSIX CPU timer */
	uint64_t handler_ns;     /* thread CPU time spent in the handler (its own cost) */
	uint64_t prepare_ns;     /* time spent making jmethodIDs at class prepare and VM init */
	uint64_t prepared;       /* methods given a handle there */
	uint64_t jvm_threads;    /* the JVM's own threads sampled (GC, JIT compilers, VM thread) */
	uint64_t jvm_samples;    /* samples on them */
	uint64_t jvm_weight_ns;  /* time those samples stand for */
	uint64_t jvm_ended;      /* JVM threads seen to end */
	uint64_t recovered;      /* walks that failed at the top frame and succeeded from its caller */
	uint64_t anchored;       /* walks of a thread in the VM that succeeded once its last Java pc was filled in */
	uint64_t stub_popped;    /* walks of a thread in the VM that succeeded from the caller of the stub that called into it */
	uint64_t deferred;       /* walks of a blocked thread left to the walker thread and found by it */
	uint64_t deferred_failed; /* walks left to it that it could not make (counted in reasons too) */
	uint64_t deferred_lost;  /* walks left to it whose sample was dropped: sampling stopped first */
	uint64_t deferred_pending; /* walks left to it and not yet added (read by jp_sampling_stats) */
	uint64_t parked;         /* deferred walks of a blocked thread its handler waited for */
	uint64_t park_timeouts;  /* of those, waits that gave up (the walker took too long) */
} jp_sample_stats;

void jp_sampling_stats(jp_sample_stats *out);
/* jp_sampling_process_cpu is the process's CPU time (ns, all threads,
 * getrusage) while sampling was on. */
uint64_t jp_sampling_process_cpu(void);
/* jp_sampling_period is the configured period, ns. */
uint64_t jp_sampling_period(void);
const char *jp_sampling_reason(int r);
/* jp_sampling_debuginfo: turning DebugNonSafepoints on gave this
 * (jp_vm_set_bool_flag). */
int jp_sampling_debuginfo(void);
/* jp_sampling_recovery says which recoveries of failed walks HotSpot's
 * structure table allows: 1 from the caller of the top frame (the code
 * cache's bounds known), 2 from a thread's last Java frame (its anchor
 * known); 4 says the walker thread of blocked threads could not start
 * or attach to the VM (sampling_defer.c); 8 that where a thread keeps
 * its polling word (sampling_poll.c) or its suspend flags is not known
 * (threads in the VM under a runtime stub are then left to the walker). */
int jp_sampling_recovery(void);

#endif /* JP_SAMPLING_H */
