/*
 * sampling.c: the sampling event source (SAMPLE=). Each Java thread gets
 * a timer that signals it; the handler walks the thread's Java stack
 * with HotSpot's AsyncGetCallTrace and adds the stack to the thread's
 * sampled tree (engine/sample.c). No method events are enabled: the JIT
 * runs as without an agent, and the walk needs no safepoint.
 *
 * Kinds: cpu, a perf task-clock event on each thread that signals it
 * (SIGPROF, F_SETOWN_EX to the thread) every period of its CPU time,
 * timed by a high-resolution timer; where perf events are refused, a
 * POSIX timer on the thread's CPU-time clock (timer_create,
 * SIGEV_THREAD_ID), which the kernel checks only at its tick, so periods
 * below the tick become one sample per tick. Either way a thread is
 * sampled only while it runs. wall, one timer thread that
 * signals every sampled thread each period (SIGVTALRM, tgkill), running
 * or not. Neither signal is used by HotSpot (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGQUIT, SIGUSR2, SIGPIPE, SIGXFSZ and the shutdown signals);
 * the Go runtime of a c-shared library installs handlers only for the
 * synchronous signals, SIGPIPE and its preemption signal (runtime
 * sigInstallGoHandler), and never targets a Java thread with either.
 *
 * The handler is async-signal-safe: it reads the thread's state through
 * an initial-exec TLS pointer, maps jmethodIDs to registry handles with
 * the lock-free jp_mid_find (methods get handles at ClassPrepare, and
 * for the classes loaded before VM init, outside the handler, and their
 * names only when a report needs them; a miss is the "<unknown-method>"
 * pseudo-frame), writes into storage made at
 * thread start, and only counts what it cannot record. It runs with
 * SA_ONSTACK: while a Java thread runs Go code (a cgo callback) the Go
 * runtime gives it an alternate signal stack, and the handler must not
 * push onto a small goroutine stack.
 *
 * A walk that fails at the top frame (the pc in a stub, an adapter, or a
 * frame being built or torn down: ticks_unknown_Java, ticks_not_walkable_
 * Java) is tried again from that frame's caller (jp_agct_retry), and the
 * sample hangs under "<top_frame_not_walkable>" beneath the caller's
 * stack instead of landing at the thread's root. A thread in the VM whose
 * last Java frame is recorded without its pc (ticks_unknown_not_Java) is
 * walked once that pc is filled in from its stack (jp_anchor_retry). Both
 * are in sampling_walk.c. A thread blocked in the VM that neither walks
 * is walked by the VM for another thread, after the sample
 * (sampling_defer.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "jvmtiagent.h"
#include "sampling.h"
#include "sampling_priv.h"

const jp_source jp_sampling = { "asgct-sampling", jp_mid_resolve, 1 };

/* Pseudo-frames for the failures, indexed by -num_frames (forte.cpp's
 * ticks_* codes). */
static const char *const jp_reason_names[JP_NREASONS] = {
	"<no_Java_frame>", "<no_class_load>", "<GC_active>", "<unknown_not_Java>",
	"<not_walkable_not_Java>", "<unknown_Java>", "<not_walkable_Java>", "<unknown_state>",
	"<thread_exit>", "<deopt>", "<safepoint>",
};

static __thread jp_sthread *jp_sself __attribute__((tls_model("initial-exec")));

struct jp_sampling_state jps = { .lock = PTHREAD_MUTEX_INITIALIZER, .def_done = PTHREAD_COND_INITIALIZER };


static uint64_t jp_clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* jp_path_of turns the n frames of the walk in s->frames (top first) into
 * handles at s->path[off..], top first, and returns the path's length; a
 * walk of depth frames (the most it was allowed) was cut, and hangs under
 * a pseudo-frame that says so. */
