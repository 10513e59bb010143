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
 * So the handler leaves the walk (the sample's weight and the sp of the
 * thread's last Java frame) in the thread's record and wakes the walker
 * thread, which asks the VM for the stack if the thread's last Java frame
 * is still the one it was sampled in (HotSpot clears it when the thread
 * returns to Java): the thread is still in the call from that frame into
 * the VM (or, at worst, in another from the same frame, whose Java stack
 * is the same), and it cannot leave the VM while the walk's handshake is
 * pending, only in the few instructions between that check and the
 * handshake's start. The thread's own handler adds the found path, with the
 * held weight, at its next sample (only the thread writes its tree), or
 * at its end; a walk that failed goes under its reason then, as it would
 * have at once. Samples whose walk was left this way are counted apart
 * (deferred), so the header says how many stacks came from it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sampling_priv.h"

/* Set on the walker thread: its ThreadStart (when it attaches) makes it
 * no sampled Java thread; the JVM-thread scanner samples it as the
 * profiler's (it is named libjprof-*). */
__thread int jp_walker_self;

static pthread_t jp_walker;
static int jp_walker_started;

int jp_defer(jp_sthread *s, uint64_t w, int r)
{
	if (s->ref == NULL || __atomic_load_n(&jps.walker_on, __ATOMIC_ACQUIRE) != 1 ||
	    __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) != JP_DEF_IDLE)
		return 0;
	uintptr_t sp = jp_anchor_sp(s);
	if (sp == 0)
		return 0;
	s->def_sp = sp;
	s->def_w = w;
	s->def_reason = r;
	__atomic_store_n(&s->def_state, JP_DEF_PENDING, __ATOMIC_RELEASE);
	sem_post(&jps.walk_sem); /* async-signal-safe */
	return 1;
}

void jp_defer_flush(jp_sthread *s, int end)
{
	int st = __atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE);
	if (st == JP_DEF_IDLE || (st == JP_DEF_PENDING && !end))
		return;
	const uint32_t *path = s->def_path;
	uint32_t n = s->def_n;
	if (st == JP_DEF_DONE) {
		JP_COUNT(deferred);
	} else {
		/* Failed, or still waiting for the walker at the thread's end. */
		JP_COUNT(deferred_failed);
		__atomic_fetch_add(&jps.st.reasons[s->def_reason], 1, __ATOMIC_RELAXED);
		path = &jps.reason_h[s->def_reason];
		n = 1;
	}
	if (jp_pcct_add(s->t, &s->pcct, path, n, s->def_w))
		JP_COUNT(limited);
	__atomic_store_n(&s->def_state, JP_DEF_IDLE, __ATOMIC_RELEASE);
}

/* jp_is_continuation: m is a method of jdk.internal.vm.Continuation (a
 * carrier's frames end there: a virtual thread was mounted, whose frames
 * GetStackTrace of the carrier does not give). */
static int jp_is_continuation(jvmtiEnv *jvmti, jmethodID m)
{
	jclass c = NULL;
	char *sig = NULL;
	int is = 0;
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &c) == JVMTI_ERROR_NONE &&
	    (*jvmti)->GetClassSignature(jvmti, c, &sig, NULL) == JVMTI_ERROR_NONE) {
		is = strcmp(sig, "Ljdk/internal/vm/Continuation;") == 0;
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	}
	return is;
}

/* jp_defer_walk makes the walk s's handler left; jps.lock held, so that
 * s stays listed (its thread has not ended) and its reference valid. */
static void jp_defer_walk(jvmtiEnv *jvmti, jp_sthread *s, jvmtiFrameInfo *fr)
{
	int ok = 0;
	uintptr_t sp = s->def_sp;
	jint count = 0;
	/* Its path: <top_frame_not_walkable> (the stub), the frames, and
	 * <deeper-frames> if they were cut. */
	if (s->def_path == NULL)
		s->def_path = malloc(((size_t)jps.depth + 1) * sizeof(uint32_t));
	if (s->def_path != NULL && jps.depth >= 2 && jp_anchor_sp(s) == sp &&
	    (*jvmti)->GetStackTrace(jvmti, s->ref, 0, (jint)jps.depth - 1, fr, &count) == JVMTI_ERROR_NONE &&
	    count > 0 && !jp_is_continuation(jvmti, fr[0].method)) {
		uint32_t n = 0;
		s->def_path[n++] = jps.top_h;
		for (jint i = 0; i < count; i++) {
			uint32_t h = jp_mid_find(fr[i].method);
			if (h == UINT32_MAX) {
				h = jps.unknown_h;
				JP_COUNT(misses);
			}
			s->def_path[n++] = h;
		}
		if ((uint32_t)count >= jps.depth - 1) {
			s->def_path[n++] = jps.deep_h;
			JP_COUNT(deep);
		}
		s->def_n = n;
		ok = 1;
	}
	__atomic_store_n(&s->def_state, ok ? JP_DEF_DONE : JP_DEF_FAILED, __ATOMIC_RELEASE);
}

static void *jp_walker_main(void *arg)
{
	(void)arg;
	jp_walker_self = 1;
	static char name[] = "libjprof-walker";
	jvmtiFrameInfo *fr = calloc(jps.depth, sizeof *fr);
	if (fr == NULL || jp_attach_current(name) != 0) {
		free(fr);
		__atomic_store_n(&jps.walker_on, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&jps.walker_on, 1, __ATOMIC_RELEASE);
	for (;;) {
		while (sem_wait(&jps.walk_sem) != 0 && errno == EINTR)
			;
		/* One pass serves every walk left so far: the wakes of the
		 * ones it served are spent on empty passes. */
		pthread_mutex_lock(&jps.lock);
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			if (__atomic_load_n(&s->def_state, __ATOMIC_ACQUIRE) == JP_DEF_PENDING)
				jp_defer_walk(jpvm.jvmti, s, fr);
		pthread_mutex_unlock(&jps.lock);
	}
	return NULL;
}

int jp_defer_start(void)
{
	if (jp_walker_started)
		return 0;
	/* The walk is checked against the last Java frame's sp: without
	 * HotSpot's anchor, nothing is left to the walker. */
	if (jps.last_sp_off < 0)
		return 0;
	if (sem_init(&jps.walk_sem, 0, 0) != 0)
		return errno ? errno : -1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&jp_walker, &attr, jp_walker_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return rc;
	pthread_setname_np(jp_walker, "libjprof-walker");
	jp_walker_started = 1;
	return 0;
}
