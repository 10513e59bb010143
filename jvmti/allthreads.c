/*
 * allthreads.c: every thread of the VM, virtual threads included.
 *
 * JVMTI's GetAllThreads lists platform threads only, and no JVMTI
 * function lists virtual threads (JDK 21+). The JDK's own thread dump
 * (jcmd Thread.dump_to_file) finds them through jdk.internal.vm's
 * thread containers: the root container tracks the virtual threads
 * started on their own (unless the program runs with
 * -Djdk.trackAllThreads=false), and each executor or structured scope
 * is a container under it. jp_all_threads walks the same tree, calling
 * the containers' methods through JNI, which checks no module access
 * (java.base does not export the package). Only from a thread attached
 * to the VM, outside JVMTI callbacks and agent locks: it runs Java code.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "jvmtiagent.h"

/* Virtual threads listed at most (each is looked at by the caller), and
 * containers followed at most, and how deep. */
#define JP_VTHREADS_MAX 4096
#define JP_CONTAINERS_MAX 256
#define JP_CONTAINERS_DEPTH 8

/* The JDK's classes and methods, looked up once: jdk.internal.vm's
 * ThreadContainers and ThreadContainer, Stream, Thread. */
static struct {
	pthread_mutex_t mu;
	int done; /* looked up (under mu) */
	int ok;   /* 0: this JVM has no thread containers (JDK 17) */
	jclass roots;
	jmethodID root, threads, children, limit, to_array, is_virtual;
} vt = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* vt_failed says whether a JNI call failed: it returned NULL or threw
 * (NoClassDefFoundError on JDK 17, NoSuchMethodError); what it threw is
 * cleared at once, so that no JNI call runs with an exception pending. */
