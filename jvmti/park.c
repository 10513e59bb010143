/*
 * park.c: java.util.concurrent's waits, for the lock source. Its locks,
 * conditions, queues and latches block a thread in LockSupport.park, of
 * which JVMTI reports nothing. So while LOCK collects, LockSupport's
 * park methods are rewritten (libjprof.bci.Park.rewrite, from the class
 * file hook during a retransformation) to read System.nanoTime at entry
 * and call Park.parked(blocker, t0) at return: the native below, which
 * counts the wait and records it like a monitor wait, with the leaf
 * "park <blocker's class>", the thread's stack below the native.
 *
 * LockSupport is rewritten when collection first starts, at load or at
 * attach alike (the class is loaded by then, and is retransformed), and
 * gets its own bytes back at a detach. What cannot be done (no jar, a
 * retransformation refused) is said in log-msg and in the report's
 * header, and the monitor waits are recorded all the same.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "lock.h"

static const char park_class[] = "java/util/concurrent/locks/LockSupport";

/* A thread that a lock's release wakes may lose the lock to another
 * and park again at once: parks on the same blocker this close together
 * are one contention (one blocked lock(), as Go's mutex profile counts),
 * their delays summed. */
#define JL_REPARK_NS 100000

static void JNICALL jl_parked(JNIEnv *jni, jclass c, jobject blocker, jlong t0)
{
	(void)c;
	if (!jl_events.on)
		return;
	uint64_t now = jp_mono_ns();
	/* System.nanoTime is CLOCK_MONOTONIC on Linux, as jp_mono_ns. */
	uint64_t start = (uint64_t)t0, d = now > start ? now - start : 0;
	jp_estack *e = jp_estack_self(jpvm.jvmti, NULL);
	if (e == NULL)
		return;
	int again = blocker != NULL && e->park_blocker != NULL && start >= e->park_end &&
		    start - e->park_end < JL_REPARK_NS && (*jni)->IsSameObject(jni, e->park_blocker, blocker);
	if (!again) {
		if (e->park_blocker != NULL)
			(*jni)->DeleteWeakGlobalRef(jni, e->park_blocker);
		e->park_blocker = blocker != NULL ? (*jni)->NewWeakGlobalRef(jni, blocker) : NULL;
	}
	e->park_end = now;
	jl_record(jpvm.jvmti, jni, e, blocker, JL_PARK, d, 1, again ? 0 : 1);
}

/* jl_class_file_load hands LockSupport's bytes to Park.rewrite while
 * jl.park_want; every other class passes untouched. */
