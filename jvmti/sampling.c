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

const jp_source jp_sampling = { "asgct-sampling", jp_mid_resolve };

/* Pseudo-frames for the failures, indexed by -num_frames (forte.cpp's
 * ticks_* codes). */
static const char *const jp_reason_names[JP_NREASONS] = {
	"<no_Java_frame>", "<no_class_load>", "<GC_active>", "<unknown_not_Java>",
	"<not_walkable_not_Java>", "<unknown_Java>", "<not_walkable_Java>", "<unknown_state>",
	"<thread_exit>", "<deopt>", "<safepoint>",
};

static __thread jp_sthread *jp_sself __attribute__((tls_model("initial-exec")));

struct jp_sampling_state jps = { .lock = PTHREAD_MUTEX_INITIALIZER };


static uint64_t jp_clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void jp_sample_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	int saved_errno = errno;
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
			if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&env, JNI_VERSION_1_6) == JNI_OK && env != NULL)
				s->env = env;
			else
				s->maybe_java = s->maybe_java == JP_JAVA_OR_NOTHING || jps.kind == JP_SAMPLE_WALL ? JP_NOT_SAMPLED : 0;
		}
		if (s->maybe_java == JP_NOT_SAMPLED) {
			JP_COUNT(unowned);
			goto out;
		}
	}
	if (s == NULL || !jps.on) {
		JP_COUNT(unowned);
		goto out;
	}
	/* Weight: the thread's CPU (or wall) time since its previous sample;
	 * the first sample after arming stands for one period. */
	uint64_t cpu0 = jp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t now = jps.kind == JP_SAMPLE_WALL ? jp_clock_ns(CLOCK_MONOTONIC) : cpu0;
	uint32_t gen = __atomic_load_n(&s->arm_gen, __ATOMIC_RELAXED);
	uint64_t w = jps.period_ns;
	if (gen == s->seen_gen && now > s->last)
		w = now - s->last;
	s->seen_gen = gen;
	s->last = now;

	uint32_t n;
	jp_agct_trace tr = { s->env, 0, s->frames };
	if (s->env == NULL) {
		/* A JVM thread: no Java frames; its kind's pseudo-frame. */
		s->path[0] = s->kind_h;
		n = 1;
		JP_COUNT(jvm_samples);
		__atomic_fetch_add(&jps.st.jvm_weight_ns, w, __ATOMIC_RELAXED);
	} else if (jps.agct(&tr, (jint)jps.depth, uc), tr.num_frames <= 0) {
		int r = -tr.num_frames;
		if (r >= JP_NREASONS)
			r = 7; /* unknown_state */
		__atomic_fetch_add(&jps.st.reasons[r], 1, __ATOMIC_RELAXED);
		s->path[0] = jps.reason_h[r];
		n = 1;
		/* The previous walk's handles stay true (a jmethodID keeps
		 * its handle): the next walk still reuses them. */
	} else {
		n = (uint32_t)tr.num_frames;
		/* Root first: the outer frames mostly repeat the previous
		 * walk's, whose handles are known. */
		uint32_t d = 0, known = n;
		for (; d < n && d < s->prev_n && s->prev_mid[d] == s->frames[n - 1 - d].method_id; d++)
			s->path[n - 1 - d] = s->prev_h[d];
		for (; d < n; d++) {
			jmethodID mid = s->frames[n - 1 - d].method_id;
			uint32_t h = mid != NULL ? jp_mid_find(mid) : UINT32_MAX;
			if (h == UINT32_MAX) {
				h = jps.unknown_h;
				JP_COUNT(misses);
				if (known > d)
					known = d; /* not reused: it may be registered by the next walk */
			}
			s->path[n - 1 - d] = h;
			s->prev_mid[d] = mid;
			s->prev_h[d] = h;
		}
		s->prev_n = known;
		if (n >= jps.depth) {
			/* The walk stopped at the depth: the outer frames are
			 * missing, and the path hangs under a pseudo-frame
			 * that says so rather than under the root. */
			s->path[n++] = jps.deep_h;
			JP_COUNT(deep);
		}
	}
	if (jp_pcct_add(s->t, &s->pcct, s->path, n, w))
		JP_COUNT(limited);
	JP_COUNT(samples);
	__atomic_fetch_add(&jps.st.weight_ns, w, __ATOMIC_RELAXED);
	__atomic_fetch_add(&jps.st.handler_ns, jp_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, __ATOMIC_RELAXED);
out:
	errno = saved_errno;
}

/* The kernel's clock id for another thread's CPU time
 * (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): what pthread_getcpuclockid
 * computes, without needing a pthread_t that may be gone. */
static clockid_t jp_thread_cpuclock(int tid)
{
	return (clockid_t)(((unsigned int)~tid) << 3) | 6;
}

/* jp_perf_arm opens a task-clock event on s's thread that signals it
 * every period of its CPU time; -1 if perf events are refused. */
