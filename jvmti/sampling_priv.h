/*
 * sampling_priv.h: the sampling source's state, shared by its files:
 * sampling.c (Java threads: timers, the handler, AsyncGetCallTrace) and
 * sampling_threads.c (the JVM's own threads: GC, JIT compilers, the VM
 * thread).
 */
#ifndef JP_SAMPLING_PRIV_H
#define JP_SAMPLING_PRIV_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>

#include "jvmtiagent.h"
#include "sampling.h"

/* AsyncGetCallTrace's interface (HotSpot prims/forte.cpp). */
typedef struct {
	jint lineno; /* bci; -3 for a native method */
	jmethodID method_id;
} jp_agct_frame;
typedef struct {
	JNIEnv *env_id;
	jint num_frames; /* frames, or a jp_agct_reason negated */
	jp_agct_frame *frames;
} jp_agct_trace;
typedef void (*jp_agct_fn)(jp_agct_trace *, jint, void *);

/* One sampled thread. A Java thread's is made and freed on the thread
 * itself; a JVM thread's (env NULL, kind_h set) by the thread scanner.
 * Listed (under jps.lock) so that start and stop can arm and disarm its
 * timer from the control thread. */
typedef struct jp_sthread {
	struct jp_sthread *next, *prev;
	jp_thread *t;
	JNIEnv *env;
	int tid;
	int armed;               /* timer made (cpu) / signalled by the wall thread */
	int perf_fd;             /* cpu: the perf event, or -1 for the timer */
	timer_t timer;
	volatile uint32_t arm_gen; /* bumped at each arming */
	uint32_t seen_gen;       /* handler: arm_gen of the previous sample */
	uint64_t last;           /* handler: clock at the previous sample */
	jp_agct_frame *frames;   /* [jps.depth] */
	uint32_t *path;          /* [jps.depth + 1]: handles, top first */
	/* The previous walk, root first: a frame whose method is the one
	 * at the same depth then takes its handle without a lookup. */
	jmethodID *prev_mid;     /* [jps.depth] */
	uint32_t *prev_h;        /* [jps.depth] */
	uint32_t prev_n;
	/* The thread's stack, [stack_lo, stack_hi): where the handler may
	 * read a frame's words (0 when unknown: no recovery). */
	uintptr_t stack_lo, stack_hi;
	jp_pcct pcct;
	/* JVM threads: the pseudo-frame of the thread's kind, its start
	 * time (/proc stat field 22: a reused tid is a new thread) and
	 * whether the last scan saw it. */
	uint32_t kind_h;
	/* Its timer's period, if not jps.period_ns (a JVM thread's:
	 * JP_JVM_PERIOD_NS at the least). */
	uint64_t period_ns;
	/* Attached: a thread found running that may be a Java thread (the
	 * handler looks for its JNI environment): JP_MAYBE_JAVA, or
	 * JP_JAVA_OR_NOTHING for one named like the process (the main
	 * thread; or the launcher's and the Go runtime's, left out), which
	 * becomes JP_NOT_SAMPLED if it is not. */
	int maybe_java;
	unsigned long long starttime;
	int seen;
	/* A walk left to the walker thread (sampling_defer.c): the thread
	 * (a global reference; NULL for threads that ran before an attach),
	 * the deferral's state (JP_DEF_*), the last Java frame's sp and pc,
	 * the sample's weight, failure (its reason) and collection epoch when
	 * it was left, the path the walker found (allocated at the thread's
	 * first deferral), and whether the walker is at it (jps.lock). */
	jobject ref;
	volatile int def_state;
	int def_reason;
	uint32_t def_epoch;
	uintptr_t def_sp, def_pc;
	uint64_t def_w;
	uint32_t *def_path;
	uint32_t def_n;
	int def_busy;
} jp_sthread;

enum { JP_DEF_IDLE, JP_DEF_PENDING, JP_DEF_DONE, JP_DEF_FAILED };

enum { JP_NOT_SAMPLED = -1, JP_MAYBE_JAVA = 1, JP_JAVA_OR_NOTHING = 2 };

struct jp_sampling_state {
	int kind;
	uint64_t period_ns;
	uint32_t max_nodes, depth;
	int signo;
	jp_agct_fn agct;
	uint32_t reason_h[JP_NREASONS];
	uint32_t unknown_h, limit_h, deep_h, top_h;
	/* CodeCache::_low_bound and _high_bound (their addresses: the cache
	 * is laid out after the agent loads), or NULL. */
	const volatile uintptr_t *code_lo, *code_hi;
	/* Where a JavaThread keeps its JNIEnv (the env is inside it), its
	 * last Java frame's sp, pc and fp (JavaFrameAnchor) and its state;
	 * -1 unknown. */
	long env_off, last_sp_off, last_pc_off, last_fp_off, state_off;
	/* Its suspend flags (uint32_t), and its stack's top (base) and size,
	 * -1 unknown. */
	long suspend_off, stack_base_off, stack_size_off;
	/* Where a JavaThread keeps its safepoint polling word, which the
	 * table does not list (sampling_poll.c), and the disarmed polling
	 * page: poll_ok is 1 once they were found, -1 once they were not or
	 * a thread's words there were not a polling word and page (never
	 * used then), 0 before. */
	long poll_off;
	uintptr_t poll_page;
	int poll_ok;
	volatile int on;
	/* Signal handlers under way (jp_sample_handler), waited for when
	 * sampling stops. */
	int inflight;
	int debug_nonsafepoints; /* jp_vm_set_bool_flag's result: 0 or 1 when on */
	int perf_refused;   /* cpu: perf events refused, POSIX timers instead */
	int perf_user_only; /* cpu: perf events allowed for user space only */
	pthread_mutex_t lock;
	jp_sthread *list;   /* Java threads */
	jp_sthread *jvm;    /* the JVM's own threads (sampling_threads.c) */
	int wall_started;
	pthread_t wall;
	jp_sample_stats st; /* counters, relaxed atomics */
	/* The process's CPU time while sampling was on: earlier periods,
	 * and where the current one started (ns). */
	uint64_t cpu_before, cpu_at;
	/* When sampling last turned on, in clock ticks since boot (the unit
	 * of a thread's start time in /proc). */
	unsigned long long on_ticks;
	/* The walker thread (sampling_defer.c): started, and woken by the
	 * handler for each walk it leaves. */
	volatile int walker_on; /* 1 running, -1 could not attach */
	sem_t walk_sem;
	pthread_cond_t def_done; /* a thread's def_busy cleared (jps.lock) */
	int vm_ready; /* VM init has run: a thread may attach */
};
extern struct jp_sampling_state jps;