static void JNICALL jl_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
				       const char *name, jobject pd, jint len, const unsigned char *data,
				       jint *new_len, unsigned char **new_data)
{
	(void)redefined;
	(void)pd;
	if (!jl.park_want || loader != NULL || name == NULL || jni == NULL || jl.park == NULL ||
	    strcmp(name, park_class) != 0)
		return;
	if ((*jni)->PushLocalFrame(jni, 4) != 0) {
		(*jni)->ExceptionClear(jni);
		return;
	}
	jbyteArray in = (*jni)->NewByteArray(jni, len);
	jbyteArray out = NULL;
	if (in != NULL) {
		(*jni)->SetByteArrayRegion(jni, in, 0, len, (const jbyte *)data);
		out = (jbyteArray)(*jni)->CallStaticObjectMethod(jni, jl.park, jl.m_rewrite, in);
	}
	if ((*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		out = NULL;
	}
	jint n = out != NULL ? (*jni)->GetArrayLength(jni, out) : 0;
	unsigned char *buf = NULL;
	if (n > 0 && (*jvmti)->Allocate(jvmti, n, &buf) == JVMTI_ERROR_NONE) {
		(*jni)->GetByteArrayRegion(jni, out, 0, n, (jbyte *)buf);
		*new_data = buf;
		*new_len = n;
		jl.park_rewritten = 1;
	}
	(*jni)->PopLocalFrame(jni, NULL);
}

void jl_park_setup(jvmtiCapabilities *caps, jvmtiEventCallbacks *cb)
{
	caps->can_retransform_classes = 1;
	cb->ClassFileLoadHook = jl_class_file_load;
}

/* jl_park_enable puts the agent's jar on the boot class path. */
int jl_park_enable(jvmtiEnv *jvmti, int live, char *err, int errlen)
{
	(void)live;
	(void)err;
	(void)errlen;
	jvmtiError e = (*jvmti)->AddToBootstrapClassLoaderSearch(jvmti, jl.jar);
	if (e != JVMTI_ERROR_NONE) {
		jl.park_state = -1;
		jp_notef("LOCK: AddToBootstrapClassLoaderSearch(%s): JVMTI error %d: java.util.concurrent's waits are not recorded",
			 jl.jar, (int)e);
	}
	return 0;
}

static void jl_park_fail(JNIEnv *jni, const char *what)
{
	(*jni)->ExceptionClear(jni);
	jl.park_state = -1;
	jp_notef("LOCK: %s: java.util.concurrent's waits are not recorded", what);
}

/* jl_park_install_locked rewrites LockSupport (jl.park_mu held). */
static void jl_park_install_locked(JNIEnv *jni)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	if (jl.park_state != 0 || jl.park == NULL || jni == NULL)
		return;
	jl.park_want = 1;
	jl.park_rewritten = 0;
	jvmtiError e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
	jclass c = e == JVMTI_ERROR_NONE ? (*jni)->FindClass(jni, park_class) : NULL;
	if (c != NULL)
		e = (*jvmti)->RetransformClasses(jvmti, 1, &c);
	if (c == NULL || e != JVMTI_ERROR_NONE || !jl.park_rewritten) {
		char why[96];
		if (c != NULL && e == JVMTI_ERROR_NONE)
			snprintf(why, sizeof why, "LockSupport could not be rewritten (Park.rewrite failed)");
		else
			snprintf(why, sizeof why, "LockSupport could not be rewritten (JVMTI error %d)", (int)e);
		jl.park_want = 0;
		(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
		jl_park_fail(jni, why);
	} else {
		/* The rewriting stays until a retransformation: no need to see
		 * every class that loads meanwhile (HotSpot would read archived
		 * classes' bytes to show them). A detach's retransformation,
		 * with no hook on, gives LockSupport its own bytes back. */
		jl.park_want = 0;
		(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
		jl.park_state = 1;
		jp_notef("info: LOCK: LockSupport's park methods report their waits (java.util.concurrent's locks)");
	}
	if (c != NULL)
		(*jni)->DeleteLocalRef(jni, c);
}

/* jl_park_install rewrites LockSupport once collection is on (set). */
void jl_park_install(void)
{
	pthread_mutex_lock(&jl.park_mu);
	jl.park_on = 1;
	jl_park_install_locked(jp_env());
	pthread_mutex_unlock(&jl.park_mu);
}

/* jl_park_vm_init registers Park's native, has java.base read the
 * module Park is in (so that the rewritten LockSupport may call it) and,
 * if collection is on already, rewrites LockSupport. */
void jl_park_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)thread;
	static const JNINativeMethod natives[] = {
		{ "parked", "(Ljava/lang/Object;J)V", (void *)jl_parked },
	};
	if (jl.park_state < 0)
		return;
	jclass p = (*jni)->FindClass(jni, "libjprof/bci/Park");
	if (p == NULL || (*jni)->RegisterNatives(jni, p, natives, 1) != 0) {
		jl_park_fail(jni, "the agent's class libjprof.bci.Park could not be loaded (jprof-bci.jar from another build?)");
		return;
	}
	jl.m_rewrite = (*jni)->GetStaticMethodID(jni, p, "rewrite", "([B)[B");
	jclass cc = (*jni)->FindClass(jni, "java/lang/Class");
	jmethodID gm = cc ? (*jni)->GetMethodID(jni, cc, "getModule", "()Ljava/lang/Module;") : NULL;
	jobject unnamed = gm ? (*jni)->CallObjectMethod(jni, p, gm) : NULL;
	jobject base = NULL;
	jvmtiError e = JVMTI_ERROR_NONE;
	if (jl.m_rewrite == NULL || unnamed == NULL ||
	    (e = (*jvmti)->GetNamedModule(jvmti, NULL, "java/lang", &base)) != JVMTI_ERROR_NONE || base == NULL ||
	    (e = (*jvmti)->AddModuleReads(jvmti, base, unnamed)) != JVMTI_ERROR_NONE) {
		char why[96];
		snprintf(why, sizeof why, "java.base cannot be made to read the agent's module (JVMTI error %d)", (int)e);
		jl_park_fail(jni, why);
		return;
	}
	pthread_mutex_lock(&jl.park_mu);
	jl.park = (*jni)->NewGlobalRef(jni, p);
	if (jl.park_on)
		jl_park_install_locked(jni);
	pthread_mutex_unlock(&jl.park_mu);
}

/* jl_park_detach gives LockSupport its own bytes back; a later start
 * rewrites it again. */
int jl_park_detach(char *err, int errlen)
{
	pthread_mutex_lock(&jl.park_mu);
	jl.park_on = 0;
	JNIEnv *jni = jp_env();
	if (jl.park_state == 1 && jni != NULL) {
		jvmtiEnv *jvmti = jpvm.jvmti;
		jl.park_want = 0;
		jclass c = (*jni)->FindClass(jni, park_class);
		jvmtiError e = c ? (*jvmti)->RetransformClasses(jvmti, 1, &c) : JVMTI_ERROR_INVALID_CLASS;
		if (c != NULL)
			(*jni)->DeleteLocalRef(jni, c);
		(*jni)->ExceptionClear(jni);
		(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
		if (e != JVMTI_ERROR_NONE) {
			pthread_mutex_unlock(&jl.park_mu);
			snprintf(err, errlen, "LOCK: LockSupport keeps its rewriting (RetransformClasses: JVMTI error %d)", (int)e);
			return -1;
		}
		jl.park_state = 0;
	}
	pthread_mutex_unlock(&jl.park_mu);
	return 0;
}