static int jp_perf_arm(jp_sthread *s)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = jps.period_ns;
	a.disabled = 1;
	/* perf_event_paranoid 2 allows user-space measurement only: the
	 * samples that land in the kernel are then skipped, and the next one
	 * weighs their time. */
	a.exclude_kernel = jps.perf_user_only;
	a.exclude_hv = 1;
	int fd = (int)syscall(__NR_perf_event_open, &a, s->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && !jps.perf_user_only && (errno == EACCES || errno == EPERM)) {
		jps.perf_user_only = 1;
		a.exclude_kernel = 1;
		fd = (int)syscall(__NR_perf_event_open, &a, s->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	struct f_owner_ex owner = { F_OWNER_TID, s->tid };
	if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, jps.signo) != 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* jp_arm starts sampling s; jps.lock held. */
void jp_arm(jp_sthread *s)
{
	if (s->armed)
		return;
	__atomic_add_fetch(&s->arm_gen, 1, __ATOMIC_RELAXED);
	s->perf_fd = -1;
	if (jps.kind == JP_SAMPLE_CPU && !jps.perf_refused) {
		s->perf_fd = jp_perf_arm(s);
		if (s->perf_fd >= 0) {
			s->armed = 1;
			JP_COUNT(perf_armed);
			return;
		}
		/* Refused once, refused for all: no use trying each thread. */
		jps.perf_refused = 1;
	}
	if (jps.kind == JP_SAMPLE_CPU) {
		struct sigevent sev;
		memset(&sev, 0, sizeof sev);
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = jps.signo;
		sev._sigev_un._tid = s->tid;
		/* Tells the handler a JVM thread's signal (jp_jvm_thread_of). */
		sev.sigev_value.sival_ptr = s->env == NULL || s->maybe_java != 0 ? s : NULL;
		if (timer_create(jp_thread_cpuclock(s->tid), &sev, &s->timer) != 0) {
			JP_COUNT(timer_failures);
			return;
		}
		struct itimerspec its;
		its.it_interval.tv_sec = (time_t)(jps.period_ns / 1000000000ull);
		its.it_interval.tv_nsec = (long)(jps.period_ns % 1000000000ull);
		its.it_value = its.it_interval;
		if (timer_settime(s->timer, 0, &its, NULL) != 0) {
			timer_delete(s->timer);
			JP_COUNT(timer_failures);
			return;
		}
		JP_COUNT(timer_armed);
	}
	s->armed = 1;
}

/* jp_disarm stops sampling s; jps.lock held. Deleting a timer also takes
 * its signal off the thread's pending queue. */
void jp_disarm(jp_sthread *s)
{
	if (!s->armed)
		return;
	if (s->perf_fd >= 0) {
		close(s->perf_fd);
		s->perf_fd = -1;
	} else if (jps.kind == JP_SAMPLE_CPU) {
		timer_delete(s->timer);
	}
	s->armed = 0;
}

/* The wall timer thread signals at most this many threads per period,
 * taking turns: with many threads, each is sampled less often rather
 * than the process drowning in signals. A sample still weighs the wall
 * time since its thread's previous one. */
#define JP_WALL_BATCH 16

/* jp_wall_signal_record signals a scanner's record's thread with the
 * record as the signal's value (rt_tgsigqueueinfo; the handler reads it
 * back, jp_jvm_thread_of). */
static void jp_wall_signal_record(pid_t pid, jp_sthread *s)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = jps.signo;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = s;
	syscall(SYS_rt_tgsigqueueinfo, pid, s->tid, jps.signo, &si);
}

static void *jp_wall_main(void *arg)
{
	(void)arg;
	/* The JVM-thread scanner leaves the agent's threads alone by name. */
	prctl(PR_SET_NAME, "libjprof-wall", 0, 0, 0);
	pid_t pid = getpid();
	struct timespec ts = { (time_t)(jps.period_ns / 1000000000ull), (long)(jps.period_ns % 1000000000ull) };
	uint64_t turn = 0; /* armed threads signalled so far, all periods */
	while (!jp.dead) {
		nanosleep(&ts, NULL);
		if (!jps.on)
			continue;
		pthread_mutex_lock(&jps.lock);
		/* Attached, the Java threads that ran before are the scanner's
		 * records: signalled with the record in the signal's value. */
		for (jp_sthread *s = jps.jvm; s != NULL; s = s->next)
			if (s->armed && s->maybe_java > 0)
				jp_wall_signal_record(pid, s);
		uint64_t armed = 0;
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			armed += s->armed != 0;
		if (armed > 0) {
			/* The batch starts where the previous one stopped. */
			uint64_t first = turn % armed, i = 0;
			int sent = 0;
			for (int pass = 0; pass < 2 && sent < JP_WALL_BATCH && (uint64_t)sent < armed; pass++) {
				i = 0;
				for (jp_sthread *s = jps.list; s != NULL && sent < JP_WALL_BATCH && (uint64_t)sent < armed; s = s->next) {
					if (!s->armed)
						continue;
					if ((pass == 0 && i >= first) || (pass == 1 && i < first)) {
						syscall(SYS_tgkill, pid, s->tid, jps.signo);
						sent++;
					}
					i++;
				}
			}
			turn += (uint64_t)sent;
		}
		pthread_mutex_unlock(&jps.lock);
	}
	return NULL;
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
	free(s->frames);
	free(s->path);
	free(s->prev_mid);
	free(s->prev_h);
	free(s);
}

static void jp_sampling_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	if (jp_sself != NULL)
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
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		jps.list = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&jps.lock);
	jp_pcct_free(&s->pcct);
	jp_sthread_free(s);
}

static void jp_sampling_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
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
	if (on && !jps.on)
		jps.cpu_at = jp_process_cpu_ns();
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
		jps.on = 0;
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			jp_disarm(s);
		jp_jvm_threads_set(0);
		jp_collect(0);
	}
	pthread_mutex_unlock(&jps.lock);
	return rc;
}

static void jp_sampling_die(void)
{
	pthread_mutex_lock(&jps.lock);
	jp.dead = 1;
	jp_cpu_mark(0);
	jps.on = 0;
	for (jp_sthread *s = jps.list; s != NULL; s = s->next)
		jp_disarm(s);
	jp_jvm_threads_set(0);
	jp_collect(0);
	pthread_mutex_unlock(&jps.lock);
}

void jp_sampling_stats(jp_sample_stats *out)
{
	uint64_t *src = (uint64_t *)&jps.st, *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(jp_sample_stats) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
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
