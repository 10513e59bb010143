/*
 * refagent.h: what the reference agents (empty.c, naive.c) share: their
 * set-up, so that they differ only in what their callbacks do.
 *
 * ref_agent_load gets JVMTI 1.2, adds the method entry/exit capabilities,
 * installs the callbacks and enables VMInit (and VMDeath when the agent
 * has a callback for it). The agent's VMInit callback calls
 * ref_enable_method_events, as libjprof does with START, so that every
 * agent sees the same events from the same point in the VM's life.
 */
#ifndef REFAGENT_H
#define REFAGENT_H

#include <stdio.h>
#include <jvmti.h>

static void ref_enable_method_events(jvmtiEnv *jvmti, const char *who)
{
	if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, NULL) != JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, NULL) != JVMTI_ERROR_NONE)
		fprintf(stderr, "%s: cannot enable method events\n", who);
}

static jint ref_agent_load(JavaVM *vm, const char *who, const jvmtiEventCallbacks *cb)
{
	jvmtiEnv *jvmti = NULL;
	jvmtiCapabilities caps = { 0 };

	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
		fprintf(stderr, "%s: no JVMTI 1.2\n", who);
		return JNI_ERR;
	}
	caps.can_generate_method_entry_events = 1;
	caps.can_generate_method_exit_events = 1;
	if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
		fprintf(stderr, "%s: AddCapabilities failed\n", who);
		return JNI_ERR;
	}
	if ((*jvmti)->SetEventCallbacks(jvmti, cb, (jint)sizeof *cb) != JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, NULL) != JVMTI_ERROR_NONE ||
	    (cb->VMDeath != NULL &&
	     (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL) != JVMTI_ERROR_NONE)) {
		fprintf(stderr, "%s: cannot set callbacks\n", who);
		return JNI_ERR;
	}
	return JNI_OK;
}

#endif /* REFAGENT_H */
