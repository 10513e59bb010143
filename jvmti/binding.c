/*
 * binding.c: libjprof's JVMTI environment: capabilities, the lifecycle
 * callbacks (VM init and death, thread end) and the few JVMTI services Go
 * asks for (system properties, GC, attaching a thread).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

jp_vm jpvm;

extern void jpGoVMInit(uintptr_t h);
extern void jpGoVMDeath(uintptr_t h);
void jp_methodevents_die(void);

/* With THREADINFO every thread gets its record at start, so that
 * log-jtnm lists threads that never ran a collected method. */
static void JNICALL cb_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	if (jpvm.sample) {
		jp_sampling_thread_start(jvmti, jni, thread);
		return;
	}
	if (jp_thread_self() == NULL)
		jp_vm_thread(jvmti, thread);
}

static void JNICALL cb_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	if (jpvm.sample)
		jp_sampling_thread_end();
	jp_thread_detach();
}

static void JNICALL cb_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni;
	/* Events before VM init came from this thread before the VM could
	 * name it. */
	jp_thread *t = jp_thread_self();
	if (t != NULL && strcmp(t->name, "unknown") == 0) {
		char *name = jp_vm_thread_name(jvmti, thread);
		if (name != NULL)
			jp_thread_rename(t, name);
		free(name);
	}
	if (jpvm.sample)
		jp_sampling_vm_init(jvmti, jni, thread);
	if (jpvm.bci)
		jp_bci_vm_init(jni);
	else if (jp_roots_on)
		jp_roots_vm_init(jvmti, jni);
	jpGoVMInit(jpvm.go_handle);
}

static void JNICALL cb_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
	(void)jvmti;
	(void)jni;
	if (jpvm.sample)
		jp_sampling_die();
	if (jpvm.bci)
		jp_bci_die();
	else
		jp_methodevents_die();
	jpGoVMDeath(jpvm.go_handle);
}

int jp_attach_current(char *name)
{
	JNIEnv *env = NULL;
	JavaVMAttachArgs args = { JNI_VERSION_1_8, name, NULL };
	return (int)(*jpvm.vm)->AttachCurrentThreadAsDaemon(jpvm.vm, (void **)&env, &args);
}

char *jp_sysprop(const char *name)
{
	char *v = NULL;
	if ((*jpvm.jvmti)->GetSystemProperty(jpvm.jvmti, name, &v) != JVMTI_ERROR_NONE)
		return NULL;
	return v;
}

void jp_dealloc(char *p)
{
	(*jpvm.jvmti)->Deallocate(jpvm.jvmti, (unsigned char *)p);
}

int jp_force_gc(void)
{
	return (int)(*jpvm.jvmti)->ForceGarbageCollection(jpvm.jvmti);
}

static int jp_enable(jvmtiEnv *jvmti, const jvmtiEvent *evs, size_t n, char *err, int errlen)
{
	for (size_t i = 0; i < n; i++) {
		jvmtiError e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, evs[i], NULL);
		if (e != JVMTI_ERROR_NONE) {
			snprintf(err, errlen, "enabling JVMTI event %d failed: JVMTI error %d", (int)evs[i], (int)e);
			return -1;
		}
	}
	return 0;
}