static uint32_t jp_path_of(jp_sthread *s, uint32_t n, uint32_t off, uint32_t depth)
{
	uint32_t *path = s->path + off;
	/* Root first: the outer frames mostly repeat the previous walk's,
	 * whose handles are known. */
	uint32_t d = 0, known = n;
	for (; d < n && d < s->prev_n && s->prev_mid[d] == s->frames[n - 1 - d].method_id; d++)
		path[n - 1 - d] = s->prev_h[d];
	for (; d < n; d++) {
		jmethodID mid = s->frames[n - 1 - d].method_id;
		uint32_t h = mid != NULL ? jp_mid_find(mid) : UINT32_MAX;
		if (h == UINT32_MAX) {
			h = jps.unknown_h;
			JP_COUNT(misses);
			if (known > d)
				known = d; /* not reused: it may be registered by the next walk */
		}
		path[n - 1 - d] = h;
		s->prev_mid[d] = mid;
		s->prev_h[d] = h;
	}
	s->prev_n = known;
	if (n >= depth) {
		path[n++] = jps.deep_h;
		JP_COUNT(deep);
	}
	return off + n;
}


static void jp_sample_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	int saved_errno = errno;
	/* Counted before jps.on is read: a stop that sees no handler under
	 * way is one no handler can pass on (jp_sampling_set). */
	__atomic_add_fetch(&jps.inflight, 1, __ATOMIC_SEQ_CST);
	jp_sthread *s = jp_sself;
	jp_sthread *jt = jp_jvm_thread_of(si);
	if (jt != NULL) {
		/* A JVM thread's timer: its thread has no Java state (one that
		 * has was taken for a JVM thread before its ThreadStart: the
		 * scanner drops it). */
		if (s != NULL || jt->tid != (int)syscall(SYS_gettid)) {
			JP_COUNT(unowned);
			goto out;
		}
		s = jt;
		/* A Java thread that ran before the attach: walked like one
		 * from now on (GetEnv only reads the VM's thread-local). */
		if (s->maybe_java > 0 && s->env == NULL) {
			JNIEnv *env = NULL;
			if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&env, JNI_VERSION_1_6) == JNI_OK && env != NULL) {
				s->env = env;
				jp_walk_thread_found(s);
			}
			else
				s->maybe_java = s->maybe_java == JP_JAVA_OR_NOTHING || jps.kind == JP_SAMPLE_WALL ? JP_NOT_SAMPLED : 0;
		}
		if (s->maybe_java == JP_NOT_SAMPLED) {
			JP_COUNT(unowned);
			goto out;
		}
	}
	if (s == NULL || !__atomic_load_n(&jps.on, __ATOMIC_SEQ_CST)) {
		JP_COUNT(unowned);
		goto out;
	}
	/* Weight: the thread's CPU (or wall) time since its previous sample;
	 * the first sample after arming stands for one period. */
	uint64_t cpu0 = jp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t now = jps.kind == JP_SAMPLE_WALL ? jp_clock_ns(CLOCK_MONOTONIC) : cpu0;
	uint32_t gen = __atomic_load_n(&s->arm_gen, __ATOMIC_RELAXED);
	uint64_t w = jp_period_of(s);
	if (gen == s->seen_gen && now > s->last)
		w = now - s->last;
	s->seen_gen = gen;
	s->last = now;

	/* A walk left at an earlier sample, done by now (or failed). */
	if (s->def_state != JP_DEF_IDLE)
		jp_defer_flush(s, 0);

	uint32_t n;
	jp_agct_trace tr = { s->env, 0, s->frames };
	if (s->env == NULL) {
		/* A JVM thread: no Java frames; its kind's pseudo-frame. */
		s->path[0] = s->kind_h;
		n = 1;
		JP_COUNT(jvm_samples);
		__atomic_fetch_add(&jps.st.jvm_weight_ns, w, __ATOMIC_RELAXED);
	} else if (jps.agct(&tr, (jint)jps.depth, uc), tr.num_frames > 0) {
		n = jp_path_of(s, (uint32_t)tr.num_frames, 0, jps.depth);
	} else if (tr.num_frames == -3 && jp_anchor_retry(s, &tr, uc)) {
		n = jp_path_of(s, (uint32_t)tr.num_frames, 0, jps.depth);
		JP_COUNT(anchored);
	} else if ((tr.num_frames == -3 || tr.num_frames == -4) && jp_stub_retry(s, &tr, uc)) {
		/* Walked from the stub's caller: the stub (the last Java
		 * frame's pc is in it) is a pseudo-frame under it, as a top
		 * frame walked from its caller is. */
		uintptr_t asp, apc;
		jp_anchor(s, &asp, &apc);
		s->path[0] = jp_stub_named(apc);
		n = jp_path_of(s, (uint32_t)tr.num_frames, 1, jps.depth - 1);
		JP_COUNT(stub_popped);
	} else if ((tr.num_frames == -5 || tr.num_frames == -6) && jp_agct_retry(s, &tr, uc)) {
		/* Walked from the caller: the top frame is a pseudo-frame
		 * under it, named after the stub it is in where known. */
		s->path[0] = jp_stub_at(uc);
		n = jp_path_of(s, (uint32_t)tr.num_frames, 1, jps.depth - 1);
		JP_COUNT(recovered);
	} else if ((tr.num_frames == -2 || tr.num_frames == -3 || tr.num_frames == -4) && jp_defer(s, w, -tr.num_frames)) {
		/* In the VM, during a GC (ticks_GC_active) or under a stub:
		 * left to the walker thread (sampling_defer.c), the path and
		 * this weight added once it is walked: at once if this thread
		 * is blocked and waited for it, else at a later sample. */
		n = 0;
	} else {
		int r = -tr.num_frames;
		if (r >= JP_NREASONS)
			r = 7; /* unknown_state */
		__atomic_fetch_add(&jps.st.reasons[r], 1, __ATOMIC_RELAXED);
		s->path[0] = jps.reason_h[r];
		n = 1;
		/* The previous walk's handles stay true (a jmethodID keeps
		 * its handle): the next walk still reuses them. */
	}
	if (n > 0 && jp_pcct_add(s->t, &s->pcct, s->path, n, w))
		JP_COUNT(limited);
	JP_COUNT(samples);
	__atomic_fetch_add(&jps.st.weight_ns, w, __ATOMIC_RELAXED);
	__atomic_fetch_add(&jps.st.handler_ns, jp_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, __ATOMIC_RELAXED);
