/*
 * lock.c: the lock source (LOCK=). JVMTI reports a Java thread that
 * blocks entering a monitor another thread holds (MonitorContendedEnter,
 * then MonitorContendedEntered once it has it) and one that waits in
 * Object.wait (MonitorWait, MonitorWaited). The time between the two is
 * the delay; a delay of at least the threshold is recorded with the
 * thread's stack at the end of the wait, whose leaf names the monitor's
 * class: "lock <class>" for entering, "wait <class>" for Object.wait.
 * base[0] is the delay (ns), base[1] the contentions (park.c tells
 * when several parks are one).
 *
 * java.util.concurrent's locks park their threads (LockSupport.park), of
 * which JVMTI says nothing. So LockSupport is rewritten (park.c, with the
 * agent's Java class libjprof.bci.Park) to report each park's duration
 * and blocker, recorded as the waits above with the leaf "park <class>"
 * (for a ReentrantLock, its Sync).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "lock.h"

struct jp_lock_state jl = { .park_mu = PTHREAD_MUTEX_INITIALIZER };

jp_estack_events jl_events; /* defined below, with its events */

const jp_source jp_lock = { "lock-events", jp_mid_resolve, 1 };

int jp_lock_configure(uint64_t threshold_ns, uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if (jp_estacks_configure(max_nodes, depth, err, errlen) != 0)
		return -1;
	if ((jl.jar = jp_agent_jar("LOCK", err, errlen)) == NULL)
		return -1;
	jl.threshold_ns = threshold_ns;
	jpvm.lock = 1;
	return 0;
}

static void jl_begin(jvmtiEnv *jvmti, jthread thread, int what)
{
	if (!jl_events.on)
		return;
	jp_estack *e = jp_estack_self(jvmti, thread);
	if (e != NULL)
		e->t0[what] = jp_mono_ns();
}

/* jl_record counts a wait of d ns and records it with the thread's stack
 * (but its top skip frames) if it reached the threshold. */
void jl_record(jvmtiEnv *jvmti, JNIEnv *jni, jp_estack *e, jobject object, int what, uint64_t d, int skip,
	       uint64_t contentions)
{
	static const char *const leaf[] = { "lock ", "wait ", "park " };
	__atomic_add_fetch(&jl.st.events[what], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&jl.st.delay_ns[what], d, __ATOMIC_RELAXED);
	if (d < jl.threshold_ns)
		return;
	if (e == NULL && (e = jp_estack_self(jvmti, NULL)) == NULL)
		return;
	jclass k = object != NULL ? (*jni)->GetObjectClass(jni, object) : NULL;
	uint64_t w[2] = { d, contentions };
	jp_estack_record(jvmti, e, jp_estack_leaf(jvmti, jni, e, k, leaf[what]), skip, w, 2);
	if (k != NULL)
		(*jni)->DeleteLocalRef(jni, k);
	__atomic_add_fetch(&jl.st.recorded[what], 1, __ATOMIC_RELAXED);
}

static void jl_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, int what)
{
	jp_estack *e = jp_estack_self(jvmti, thread);
	if (e == NULL || e->t0[what] == 0)
		return;
	uint64_t d = jp_mono_ns() - e->t0[what];
	e->t0[what] = 0;
	if (jl_events.on)
		jl_record(jvmti, jni, e, object, what, d, 0, 1);
}

static void JNICALL cb_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
	(void)jni;
	(void)object;
	jl_begin(jvmti, thread, JL_ENTER);
}

static void JNICALL cb_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
	jl_end(jvmti, jni, thread, object, JL_ENTER);
}

static void JNICALL cb_wait(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jlong timeout)
{
	(void)jni;
	(void)object;
	(void)timeout;
	jl_begin(jvmti, thread, JL_WAIT);
}

static void JNICALL cb_waited(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jboolean timed_out)
{
	(void)timed_out;
	jl_end(jvmti, jni, thread, object, JL_WAIT);
}

static int jl_setup(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
		    int errlen)
{
	(void)jvmti;
	(void)live;
	(void)err;
	(void)errlen;
	caps->can_generate_monitor_events = 1;
	cb->MonitorContendedEnter = cb_contended_enter;
	cb->MonitorContendedEntered = cb_contended_entered;
	cb->MonitorWait = cb_wait;
	cb->MonitorWaited = cb_waited;
	jl_park_setup(caps, cb);
	jp_estacks_setup();
	return 0;
}

static const jvmtiEvent jl_evs[] = { JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
				     JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED };
jp_estack_events jl_events = { .lock = PTHREAD_MUTEX_INITIALIZER, .evs = jl_evs, .n = 4 };

/* LockSupport is rewritten when collection first starts and stays so
 * (off, its calls return at once) until a detach. */
int jp_lock_set(int on)
{
	int rc = jp_estack_switch(&jl_events, on);
	if (rc == 0 && on)
		jl_park_install();
	return rc;
}

static void jl_die(void)
{
	jp_estack_die(&jl_events);
}

void jp_lock_stats_read(jp_lock_stats *out)
{
	out->park = __atomic_load_n(&jl.park_state, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++) {
		out->events[i] = __atomic_load_n(&jl.st.events[i], __ATOMIC_RELAXED);
		out->recorded[i] = __atomic_load_n(&jl.st.recorded[i], __ATOMIC_RELAXED);
		out->delay_ns[i] = __atomic_load_n(&jl.st.delay_ns[i], __ATOMIC_RELAXED);
	}
}

/* Events off at stop; LockSupport gets its own bytes back at a detach. */
const jp_source_ops jp_lock_ops = {
	.engine = &jp_lock,
	.setup = jl_setup,
	.enable = jl_park_enable,
	.vm_init = jl_park_vm_init,
	.detach = jl_park_detach,
	.set = jp_lock_set,
	.thread_start = jp_thread_start_record,
	.thread_end = jp_estack_thread_end,
	.die = jl_die,
};
