/*
 * sampling_defer.c: walks of threads blocked in the VM, made after the
 * sample by a thread that asks the VM for them.
 *
 * A Java thread that waits in the VM for a GC it caused, or for a lock,
 * while a runtime stub is its last frame (C2's allocation stubs, C1's
 * counter and allocation stubs) is in a state AsyncGetCallTrace cannot
 * walk (ticks_not_walkable_not_Java; and none while a GC runs:
 * ticks_GC_active), and the handler may not walk it
 * from the stub's caller as it does for a thread running VM code
 * (jp_stub_retry): a blocked thread may be walked by a GC at the same
 * moment, which must see the stub's frame. The VM itself walks such a
 * thread safely: JVMTI's GetStackTrace, from another thread, runs a
 * handshake that a blocked thread cannot leave its state before it ends.
 *
 * So the handler leaves the walk (the sample's weight, and the sp and pc
 * of the thread's last Java frame) in the thread's record and wakes the
 * walker thread, which asks the VM for the stack and keeps it only if
 * the thread's last Java frame was the sampled one both before and after
 * the walk (HotSpot clears it when the thread returns to Java): the
 * thread was in the call into the VM it was sampled in throughout, short
 * of leaving it and making the same call again (same stub, same depth)
 * within the walk.
 *
 * The walk waits for a GC in progress, after which the thread would
 * have returned to Java: about half such walks failed. (Suspending the
 * thread for the walk failed as often, the suspension itself waiting for
 * the GC, and a debugger's suspension could be undone by it.) So a
 * thread that is _thread_blocked, a state the VM treats as safe (it
 * never waits for such a thread, and walks its stack or runs a handshake
 * for it from another thread), waits in its handler for the walk, on a
 * futex (async-signal-safe), JP_PARK_NS at most: it stays in the call it
 * was blocked in anyway, past the GC's end by the time of the walk. The
 * bound covers a walker held up, by a long GC or by a lock the waiting
 * thread holds (the walk fails then, as before). A thread in any other
 * state is not held (_thread_blocked_trans: a safepoint may be waiting
 * for it to go on; the handler walks most such threads itself,
 * jp_stub_retry). The thread's own handler adds the found path with
 * the held weight: at once after a wait, else at its next sample (only
 * the thread writes its tree), or at its end; a walk that failed goes
 * under its reason then, as it would have at once; one left before
 * sampling stopped is dropped. The header counts each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include "sampling_priv.h"

/* Set on the walker thread: its ThreadStart (when it attaches) makes it
 * no sampled Java thread; the JVM-thread scanner samples it as the
 * profiler's (it is named libjprof-*). */
__thread int jp_walker_self;

/* Walkers are started by sampling's start and stopped by its stop (a
 * thread attached to the VM and idle in native code would hold up the
 * VM's exit: HotSpot waits up to 300 ms for such threads). Each walker
 * runs while jp_walker_gen is the generation it was started with;
 * jp_walker_gone is posted as one leaves. jps.lock guards the start. */
static int jp_walker_started, jp_sems_ready;
static volatile uint32_t jp_walker_gen;
static sem_t jp_walker_gone;
/* jdk.internal.vm.Continuation (JDK 19 and later), or NULL. */
static jclass jp_continuation;

/* Where the walker is, for a stop that it did not answer within its
 * second: said in log-msg (jp_defer_stop), so that a walker held up
 * somewhere in the VM is named rather than only waited for. */
enum { JP_WK_ATTACHING = 1, JP_WK_IDLE, JP_WK_WALKING, JP_WK_DETACHING, JP_WK_GONE };
static const char *const jp_walker_phases[] = {
	"not started", "attaching to the VM", "waiting for walks", "in GetStackTrace", "detaching from the VM", "gone",
};
static volatile int jp_walker_phase, jp_walker_target;

static void jp_walker_at(int phase)
{
	__atomic_store_n(&jp_walker_phase, phase, __ATOMIC_RELAXED);
}