out:
	__atomic_sub_fetch(&jps.inflight, 1, __ATOMIC_RELEASE);
	errno = saved_errno;
}

uint64_t jp_sampling_period(void)
{
	return jps.period_ns;
}

int jp_sampling_configure(int kind, uint64_t period_ns, uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if ((kind != JP_SAMPLE_CPU && kind != JP_SAMPLE_WALL && kind != JP_SAMPLE_TIMER) || period_ns == 0 ||
	    max_nodes < 16 || depth < 1) {
		snprintf(err, errlen, "bad sampling configuration");
		return -1;
	}
	if (kind == JP_SAMPLE_TIMER) {
		kind = JP_SAMPLE_CPU;
		jps.perf_refused = 1;
	}
	jps.kind = kind;
	jps.period_ns = period_ns;
	jps.max_nodes = max_nodes;
	jps.depth = depth;
	jps.signo = kind == JP_SAMPLE_WALL ? SIGVTALRM : SIGPROF;
	jpvm.sample = 1;
	return 0;
}

static void JNICALL cb_class_load(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
	/* Nothing to do: AsyncGetCallTrace refuses to walk
	 * (ticks_no_class_load) unless some agent has ClassLoad on. */
	(void)jvmti;
	(void)jni;
	(void)thread;
	(void)klass;
}

