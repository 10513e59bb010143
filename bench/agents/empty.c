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
#include <string.h>
#include <stdio.h>
#include <jvmti.h>

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
	if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, NULL) != JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, NULL) != JVMTI_ERROR_NONE)
		fprintf(stderr, "empty agent: cannot enable method events\n");
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	jvmtiEnv *jvmti = NULL;
	jvmtiCapabilities caps;
	jvmtiEventCallbacks cb;

	(void)options, (void)reserved;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
		fprintf(stderr, "empty agent: no JVMTI 1.2\n");
		return JNI_ERR;
	}
	memset(&caps, 0, sizeof caps);
	caps.can_generate_method_entry_events = 1;
	caps.can_generate_method_exit_events = 1;
	if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
		fprintf(stderr, "empty agent: AddCapabilities failed\n");
		return JNI_ERR;
	}
	memset(&cb, 0, sizeof cb);
	cb.MethodEntry = on_method_entry;
	cb.MethodExit = on_method_exit;
	cb.VMInit = on_vm_init;
	if ((*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL) != JVMTI_ERROR_NONE) {
		fprintf(stderr, "empty agent: cannot set callbacks\n");
		return JNI_ERR;
	}
	return JNI_OK;
}