static int vt_failed(JNIEnv *jni, const void *p)
{
	if ((*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		return 1;
	}
	return p == NULL;
}

static void vt_setup(JNIEnv *jni)
{
	jclass roots = (*jni)->FindClass(jni, "jdk/internal/vm/ThreadContainers");
	if (vt_failed(jni, roots))
		return;
	jclass container = (*jni)->FindClass(jni, "jdk/internal/vm/ThreadContainer");
	jclass stream = !vt_failed(jni, container) ? (*jni)->FindClass(jni, "java/util/stream/Stream") : NULL;
	jclass thread = !vt_failed(jni, stream) ? (*jni)->FindClass(jni, "java/lang/Thread") : NULL;
	if (!vt_failed(jni, thread) &&
	    !vt_failed(jni, vt.root = (*jni)->GetStaticMethodID(jni, roots, "root", "()Ljdk/internal/vm/ThreadContainer;")) &&
	    !vt_failed(jni, vt.threads = (*jni)->GetMethodID(jni, container, "threads", "()Ljava/util/stream/Stream;")) &&
	    !vt_failed(jni, vt.children = (*jni)->GetMethodID(jni, container, "children", "()Ljava/util/stream/Stream;")) &&
	    !vt_failed(jni, vt.limit = (*jni)->GetMethodID(jni, stream, "limit", "(J)Ljava/util/stream/Stream;")) &&
	    !vt_failed(jni, vt.to_array = (*jni)->GetMethodID(jni, stream, "toArray", "()[Ljava/lang/Object;")) &&
	    !vt_failed(jni, vt.is_virtual = (*jni)->GetMethodID(jni, thread, "isVirtual", "()Z")) &&
	    (vt.roots = (*jni)->NewGlobalRef(jni, roots)) != NULL)
		vt.ok = 1;
	jclass local[] = {roots, container, stream, thread};
	for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
		if (local[i] != NULL)
			(*jni)->DeleteLocalRef(jni, local[i]);
}

struct vt_walk {
	JNIEnv *jni;
	jthread *out;
	jint n, cap;
	jint platform;   /* platform threads, which a container's stream lists too */
	int containers;  /* containers visited */
	int more;        /* virtual threads, or containers, past the caps were left out */
};

/* stream_array collects at most max elements of a stream (a local ref,
 * deleted here) into an array, NULL on any exception (cleared). */
static jobjectArray stream_array(struct vt_walk *w, jobject stream, jlong max)
{
	JNIEnv *jni = w->jni;
	if (vt_failed(jni, stream))
		return NULL;
	jobject cut = (*jni)->CallObjectMethod(jni, stream, vt.limit, max);
	(*jni)->DeleteLocalRef(jni, stream);
	if (vt_failed(jni, cut))
		return NULL;
	jobjectArray a = (*jni)->CallObjectMethod(jni, cut, vt.to_array);
	(*jni)->DeleteLocalRef(jni, cut);
	return vt_failed(jni, a) ? NULL : a;
}

static void vt_container(struct vt_walk *w, jobject c, int depth)
{
	JNIEnv *jni = w->jni;
	if (w->n >= w->cap || w->containers >= JP_CONTAINERS_MAX) {
		w->more = 1;
		return;
	}
	w->containers++;
	/* A frame per container: nesting holds no more than a few refs. */
	if ((*jni)->PushLocalFrame(jni, 8) != 0) {
		(*jni)->ExceptionClear(jni);
		return;
	}
	/* One past what may still be taken, platform threads included:
	 * enough to tell that more were left out. */
	jlong room = (jlong)(w->cap - w->n) + w->platform + 1;
	jobjectArray ts = stream_array(w, (*jni)->CallObjectMethod(jni, c, vt.threads), room);
	jint nt = ts != NULL ? (*jni)->GetArrayLength(jni, ts) : 0;
	for (jint i = 0; i < nt && !w->more; i++) {
		jobject t = (*jni)->GetObjectArrayElement(jni, ts, i);
		if (t == NULL)
			continue;
		jboolean virt = (*jni)->CallBooleanMethod(jni, t, vt.is_virtual);
		if ((*jni)->ExceptionCheck(jni)) {
			(*jni)->ExceptionClear(jni);
			virt = JNI_FALSE;
		}
		if (virt && w->n >= w->cap)
			w->more = 1;
		else if (virt && (w->out[w->n] = (*jni)->NewGlobalRef(jni, t)) != NULL)
			w->n++;
		(*jni)->DeleteLocalRef(jni, t);
	}
	jobjectArray cs = depth < JP_CONTAINERS_DEPTH && !w->more
		? stream_array(w, (*jni)->CallObjectMethod(jni, c, vt.children), JP_CONTAINERS_MAX - w->containers + 1)
		: NULL;
	jint nc = cs != NULL ? (*jni)->GetArrayLength(jni, cs) : 0;
	for (jint i = 0; i < nc && !w->more; i++) {
		jobject child = (*jni)->GetObjectArrayElement(jni, cs, i);
		if (child != NULL)
			vt_container(w, child, depth + 1);
	}
	(*jni)->PopLocalFrame(jni, NULL);
}

jthread *jp_all_threads(jvmtiEnv *jvmti, JNIEnv *jni, jint *n, jint *nplatform, int with_virtual)
{
	*n = 0;
	if (nplatform != NULL)
		*nplatform = 0;
	jthread *ths = NULL;
	jint nt = 0;
	if ((*jvmti)->GetAllThreads(jvmti, &nt, &ths) != JVMTI_ERROR_NONE)
		return NULL;
	struct vt_walk w = {.jni = jni, .cap = with_virtual ? JP_VTHREADS_MAX : 0};
	w.out = malloc(sizeof *w.out * ((size_t)nt + (size_t)w.cap + 1));
	for (jint t = 0; t < nt; t++) {
		if (w.out != NULL && (w.out[w.n] = (*jni)->NewGlobalRef(jni, ths[t])) != NULL)
			w.n++;
		(*jni)->DeleteLocalRef(jni, ths[t]);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)ths);
	if (w.out == NULL)
		return NULL;
	w.platform = w.n;
	w.cap += w.n;
	if (nplatform != NULL)
		*nplatform = w.n;
	if (!with_virtual) {
		*n = w.n;
		return w.out;
	}
	/* The lookups once (each caller is attached to the VM). */
	pthread_mutex_lock(&vt.mu);
	if (!vt.done) {
		vt_setup(jni);
		vt.done = 1;
	}
	int ok = vt.ok;
	pthread_mutex_unlock(&vt.mu);
	if (ok) {
		jobject r = (*jni)->CallStaticObjectMethod(jni, vt.roots, vt.root);
		if (!vt_failed(jni, r)) {
			vt_container(&w, r, 0);
			(*jni)->DeleteLocalRef(jni, r);
		}
	}
	static int said;
	if (w.more && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		jp_notef("BCI: more than %d virtual threads (or %d thread containers): only the first are looked at for "
			 "loops that are running",
			 JP_VTHREADS_MAX, JP_CONTAINERS_MAX);
	*n = w.n;
	return w.out;
}

void jp_all_threads_free(JNIEnv *jni, jthread *ths, jint n)
{
	for (jint i = 0; ths != NULL && i < n; i++)
		(*jni)->DeleteGlobalRef(jni, ths[i]);
	free(ths);
}