static void JNICALL cb_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass klass)
{
	(void)jni;
	(void)thread;
	uint64_t t0 = jp_clock_ns(CLOCK_MONOTONIC);
	int n = jp_mid_register_class(jvmti, klass);
	__atomic_fetch_add(&jps.st.prepared, (uint64_t)n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&jps.st.prepare_ns, jp_clock_ns(CLOCK_MONOTONIC) - t0, __ATOMIC_RELAXED);
}

static int jp_sampling_setup(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
			     int errlen)
{
	(void)jvmti;
	(void)live;
	(void)caps;
	/* Compiled code then says at every instruction which inlined
	 * method it belongs to, not only at safepoints. */
	jps.debug_nonsafepoints = jp_vm_set_bool_flag("DebugNonSafepoints", 1);
	jps.agct = (jp_agct_fn)dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
	if (jps.agct == NULL) {
		snprintf(err, errlen, "SAMPLE: this JVM does not export AsyncGetCallTrace");
		return -1;
	}
	for (int r = 0; r < JP_NREASONS; r++)
		jps.reason_h[r] = jp_method_register(jp_reason_names[r], JP_T_OTHER);
	jps.unknown_h = jp_method_register("<unknown-method>", JP_T_OTHER);
	jps.limit_h = jp_method_register("<sample-node-limit>", JP_T_OTHER);
	jps.deep_h = jp_method_register("<deeper-frames>", JP_T_OTHER);
	jps.top_h = jp_method_register("<top_frame_not_walkable>", JP_T_OTHER);
	jp_walk_setup();

	struct sigaction old;
	if (sigaction(jps.signo, NULL, &old) != 0) {
		snprintf(err, errlen, "SAMPLE: sigaction(%s): %s", strsignal(jps.signo), strerror(errno));
		return -1;
	}
	int has = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
					     : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
	if (has) {
		snprintf(err, errlen, "SAMPLE: signal %d (%s) already has a handler (another profiler?)", jps.signo,
			 strsignal(jps.signo));
		return -1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = jp_sample_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(jps.signo, &sa, NULL) != 0) {
		snprintf(err, errlen, "SAMPLE: sigaction(%s): %s", strsignal(jps.signo), strerror(errno));
		return -1;
	}
	cb->ClassLoad = cb_class_load;
	cb->ClassPrepare = cb_class_prepare;
	jp_jvm_threads_setup();
	return 0;
}

static void jp_sthread_free(jp_sthread *s)
{
	free(s->def_path);
	free(s->frames);
	free(s->path);
	free(s->prev_mid);
	free(s->prev_h);
	free(s);
}

static void jp_sampling_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	if (jp_sself != NULL || jp_walker_self)
		return;
	jp_thread *t = jp_thread_self();
	if (t == NULL && (t = jp_vm_thread(jvmti, thread)) == NULL) {
		JP_COUNT(setup_failures);
		return;
	}
	jp_sthread *s = calloc(1, sizeof *s);
	if (s == NULL) {
		JP_COUNT(setup_failures);
		return;
	}
	s->frames = calloc(jps.depth, sizeof(jp_agct_frame));
	s->path = calloc((size_t)jps.depth + 1, sizeof(uint32_t));
	s->prev_mid = calloc(jps.depth, sizeof(jmethodID));
	s->prev_h = calloc(jps.depth, sizeof(uint32_t));
	if (s->frames == NULL || s->path == NULL || s->prev_mid == NULL || s->prev_h == NULL ||
	    jp_pcct_init(t, &s->pcct, jps.max_nodes, jps.depth + 1, jps.limit_h) != 0) {
		jp_sthread_free(s);
		JP_COUNT(setup_failures);
		return;
	}
	s->perf_fd = -1;
	s->t = t;
	s->env = jni;
	/* For the walker thread, which may ask the VM for this thread's
	 * stack while it is listed. */
	s->ref = thread != NULL ? (*jni)->NewGlobalRef(jni, thread) : NULL;
	jp_walk_thread_start(s);
	s->tid = t->tid;
	/* Visible to the handler before any timer can fire. */
	jp_sself = s;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&jps.lock);
	s->next = jps.list;
	if (jps.list != NULL)
		jps.list->prev = s;
	jps.list = s;
	if (jps.on)
		jp_arm(s);
	pthread_mutex_unlock(&jps.lock);
	JP_COUNT(threads);
}

