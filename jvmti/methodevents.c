/*
 * methodevents.c: the JVMTI method-event source. MethodEntry and
 * MethodExit callbacks hand each event to the engine, keyed by jmethodID.
 * Exact, but HotSpot runs every thread interpreted while these events are
 * on.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "jvmtiagent.h"

const jp_source jp_methodevents = { "jvmti-method-events", jp_mid_resolve };

/* jp_vm_thread makes the calling thread's record at its first event,
 * named as the VM names it. */
jp_thread *jp_vm_thread(jvmtiEnv *jvmti, jthread thread)
{
	if (jp_vt_mode == JP_VT_TRACKED) {
		jp_thread *vt = jp_vt_first_event(jvmti, thread);
		if (vt != NULL)
			return vt;
	}
	jvmtiThreadInfo info;
	memset(&info, 0, sizeof info);
	const char *name = "unknown";
	if (thread != NULL && (*jvmti)->GetThreadInfo(jvmti, thread, &info) == JVMTI_ERROR_NONE && info.name)
		name = info.name;
	jp_thread *t = jp_thread_attach(name);
	if (info.name)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
	return t;
}

void JNICALL jp_cb_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid)
{
	(void)jni;
	jp_thread *t = jp_thread_self();
	/* The one branch before the Early Read: a thread's first event. */
	if (__builtin_expect(t == NULL, 0) && (t = jp_vm_thread(jvmti, thread)) == NULL)
		return;
	jp_event(t, (uintptr_t)mid, JP_TR_ENTRY);
}

void JNICALL jp_cb_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
			       jboolean by_exception, jvalue rv)
{
	(void)jni;
	(void)rv;
	jp_thread *t = jp_thread_self();
	if (__builtin_expect(t == NULL, 0) && (t = jp_vm_thread(jvmti, thread)) == NULL)
		return;
	jp_event(t, (uintptr_t)mid, by_exception ? JP_TR_EXCEPTION : JP_TR_EXIT);
}

/* One lock orders turning events on and off with VM death, so that no
 * start can slip in after the VM began to die. */
static pthread_mutex_t jp_switch_lock = PTHREAD_MUTEX_INITIALIZER;

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
	if (on && jp.dead) {
		rc = -1;
	} else {
		if (on)
			jp_collect(1); /* new epoch before the first event */
		rc = jp_methodevents_mode(on ? JVMTI_ENABLE : JVMTI_DISABLE);
		if (rc == 0 && !on)
			jp_collect(0);
		else if (rc != 0 && on)
			jp_collect(0);
	}
	pthread_mutex_unlock(&jp_switch_lock);
	return rc;
}

/* jp_methodevents_die turns events off for good at VM death. */
void jp_methodevents_die(void)
{
	pthread_mutex_lock(&jp_switch_lock);
	jp.dead = 1;
	jp_methodevents_mode(JVMTI_DISABLE);
	jp_collect(0);
	pthread_mutex_unlock(&jp_switch_lock);
}