#define JP_COUNT(field) __atomic_fetch_add(&jps.st.field, 1, __ATOMIC_RELAXED)

/* sampling.c: arming and disarming a thread's timer (jps.lock held). */
void jp_arm(jp_sthread *s);
/* jp_period_of is s's sampling period, ns (sampling_timers.c). */
uint64_t jp_period_of(const jp_sthread *s);
void jp_disarm(jp_sthread *s);
/* sampling_threads.c: the JVM's threads. jp_jvm_threads_setup registers
 * the kinds' pseudo-frames; jp_jvm_threads_start starts the scanner (on
 * the first start); jp_jvm_thread_of is the JVM thread a signal is for
 * (NULL for a Java thread's); jp_jvm_threads_set arms (1) or disarms (0)
 * them all, jps.lock held. */
void jp_jvm_threads_setup(void);
int jp_jvm_threads_start(void);
jp_sthread *jp_jvm_thread_of(const siginfo_t *si);
void jp_jvm_threads_set(int on);

/* sampling_walk.c: recovering failed walks. jp_walk_setup reads what
 * they need from HotSpot's structure table (at set-up);
 * jp_walk_thread_start notes a Java thread's stack (s->env set, on the
 * thread itself); the retries walk again into tr and say whether that
 * worked, leaving the signal's context as they found it. */
void jp_walk_setup(void);
void jp_walk_thread_start(jp_sthread *s);
/* jp_walk_thread_found: the same for a thread that ran before an attach,
 * in its handler once its JNIEnv is known (async-signal-safe). */
void jp_walk_thread_found(jp_sthread *s);
/* jp_peek reads n bytes at addr without faulting where nothing is mapped;
 * 0 when it read them all. */
int jp_peek(uintptr_t addr, void *out, size_t n);

/* sampling_poll.c: a thread's safepoint polling word. jp_poll_check
 * finds it, or checks it, on a thread starting (s->env and its stack
 * set); jp_poll_disarmed says whether the JavaThread at thread has
 * nothing asked of it now (0 when the word is not known); jp_poll_known
 * whether the word was found. */
void jp_poll_check(const jp_sthread *s);
int jp_poll_disarmed(const char *thread);
int jp_poll_known(void);
int jp_agct_retry(jp_sthread *s, jp_agct_trace *tr, void *uc);
int jp_anchor_retry(jp_sthread *s, jp_agct_trace *tr, void *uc);
int jp_stub_retry(jp_sthread *s, jp_agct_trace *tr, void *uc);

/* sampling_stubs.c: jp_stub_named names the generated code (stub,
 * adapter, interpreter) at pc, for a top frame walked from its caller:
 * its pseudo-frame, or jps.top_h; jp_stub_at names that at the signal's
 * pc. */
uint32_t jp_stub_named(uintptr_t pc);
uint32_t jp_stub_at(const void *uc);

/* sampling_defer.c: walks of threads blocked in the VM, left by the
 * handler to a thread that can ask the VM for them. jp_defer leaves the
 * walk of a sample of weight w that failed for reason r (the handler, on
 * s's thread) and says whether it did; jp_defer_flush adds to s's tree
 * what the walker found for the sample it left, or that sample under its
 * reason if the walk failed (on s's thread: in the handler, or at the
 * thread's end with end set); jp_defer_wait waits until the walker is
 * not at s, jps.lock held (before s is unlisted); jp_defer_start starts
 * the walker (jps.lock held), jp_defer_stop stops it and waits for it to
 * leave (jps.lock not held); jp_defer_pending counts the walks left and
 * not yet added (jps.lock not held). jp_anchor reads s's last Java
 * frame's sp and pc (0: none or unknown; sampling_walk.c). */
int jp_defer(jp_sthread *s, uint64_t w, int r);
void jp_defer_flush(jp_sthread *s, int end);
void jp_defer_wait(jp_sthread *s);
int jp_defer_start(void);
void jp_defer_stop(void);
uint64_t jp_defer_pending(void);
void jp_anchor(const jp_sthread *s, uintptr_t *sp, uintptr_t *pc);
/* jp_thread_blocked says whether s's thread is blocked in the VM
 * (HotSpot's _thread_blocked): a state the VM treats as safe, whose
 * stack it may walk while the thread waits, and whose thread it never
 * waits for (sampling_walk.c). */
int jp_thread_blocked(const jp_sthread *s);
/* jp_walker_self is set on the walker thread. */
extern __thread int jp_walker_self;

/* jp_wall_main is the wall-clock thread (sampling_timers.c). */
void *jp_wall_main(void *arg);

#endif /* JP_SAMPLING_PRIV_H */