int jp_vm_setup(JavaVM *vm, uintptr_t go_handle, int start, int calibrate, int loggen, int jit,
		uint32_t max_methods, int eager_threads, char *err, int errlen)
{
	jvmtiEnv *jvmti = NULL;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
		snprintf(err, errlen, "GetEnv(JVMTI 1.2) failed");
		return -1;
	}
	jpvm.vm = vm;
	jpvm.jvmti = jvmti;
	jpvm.go_handle = go_handle;
	jpvm.jit = jit;
	const jp_source *src = jpvm.sample ? &jp_sampling : jpvm.bci ? &jp_bci : &jp_methodevents;
	if (jp_engine_init(src, calibrate, loggen, max_methods, err, errlen) != 0)
		return -1;
	if (jp_mid_init() != 0) {
		snprintf(err, errlen, "no memory for the method id table");
		return -1;
	}

	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	/* Only the method-event source may have method events: their
	 * capability alone changes how HotSpot compiles, which BCI must not
	 * and sampling need not pay. */
	jvmtiError e = JVMTI_ERROR_NONE;
	if (jpvm.sample) {
		if (jp_sampling_setup(jvmti, &caps, &cb, err, errlen) != 0)
			return -1;
		e = (*jvmti)->AddCapabilities(jvmti, &caps);
	} else if (!jpvm.bci) {
		caps.can_generate_method_entry_events = 1;
		caps.can_generate_method_exit_events = 1;
		caps.can_generate_breakpoint_events = jp_roots_on;
		e = (*jvmti)->AddCapabilities(jvmti, &caps);
	}
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "AddCapabilities(method entry/exit events) failed: JVMTI error %d", (int)e);
		return -1;
	}
	jp_vt_caps(jvmti);
	if (jit || jpvm.bci) {
		memset(&caps, 0, sizeof caps);
		caps.can_generate_compiled_method_load_events = 1;
		e = (*jvmti)->AddCapabilities(jvmti, &caps);
		if (e != JVMTI_ERROR_NONE) {
			snprintf(err, errlen, "AddCapabilities(compiled method load events) failed: JVMTI error %d", (int)e);
			return -1;
		}
	}

	cb.MethodEntry = jp_cb_method_entry;
	cb.MethodExit = jp_cb_method_exit;
	cb.ThreadStart = cb_thread_start;
	cb.ThreadEnd = cb_thread_end;
	cb.VMInit = cb_vm_init;
	cb.VMDeath = cb_vm_death;
	cb.CompiledMethodLoad = jp_cb_compiled_method_load;
	cb.CompiledMethodUnload = jp_cb_compiled_method_unload;
	cb.DynamicCodeGenerated = jp_cb_dynamic_code;
	if (jpvm.bci)
		cb.ClassFileLoadHook = jp_bci_class_file_load;
	if (jp_roots_on && !jpvm.bci && !jpvm.sample) {
		cb.MethodEntry = jp_cb_roots_method_entry;
		cb.MethodExit = jp_cb_roots_method_exit;
		cb.Breakpoint = jp_cb_roots_breakpoint;
		cb.ClassPrepare = jp_cb_roots_class_prepare;
	}
	e = (*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "SetEventCallbacks failed: JVMTI error %d", (int)e);
		return -1;
	}
	if (jp_vt_setup(jvmti, &cb, err, errlen) != 0)
		return -1;
	const jvmtiEvent life[] = { JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_END };
	if (jp_enable(jvmti, life, sizeof life / sizeof life[0], err, errlen) != 0)
		return -1;
	if (jpvm.bci && jp_bci_onload(jvmti, err, errlen) != 0)
		return -1;
	if (jpvm.sample) {
		const jvmtiEvent sevs[] = { JVMTI_EVENT_CLASS_LOAD, JVMTI_EVENT_CLASS_PREPARE };
		if (jp_enable(jvmti, sevs, sizeof sevs / sizeof sevs[0], err, errlen) != 0)
			return -1;
	}
	if (jp_roots_on && !jpvm.bci && !jpvm.sample) {
		const jvmtiEvent revs[] = { JVMTI_EVENT_BREAKPOINT, JVMTI_EVENT_CLASS_PREPARE };
		if (jp_enable(jvmti, revs, sizeof revs / sizeof revs[0], err, errlen) != 0)
			return -1;
	}
	if (eager_threads || jpvm.sample) {
		const jvmtiEvent ts[] = { JVMTI_EVENT_THREAD_START };
		if (jp_enable(jvmti, ts, 1, err, errlen) != 0)
			return -1;
	}
	if (jit) {
		const jvmtiEvent jevs[] = { JVMTI_EVENT_COMPILED_METHOD_LOAD, JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
					    JVMTI_EVENT_DYNAMIC_CODE_GENERATED };
		if (jp_enable(jvmti, jevs, sizeof jevs / sizeof jevs[0], err, errlen) != 0)
			return -1;
	} else if (jpvm.bci) {
		const jvmtiEvent jevs[] = { JVMTI_EVENT_COMPILED_METHOD_LOAD };
		if (jp_enable(jvmti, jevs, 1, err, errlen) != 0)
			return -1;
	}
	/* START: from the first Java method, not from VM init: the VM runs
	 * Java code (System.initPhase3, the system class loader) before it. */
	if (start) {
		int rc = jpvm.sample ? jp_sampling_set(1) : jpvm.bci ? jp_bci_set(1) : jp_methodevents_set(1);
		if (rc != 0) {
			snprintf(err, errlen, "starting the event source failed: error %d", rc);
			return -1;
		}
	}
	return 0;
}