/* How long a blocked thread's handler waits for the walker at most. */
#define JP_PARK_NS (20 * 1000000ll)

/* jp_defer_park keeps a thread blocked in the VM, in its handler, until
 * the walker has walked it (1), or for JP_PARK_NS at most (0). */
static int jp_defer_park(jp_sthread *s)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0); /* async-signal-safe, as futex */
	for (;;) {
		if (__atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) != JP_DEF_PENDING)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long left = JP_PARK_NS - ((t.tv_sec - t0.tv_sec) * 1000000000ll + (t.tv_nsec - t0.tv_nsec));
		if (left <= 0 || __atomic_load_n(&jps.walker_on, __ATOMIC_ACQUIRE) != 1)
			return 0;
		struct timespec rel = { (time_t)(left / 1000000000ll), (long)(left % 1000000000ll) };
		syscall(SYS_futex, &s->def_state, FUTEX_WAIT, JP_DEF_PENDING, &rel, NULL, 0);
	}
}

int jp_defer(jp_sthread *s, uint64_t w, int r)
{
	if (s->ref == NULL || jps.depth < 2 || __atomic_load_n(&jps.walker_on, __ATOMIC_ACQUIRE) != 1 ||
	    __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) != JP_DEF_IDLE)
		return 0;
	uintptr_t sp, pc;
	jp_anchor(s, &sp, &pc);
	if (sp == 0)
		return 0;
	s->def_sp = sp;
	s->def_pc = pc;
	s->def_w = w;
	s->def_reason = r;
	s->def_epoch = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&s->def_state, JP_DEF_PENDING, __ATOMIC_RELEASE);
	sem_post(&jps.walk_sem); /* async-signal-safe */
	if (jp_thread_blocked(s)) {
		JP_COUNT(parked);
		if (jp_defer_park(s))
			jp_defer_flush(s, 0);
		else
			JP_COUNT(park_timeouts);
	}
	return 1;
}

void jp_defer_flush(jp_sthread *s, int end)
{
	int st = __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE);
	if (st == JP_DEF_IDLE || (st == JP_DEF_PENDING && !end))
		return;
	if (!__atomic_load_n(&jps.on, __ATOMIC_SEQ_CST) || s->def_epoch != __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED)) {
		/* Sampling stopped since: the sample belongs to a period
		 * whose profile is written. */
		JP_COUNT(deferred_lost);
	} else {
		const uint32_t *path = s->def_path;
		uint32_t n = s->def_n;
		if (st == JP_DEF_DONE) {
			JP_COUNT(deferred);
		} else {
			/* Failed, or not walked before the thread ended. */
			JP_COUNT(deferred_failed);
			__atomic_fetch_add(&jps.st.reasons[s->def_reason], 1, __ATOMIC_RELAXED);
			path = &jps.reason_h[s->def_reason];
			n = 1;
		}
		if (jp_pcct_add(s->t, &s->pcct, path, n, s->def_w))
			JP_COUNT(limited);
	}
	__atomic_store_n(&s->def_state, JP_DEF_IDLE, __ATOMIC_RELEASE);
}

void jp_defer_wait(jp_sthread *s)
{
	while (s->def_busy)
		pthread_cond_wait(&jps.def_done, &jps.lock);
}

uint64_t jp_defer_pending(void)
{
	uint64_t n = 0;
	pthread_mutex_lock(&jps.lock);
	for (jp_sthread *s = jps.list; s != NULL; s = s->next)
		n += __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) != JP_DEF_IDLE;
	pthread_mutex_unlock(&jps.lock);
	return n;
}

/* jp_on_continuation: m is a method of jdk.internal.vm.Continuation (a
 * carrier's frames end there: a virtual thread was mounted, whose frames
 * GetStackTrace of the carrier does not give). */
