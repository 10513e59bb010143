/*
 * lock.c: the lock source (LOCK=). JVMTI reports a Java thread that
 * blocks entering a monitor another thread holds (MonitorContendedEnter,
 * then MonitorContendedEntered once it has it) and one that waits in
 * Object.wait (MonitorWait, MonitorWaited). The time between the two is
 * the delay; a delay of at least the threshold is recorded with the
 * thread's stack at the end of the wait, whose leaf names the monitor's
 * class: "lock <class>" for entering, "wait <class>" for Object.wait.
 * base[0] is the delay (ns), base[1] the contentions.
 *
 * java.util.concurrent's locks park their threads (LockSupport.park), of
 * which JVMTI says nothing: they are not seen here.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "eventstacks.h"

static struct {
	uint64_t threshold_ns;
	jp_lock_stats st;
} jl;

static jp_estack_events jl_events; /* defined below, with its events */

const jp_source jp_lock = { "lock-events", jp_mid_resolve };

enum { JL_ENTER = 0, JL_WAIT = 1 };

int jp_lock_configure(uint64_t threshold_ns, uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if (jp_estacks_configure(max_nodes, depth, err, errlen) != 0)
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

static void jl_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, int what)
{
	jp_estack *e = jp_estack_self(jvmti, thread);
	if (e == NULL || e->t0[what] == 0)
		return;
	uint64_t d = jp_mono_ns() - e->t0[what];
	e->t0[what] = 0;
	if (!jl_events.on)
		return;
	__atomic_add_fetch(&jl.st.events[what], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&jl.st.delay_ns[what], d, __ATOMIC_RELAXED);
	if (d < jl.threshold_ns)
		return;
	jclass k = object != NULL ? (*jni)->GetObjectClass(jni, object) : NULL;
	uint64_t w[2] = { d, 1 };
	jp_estack_record(jvmti, e, jp_estack_leaf(jvmti, k, what == JL_ENTER ? "lock " : "wait "), w, 2);
	if (k != NULL)
		(*jni)->DeleteLocalRef(jni, k);
	__atomic_add_fetch(&jl.st.recorded[what], 1, __ATOMIC_RELAXED);
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
	jp_estacks_setup();
	return 0;
}

static const jvmtiEvent jl_evs[] = { JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
				     JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED };
static jp_estack_events jl_events = { .lock = PTHREAD_MUTEX_INITIALIZER, .evs = jl_evs, .n = 4 };

int jp_lock_set(int on)
{
	return jp_estack_switch(&jl_events, on);
}

static void jl_die(void)
{
	jp_estack_die(&jl_events);
}

void jp_lock_stats_read(jp_lock_stats *out)
{
	for (int i = 0; i < 2; i++) {
		out->events[i] = __atomic_load_n(&jl.st.events[i], __ATOMIC_RELAXED);
		out->recorded[i] = __atomic_load_n(&jl.st.recorded[i], __ATOMIC_RELAXED);
		out->delay_ns[i] = __atomic_load_n(&jl.st.delay_ns[i], __ATOMIC_RELAXED);
	}
}

/* Events off at stop: nothing is left in the program to take out. */
const jp_source_ops jp_lock_ops = {
	.engine = &jp_lock,
	.setup = jl_setup,
	.set = jp_lock_set,
	.thread_start = jp_thread_start_record,
	.thread_end = jp_estack_thread_end,
	.die = jl_die,
};