static void jp_sampling_thread_end(void)
{
	jp_sthread *s = jp_sself;
	if (s == NULL)
		return;
	/* A signal still on its way finds no state and only counts. */
	jp_sself = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&jps.lock);
	jp_disarm(s);
	jp_defer_wait(s);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		jps.list = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&jps.lock);
	/* Unlisted: the walker no longer looks at it. Counted as a handler
	 * is: a stop waits for this last flush too (jp_sampling_quiet). */
	__atomic_add_fetch(&jps.inflight, 1, __ATOMIC_SEQ_CST);
	jp_defer_flush(s, 1);
	__atomic_sub_fetch(&jps.inflight, 1, __ATOMIC_RELEASE);
	if (s->ref != NULL)
		(*s->env)->DeleteGlobalRef(s->env, s->ref);
	jp_pcct_free(&s->pcct);
	jp_sthread_free(s);
}

static void jp_sampling_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	/* The stubs generated before now (before the agent could hear of
	 * them, or before an attach), named for the walks that pop one
	 * (sampling_stubs.c); with JIT records on, that asks for them. */
	if (!jpvm.jit)
		(void)(*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
	/* Classes prepared before VM init (the start phase refuses
	 * GetClassMethods) get their jmethodIDs now. */
	uint64_t t0 = jp_clock_ns(CLOCK_MONOTONIC);
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) == JVMTI_ERROR_NONE) {
		uint64_t added = 0;
		for (jint i = 0; i < n; i++) {
			added += (uint64_t)jp_mid_register_class(jvmti, classes[i]);
			(*jni)->DeleteLocalRef(jni, classes[i]);
		}
		(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
		__atomic_fetch_add(&jps.st.prepared, added, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&jps.st.prepare_ns, jp_clock_ns(CLOCK_MONOTONIC) - t0, __ATOMIC_RELAXED);
	/* VM init runs on the thread that goes on to run main(). Attached,
	 * the Java threads already running are found by the thread scanner
	 * (sampling_threads.c) and walked once the handler sees their JNI
	 * environment. */
	if (!jpvm.live)
		jp_sampling_thread_start(jvmti, jni, thread);
	pthread_mutex_lock(&jps.lock);
	jps.vm_ready = 1;
	if (jps.on)
		(void)jp_defer_start(); /* a failure is said in the header (walker_on) */
	pthread_mutex_unlock(&jps.lock);
}

static uint64_t jp_process_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* jp_cpu_mark notes the process's CPU time at a turn on or off; jps.lock
 * held. */
static void jp_cpu_mark(int on)
{
	if (on && !jps.on) {
		jps.cpu_at = jp_process_cpu_ns();
		jps.on_ticks = jp_clock_ns(CLOCK_BOOTTIME) / (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	}
	else if (!on && jps.on)
		jps.cpu_before += jp_process_cpu_ns() - jps.cpu_at;
}

uint64_t jp_sampling_process_cpu(void)
{
	pthread_mutex_lock(&jps.lock);
	uint64_t d = jps.cpu_before;
	if (jps.on)
		d += jp_process_cpu_ns() - jps.cpu_at;
	pthread_mutex_unlock(&jps.lock);
	return d;
}

/* jp_sampling_quiet waits, once jps.on is 0, for the signal handlers
 * (and thread ends' last flushes) under way: one that read jps.on before
 * it changed would add its sample after the stop, where a reset that
 * follows would leave it to the next profile. A walk takes microseconds;
 * one waiting out a GC longer: not past half a second. Outside jps.lock,
 * which the walker serving a handler's deferred walk takes. */
static void jp_sampling_quiet(void)
{
	uint64_t until = jp_clock_ns(CLOCK_MONOTONIC) + 500000000ull;
	while (__atomic_load_n(&jps.inflight, __ATOMIC_SEQ_CST) != 0 && jp_clock_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
}

int jp_sampling_set(int on)
{
	int rc = 0;
	pthread_mutex_lock(&jps.lock);
	if (on && jp.dead) {
		rc = -1;
	} else if (on) {
		jp_cpu_mark(1);
		jp_collect(1);
		jps.on = 1;
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			jp_arm(s);
		/* The JVM's own threads (cpu), and attached, the Java threads
		 * that were running (every kind): the scanner finds them. */
		if (jps.kind == JP_SAMPLE_CPU || jpvm.live) {
			jp_jvm_threads_set(1);
			if (jp_jvm_threads_start() != 0)
				rc = errno ? errno : -2;
		}
		/* The walker attaches to the VM: not before VM init. */
		int e = jps.vm_ready ? jp_defer_start() : 0;
		if (e != 0)
			rc = e;
		if (jps.kind == JP_SAMPLE_WALL && !jps.wall_started) {
			if (pthread_create(&jps.wall, NULL, jp_wall_main, NULL) == 0) {
				pthread_detach(jps.wall);
				jps.wall_started = 1;
			} else {
				rc = errno ? errno : -2;
			}
		}
	} else {
		jp_cpu_mark(0);
		__atomic_store_n(&jps.on, 0, __ATOMIC_SEQ_CST);
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			jp_disarm(s);
		jp_jvm_threads_set(0);
		jp_collect(0);
	}
	pthread_mutex_unlock(&jps.lock);
	if (!on) {
		jp_sampling_quiet();
		jp_defer_stop();
	}
	return rc;
}

static void jp_sampling_die(void)
{
	jp_defer_stop();
	pthread_mutex_lock(&jps.lock);
	jp.dead = 1;
	jp_cpu_mark(0);
	__atomic_store_n(&jps.on, 0, __ATOMIC_SEQ_CST);
	for (jp_sthread *s = jps.list; s != NULL; s = s->next)
		jp_disarm(s);
	jp_jvm_threads_set(0);
	jp_collect(0);
	pthread_mutex_unlock(&jps.lock);
	jp_sampling_quiet();
}

void jp_sampling_stats(jp_sample_stats *out)
{
	uint64_t *src = (uint64_t *)&jps.st, *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(jp_sample_stats) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	out->deferred_pending = jp_defer_pending();
}

const char *jp_sampling_reason(int r)
{
	return r >= 0 && r < JP_NREASONS ? jp_reason_names[r] : "?";
}

static int jp_sampling_enable(jvmtiEnv *jvmti, int live, char *err, int errlen)
{
	(void)live;
	const jvmtiEvent evs[] = { JVMTI_EVENT_CLASS_LOAD, JVMTI_EVENT_CLASS_PREPARE, JVMTI_EVENT_THREAD_START };
	return jp_enable_events(jvmti, evs, sizeof evs / sizeof evs[0], err, errlen);
}

/* Timers are disarmed when sampling stops: nothing is left in the
 * program; the scanner thread sleeps while sampling is off. */
const jp_source_ops jp_sampling_ops = {
	.engine = &jp_sampling,
	.setup = jp_sampling_setup,
	.enable = jp_sampling_enable,
	.vm_init = jp_sampling_vm_init,
	.set = jp_sampling_set,
	.thread_start = jp_sampling_thread_start,
	.thread_end = jp_sampling_thread_end,
	.die = jp_sampling_die,
};

int jp_sampling_debuginfo(void)
{
	return jps.debug_nonsafepoints;
}