static int jp_on_continuation(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID m)
{
	jclass c = NULL;
	if (jp_continuation == NULL || (*jvmti)->GetMethodDeclaringClass(jvmti, m, &c) != JVMTI_ERROR_NONE)
		return 0;
	int is = (*jni)->IsSameObject(jni, c, jp_continuation);
	(*jni)->DeleteLocalRef(jni, c);
	return is;
}

/* jp_at_sampled says whether s's last Java frame is the one its handler
 * saw when it left the walk. */
static int jp_at_sampled(const jp_sthread *s)
{
	uintptr_t sp, pc;
	jp_anchor(s, &sp, &pc);
	return sp == s->def_sp && pc == s->def_pc;
}

/* jp_defer_walk makes the walk s's handler left; s->def_busy is set, so
 * that s stays listed (its thread has not ended) and its reference
 * valid. */
static void jp_defer_walk(jvmtiEnv *jvmti, JNIEnv *jni, jp_sthread *s, jvmtiFrameInfo *fr)
{
	int ok = 0;
	jint count = 0;
	jp_walker_target = s->tid;
	jp_walker_at(JP_WK_WALKING);
	/* Its path: <top_frame_not_walkable> (what the VM was called
	 * from), the frames, and <deeper-frames> if they were cut. */
	if (s->def_path == NULL)
		s->def_path = malloc(((size_t)jps.depth + 1) * sizeof(uint32_t));
	if (s->def_path != NULL && jp_at_sampled(s) &&
	    (*jvmti)->GetStackTrace(jvmti, s->ref, 0, (jint)jps.depth, fr, &count) == JVMTI_ERROR_NONE && count > 0 &&
	    jp_at_sampled(s) && !jp_on_continuation(jvmti, jni, fr[0].method)) {
		uint32_t n = 0, keep = (uint32_t)count < jps.depth ? (uint32_t)count : jps.depth - 1;
		s->def_path[n++] = jps.top_h;
		for (uint32_t i = 0; i < keep; i++) {
			uint32_t h = jp_mid_find(fr[i].method);
			if (h == UINT32_MAX) {
				h = jps.unknown_h;
				JP_COUNT(misses);
			}
			s->def_path[n++] = h;
		}
		if (keep < (uint32_t)count) {
			s->def_path[n++] = jps.deep_h;
			JP_COUNT(deep);
		}
		s->def_n = n;
		ok = 1;
	}
	jp_walker_at(JP_WK_IDLE);
	__atomic_store_n(&s->def_state, ok ? JP_DEF_DONE : JP_DEF_FAILED, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->def_state, FUTEX_WAKE, 1, NULL, NULL, 0); /* a parked handler */
}

/* jp_next_pending is a listed thread whose walk waits; jps.lock held. */
static jp_sthread *jp_next_pending(void)
{
	for (jp_sthread *s = jps.list; s != NULL; s = s->next)
		if (!s->def_busy && __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) == JP_DEF_PENDING)
			return s;
	return NULL;
}

