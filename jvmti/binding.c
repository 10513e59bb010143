/*
 * binding.c: libjprof's JVMTI environment: capabilities, the lifecycle
 * callbacks (VM init and death, thread end) and the few JVMTI services Go
 * asks for (system properties, GC, attaching a thread).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

jp_vm jpvm;

extern void jpGoVMReady(uintptr_t h);
extern void jpGoVMInit(uintptr_t h);
extern void jpGoVMDeath(uintptr_t h);
extern void jpGoNote(char *msg);

/* With THREADINFO every thread gets its record at start, so that
 * log-jtnm lists threads that never ran a collected method. */
static void JNICALL cb_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	jpvm.src->thread_start(jvmti, jni, thread);
}

static void JNICALL cb_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	if (jpvm.src->thread_end != NULL)
		jpvm.src->thread_end();
	jp_thread_detach();
}

static void JNICALL cb_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	/* Events before VM init came from this thread before the VM could
	 * name it. */
	jp_thread *t = jp_thread_self();
	if (t != NULL && strcmp(t->name, "unknown") == 0) {
		char *name = jp_vm_thread_name(jvmti, thread);
		if (name != NULL)
			jp_thread_rename(t, name);
		free(name);
	}
	jpGoVMReady(jpvm.go_handle);
	if (jpvm.src->vm_init != NULL)
		jpvm.src->vm_init(jvmti, jni, thread);
	jpGoVMInit(jpvm.go_handle);
}

static void JNICALL cb_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
	(void)jvmti;
	(void)jni;
	jpvm.src->die();
	jpGoVMDeath(jpvm.go_handle);
}

/* A thread's record at its start (THREADINFO), for the sources that make
 * none of their own. */
void jp_thread_start_record(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni;
	if (jp_thread_self() == NULL)
		jp_vm_thread(jvmti, thread);
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

int jp_enable_events(jvmtiEnv *jvmti, const jvmtiEvent *evs, size_t n, char *err, int errlen)
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

int jp_vm_setup(JavaVM *vm, uintptr_t go_handle, int live, int start, int calibrate, int loggen, int jit,
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
	jpvm.live = live;
	jpvm.src = jpvm.sample ? &jp_sampling_ops : jpvm.alloc ? &jp_alloc_ops : jpvm.lock ? &jp_lock_ops : jpvm.bci ? &jp_bci_ops : &jp_methodevents_ops;
	const jp_source_ops *src = jpvm.src;
	if (jp_engine_init(src->engine, calibrate, loggen, max_methods, err, errlen) != 0)
		return -1;
	if (jp_mid_init() != 0) {
		snprintf(err, errlen, "no memory for the method id table");
		return -1;
	}

	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	cb.ThreadStart = cb_thread_start;
	cb.ThreadEnd = cb_thread_end;
	cb.VMInit = cb_vm_init;
	cb.VMDeath = cb_vm_death;
	cb.CompiledMethodLoad = jp_cb_compiled_method_load;
	cb.CompiledMethodUnload = jp_cb_compiled_method_unload;
	cb.DynamicCodeGenerated = jp_cb_dynamic_code;
	/* Only the method-event source asks for method events: their
	 * capability alone changes how HotSpot compiles, which BCI must not
	 * and sampling need not pay. */
	if (src->setup(jvmti, &caps, &cb, live, err, errlen) != 0)
		return -1;
	jvmtiError e = (*jvmti)->AddCapabilities(jvmti, &caps);
	if (e != JVMTI_ERROR_NONE) {
		if (live && e == JVMTI_ERROR_NOT_AVAILABLE)
			snprintf(err, errlen, "%s: the JVM refuses its capabilities to an agent loaded into a running JVM (JVMTI error %d): restart the program with -agentpath, or use BCI or SAMPLE",
				 src->engine->name, (int)e);
		else
			snprintf(err, errlen, "%s: AddCapabilities failed: JVMTI error %d", src->engine->name, (int)e);
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
	e = (*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "SetEventCallbacks failed: JVMTI error %d", (int)e);
		return -1;
	}
	if (jp_vt_setup(jvmti, &cb, err, errlen) != 0)
		return -1;
	const jvmtiEvent life[] = { JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_END };
	if (jp_enable_events(jvmti, life, sizeof life / sizeof life[0], err, errlen) != 0)
		return -1;
	if (src->enable != NULL && src->enable(jvmti, live, err, errlen) != 0)
		return -1;
	if (eager_threads) {
		const jvmtiEvent ts[] = { JVMTI_EVENT_THREAD_START };
		if (jp_enable_events(jvmti, ts, 1, err, errlen) != 0)
			return -1;
	}
	if (jit) {
		const jvmtiEvent jevs[] = { JVMTI_EVENT_COMPILED_METHOD_LOAD, JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
					    JVMTI_EVENT_DYNAMIC_CODE_GENERATED };
		if (jp_enable_events(jvmti, jevs, sizeof jevs / sizeof jevs[0], err, errlen) != 0)
			return -1;
	} else if (jpvm.bci) {
		const jvmtiEvent jevs[] = { JVMTI_EVENT_COMPILED_METHOD_LOAD };
		if (jp_enable_events(jvmti, jevs, 1, err, errlen) != 0)
			return -1;
	} else if (jpvm.sample) {
		/* The names of the stubs a sample's top frame may be in. */
		const jvmtiEvent jevs[] = { JVMTI_EVENT_DYNAMIC_CODE_GENERATED };
		if (jp_enable_events(jvmti, jevs, 1, err, errlen) != 0)
			return -1;
	}
	/* START: from the first Java method, not from VM init: the VM runs
	 * Java code (System.initPhase3, the system class loader) before it.
	 * An attached agent starts after jp_vm_live_init. */
	if (start && !live) {
		int rc = src->set(1);
		if (rc != 0) {
			snprintf(err, errlen, "starting the event source failed: error %d", rc);
			return -1;
		}
	}
	return 0;
}

int jp_vm_live_init(char *err, int errlen)
{
	JNIEnv *jni = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK || jni == NULL) {
		snprintf(err, errlen, "the attaching thread has no JNI environment");
		return -1;
	}
	if (jpvm.src->vm_init != NULL)
		jpvm.src->vm_init(jpvm.jvmti, jni, NULL);
	/* The code compiled before the attach, as the JIT records and BCI's
	 * compiled-method marks expect it. */
	if (jpvm.jit || jpvm.bci) {
		jvmtiError e = (*jpvm.jvmti)->GenerateEvents(jpvm.jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
		if (e == JVMTI_ERROR_NONE && jpvm.jit)
			e = (*jpvm.jvmti)->GenerateEvents(jpvm.jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
		(void)e; /* without them, the records start at the attach */
	}
	jpGoVMInit(jpvm.go_handle);
	return 0;
}

int jp_vm_detach(char *err, int errlen)
{
	int rc = jpvm.src->set(0);
	if (rc != 0) {
		snprintf(err, errlen, "stopping the event source failed: error %d", rc);
		return -1;
	}
	return jpvm.src->detach != NULL ? jpvm.src->detach(err, errlen) : 0;
}

void jp_notef(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	jpGoNote(buf);
}

JNIEnv *jp_env(void)
{
	JNIEnv *env = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK)
		return NULL;
	return env;
}
