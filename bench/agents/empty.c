/*
 * empty.c: the floor of the JVMTI method-event path.
 *
 * A JVMTI agent whose MethodEntry/MethodExit callbacks do nothing. Turning
 * the events on puts every thread in interpreter-only mode and makes the
 * interpreter call into the VM and then into the agent on every entry and
 * exit; this agent pays exactly that and nothing else, so the time a real
 * agent adds above it is the agent's own per-event work.
 *
 * Events are enabled at VMInit, as libjprof does with START, so that both
 * see the same events from the same point in the VM's life.
 */
#include <stdio.h>
#include <jvmti.h>

#include "refagent.h"

static void JNICALL on_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method)
{
	(void)jvmti, (void)jni, (void)thread, (void)method;
}

static void JNICALL on_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
			    jboolean popped_by_exception, jvalue return_value)
{
	(void)jvmti, (void)jni, (void)thread, (void)method, (void)popped_by_exception, (void)return_value;
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni, (void)thread;
	ref_enable_method_events(jvmti, "empty agent");
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	jvmtiEventCallbacks cb = { 0 };

	(void)options, (void)reserved;
	cb.MethodEntry = on_method_entry;
	cb.MethodExit = on_method_exit;
	cb.VMInit = on_vm_init;
	return ref_agent_load(vm, "empty agent", &cb);
}