static void *jp_walker_main(void *arg)
{
	uint32_t gen = (uint32_t)(uintptr_t)arg;
	jp_walker_self = 1;
	/* Named before anything can see it: the JVM-thread scanner tells
	 * the profiler's threads by their names. */
	prctl(PR_SET_NAME, "libjprof-walker", 0, 0, 0);
	static char name[] = "libjprof-walker";
	JNIEnv *jni = NULL;
	jvmtiFrameInfo *fr = calloc(jps.depth, sizeof *fr);
	jp_walker_at(JP_WK_ATTACHING);
	if (fr == NULL || jp_attach_current(name) != 0 ||
	    (*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK) {
		free(fr);
		__atomic_store_n(&jps.walker_on, -1, __ATOMIC_RELEASE);
		jp_walker_at(JP_WK_GONE);
		sem_post(&jp_walker_gone);
		return NULL;
	}
	jp_walker_at(JP_WK_IDLE);
	if (jp_continuation == NULL) {
		jclass c = (*jni)->FindClass(jni, "jdk/internal/vm/Continuation");
		if (c != NULL) {
			jp_continuation = (jclass)(*jni)->NewGlobalRef(jni, c);
			(*jni)->DeleteLocalRef(jni, c);
		} else {
			(*jni)->ExceptionClear(jni); /* before JDK 19 */
		}
	}
	if (__atomic_load_n(&jp_walker_gen, __ATOMIC_ACQUIRE) == gen)
		__atomic_store_n(&jps.walker_on, 1, __ATOMIC_RELEASE);
	for (;;) {
		while (sem_wait(&jps.walk_sem) != 0 && errno == EINTR)
			;
		if (__atomic_load_n(&jp_walker_gen, __ATOMIC_ACQUIRE) != gen)
			break;
		/* One pass serves every walk left so far (the wakes of the
		 * ones it served are spent on empty passes). The lock is not
		 * held during a walk, which can wait out a GC: a thread that
		 * ends waits for def_busy instead. */
		pthread_mutex_lock(&jps.lock);
		jp_sthread *s;
		while ((s = jp_next_pending()) != NULL) {
			s->def_busy = 1;
			pthread_mutex_unlock(&jps.lock);
			jp_defer_walk(jpvm.jvmti, jni, s, fr);
			pthread_mutex_lock(&jps.lock);
			s->def_busy = 0;
			pthread_cond_broadcast(&jps.def_done);
		}
		pthread_mutex_unlock(&jps.lock);
	}
	free(fr);
	jp_walker_at(JP_WK_DETACHING);
	(*jpvm.vm)->DetachCurrentThread(jpvm.vm);
	jp_walker_at(JP_WK_GONE);
	sem_post(&jp_walker_gone);
	return NULL;
}

int jp_defer_start(void)
{
	if (jp_walker_started)
		return 0;
#if defined(__x86_64__)
	if (jps.last_sp_off < 0 || jps.last_pc_off < 0)
		return 0;
#else
	return 0; /* no anchor read (sampling_walk.c): nothing is deferred */
#endif
	if (!jp_sems_ready) {
		if (sem_init(&jps.walk_sem, 0, 0) != 0 || sem_init(&jp_walker_gone, 0, 0) != 0) {
			__atomic_store_n(&jps.walker_on, -1, __ATOMIC_RELEASE);
			return errno ? errno : -1;
		}
		jp_sems_ready = 1;
	}
	uint32_t gen = __atomic_add_fetch(&jp_walker_gen, 1, __ATOMIC_ACQ_REL);
	jp_walker_at(JP_WK_ATTACHING); /* not an earlier walker's "gone" */
	pthread_t walker;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&walker, &attr, jp_walker_main, (void *)(uintptr_t)gen);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		__atomic_store_n(&jps.walker_on, -1, __ATOMIC_RELEASE); /* said in the header */
		return rc;
	}
	jp_walker_started = 1;
	return 0;
}

void jp_defer_stop(void)
{
	pthread_mutex_lock(&jps.lock);
	int was = jp_walker_started;
	jp_walker_started = 0;
	if (was) {
		__atomic_store_n(&jps.walker_on, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&jp_walker_gen, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_unlock(&jps.lock);
	if (!was)
		return;
	/* Woken, it detaches and leaves; a walk in progress ends first (it
	 * may wait out a GC): a second at the most. */
	sem_post(&jps.walk_sem);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	int rc;
	while ((rc = sem_timedwait(&jp_walker_gone, &until)) != 0 && errno == EINTR)
		;
	if (rc != 0) {
		int ph = __atomic_load_n(&jp_walker_phase, __ATOMIC_RELAXED);
		if (ph < 0 || ph > JP_WK_GONE)
			ph = 0;
		char tid[32] = "";
		if (ph == JP_WK_WALKING)
			snprintf(tid, sizeof tid, " of tid %d", jp_walker_target);
		jp_notef("sampling: the stack walker thread did not stop within a second of sampling's stop (it was %s%s); "
			 "it stops on its own once the VM lets it",
			 jp_walker_phases[ph], tid);
	}
}
