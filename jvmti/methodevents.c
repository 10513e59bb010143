/*
 * methodevents.c: the JVMTI method-event source. MethodEntry and
 * MethodExit callbacks hand each event to the engine, keyed by jmethodID.
 * Exact, but HotSpot runs every thread interpreted while these events are
 * on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "jvmtiagent.h"

const jp_source jp_methodevents = { "jvmti-method-events", jp_mid_resolve };

/* The method-event source's key of a frame: its jmethodID. */
static uintptr_t jp_mev_key(jvmtiEnv *jvmti, jmethodID mid)
{
	(void)jvmti;
	return (uintptr_t)mid;
}

/* jp_mev_seed is a thread's first event in a collection epoch (or its
 * first event at all): the frames already open on it were entered before
 * collection started, and the engine would not know them. Their callees
 * would hang off the thread root, and their exits would each become an
 * empty O: node there. Seeding the shadow stack with them (as O:
 * contexts) keeps the tree as it is. entered is the method an entry
 * event enters (already on the Java stack, the event's own), 0 for an
 * exit. Once per thread per epoch, so the stack walk costs nothing that
 * matters. */
static jp_thread *jp_mev_seed(jvmtiEnv *jvmti, jp_thread *t, jmethodID entered)
{
	return jp_vm_seed(jvmti, t, jp_mev_key, (uintptr_t)entered);
}

/* jp_mev_collecting is the callbacks' first look: with collection off
 * (about to start, the events on already) nothing is recorded, nor is a
 * stack walked to seed. And a thread that looked at its epoch before the
 * start and made its event after would have its stack discarded
 * unseeded (jp_event's restart): jp_collect moves the epoch before it
 * sets collecting, so one that sees collecting on sees the new epoch
 * and seeds. */
static inline int jp_mev_collecting(void)
{
	return __atomic_load_n(&jp.collecting, __ATOMIC_ACQUIRE);
}

void JNICALL jp_cb_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid)
{
	(void)jni;
	if (!jp_mev_collecting())
		return;
	jp_thread *t = jp_thread_self();
	/* The one branch before the Early Read: a thread's first event, in
	 * all or in this epoch. */
	if (__builtin_expect(t == NULL || jp_thread_stale(t), 0) &&
	    (t = jp_mev_seed(jvmti, t, mid)) == NULL)
		return;
	jp_event(t, (uintptr_t)mid, JP_TR_ENTRY);
}

void JNICALL jp_cb_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
			       jboolean by_exception, jvalue rv)
{
	(void)jni;
	(void)rv;
	if (!jp_mev_collecting())
		return;
	jp_thread *t = jp_thread_self();
	if (__builtin_expect(t == NULL || jp_thread_stale(t), 0) && (t = jp_mev_seed(jvmti, t, NULL)) == NULL)
		return;
	jp_event(t, (uintptr_t)mid, by_exception ? JP_TR_EXCEPTION : JP_TR_EXIT);
}

/* One lock orders turning events on and off with VM death, so that no
 * start can slip in after the VM began to die. */
static pthread_mutex_t jp_switch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Turning an event on takes every thread into interpreter-only mode, a
 * handshake with each thread, milliseconds on a busy JVM: between the
 * two calls, entries alone would push frames whose exits never come (a
 * thread pool's workers nested hundreds deep), exits alone close frames
 * whose entries were not seen (whole tasks' calls lost as O: exits). So
 * both change only while collection is off (jp_methodevents_set): it
 * starts once both are on, each thread's first event then seeding its
 * stack as it is, and stops before they go off. */
static int jp_methodevents_mode(jvmtiEventMode mode)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jvmtiError e1 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_ENTRY, NULL);
	jvmtiError e2 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_EXIT, NULL);
	return e1 != JVMTI_ERROR_NONE ? (int)e1 : (int)e2;
}

int jp_methodevents_set(int on)
{
	pthread_mutex_lock(&jp_switch_lock);
	int rc;
	/* With ROOTS, events go on per thread inside a root (rootevents.c). */
	if (on && jp.dead) {
		rc = -1;
	} else if (on) {
		rc = jp_roots_on ? 0 : jp_methodevents_mode(JVMTI_ENABLE);
		if (rc == 0)
			jp_collect(1); /* a new epoch, once both events are on */
		else
			jp_methodevents_mode(JVMTI_DISABLE); /* one of them may be on */
	} else {
		jp_collect(0); /* before the events go off */
		rc = jp_roots_on ? 0 : jp_methodevents_mode(JVMTI_DISABLE);
	}
	pthread_mutex_unlock(&jp_switch_lock);
	return rc;
}

/* jp_methodevents_die turns events off for good at VM death. */
static void jp_methodevents_die(void)
{
	pthread_mutex_lock(&jp_switch_lock);
	jp.dead = 1;
	jp_collect(0); /* before the events go off: see jp_methodevents_mode */
	jp_methodevents_mode(JVMTI_DISABLE);
	pthread_mutex_unlock(&jp_switch_lock);
}

static int me_setup(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
		    int errlen)
{
	(void)jvmti;
	if (live) {
		snprintf(err, errlen, "method events: HotSpot grants them only to an agent loaded at the JVM's start: restart the program with -agentpath, or attach with BCI or SAMPLE");
		return -1;
	}
	caps->can_generate_method_entry_events = 1;
	caps->can_generate_method_exit_events = 1;
	caps->can_generate_breakpoint_events = jp_roots_on;
	cb->MethodEntry = jp_cb_method_entry;
	cb->MethodExit = jp_cb_method_exit;
	if (jp_roots_on) {
		cb->MethodEntry = jp_cb_roots_method_entry;
		cb->MethodExit = jp_cb_roots_method_exit;
		cb->Breakpoint = jp_cb_roots_breakpoint;
		cb->ClassPrepare = jp_cb_roots_class_prepare;
	}
	return 0;
}

static int me_enable(jvmtiEnv *jvmti, int live, char *err, int errlen)
{
	(void)live;
	const jvmtiEvent revs[] = { JVMTI_EVENT_BREAKPOINT, JVMTI_EVENT_CLASS_PREPARE };
	return jp_roots_on ? jp_enable_events(jvmti, revs, 2, err, errlen) : 0;
}

static void me_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)thread;
	if (jp_roots_on)
		jp_roots_vm_init(jvmti, jni);
}

const jp_source_ops jp_methodevents_ops = {
	.engine = &jp_methodevents,
	.setup = me_setup,
	.enable = me_enable,
	.vm_init = me_vm_init,
	.set = jp_methodevents_set,
	.thread_start = jp_thread_start_record,
	.die = jp_methodevents_die,
};
