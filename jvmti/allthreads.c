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
 * to the VM, outside JVMTI callbacks: it runs Java code.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "jvmtiagent.h"

/* Virtual threads listed at most (each is looked at by the caller), and
 * containers followed this deep at most. */
#define JP_VTHREADS_MAX 4096
#define JP_CONTAINERS_DEPTH 16

struct vt_walk {
	JNIEnv *jni;
	jmethodID threads, children, to_array, is_virtual;
	jthread *out;
	jint n, cap;
	int more; /* virtual threads past the cap were left out */
};

/* stream_array collects a java.util.stream.Stream (a local ref, deleted
 * here) into an array, NULL on any exception (cleared). */
static jobjectArray stream_array(struct vt_walk *w, jobject stream)
{
	JNIEnv *jni = w->jni;
	if (stream == NULL) {
		(*jni)->ExceptionClear(jni);
		return NULL;
	}
	jobjectArray a = (*jni)->CallObjectMethod(jni, stream, w->to_array);
	(*jni)->DeleteLocalRef(jni, stream);
	if ((*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		return NULL;
	}
	return a;
}

static void vt_container(struct vt_walk *w, jobject c, int depth)
{
	JNIEnv *jni = w->jni;
	jobjectArray ts = stream_array(w, (*jni)->CallObjectMethod(jni, c, w->threads));
	jint nt = ts != NULL ? (*jni)->GetArrayLength(jni, ts) : 0;
	for (jint i = 0; i < nt; i++) {
		jobject t = (*jni)->GetObjectArrayElement(jni, ts, i);
		if (t == NULL)
			continue;
		jboolean virt = (*jni)->CallBooleanMethod(jni, t, w->is_virtual);
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
	if (ts != NULL)
		(*jni)->DeleteLocalRef(jni, ts);
	if (depth >= JP_CONTAINERS_DEPTH)
		return;
	jobjectArray cs = stream_array(w, (*jni)->CallObjectMethod(jni, c, w->children));
	jint nc = cs != NULL ? (*jni)->GetArrayLength(jni, cs) : 0;
	for (jint i = 0; i < nc; i++) {
		jobject child = (*jni)->GetObjectArrayElement(jni, cs, i);
		if (child != NULL) {
			vt_container(w, child, depth + 1);
			(*jni)->DeleteLocalRef(jni, child);
		}
	}
	if (cs != NULL)
		(*jni)->DeleteLocalRef(jni, cs);
}

/* virtual_threads appends the VM's virtual threads to w->out, as global
 * refs; none on a JVM without them or without thread containers. */
static void virtual_threads(struct vt_walk *w)
{
	JNIEnv *jni = w->jni;
	jclass roots = (*jni)->FindClass(jni, "jdk/internal/vm/ThreadContainers");
	jclass container = roots != NULL ? (*jni)->FindClass(jni, "jdk/internal/vm/ThreadContainer") : NULL;
	jclass stream = container != NULL ? (*jni)->FindClass(jni, "java/util/stream/Stream") : NULL;
	jclass thread = stream != NULL ? (*jni)->FindClass(jni, "java/lang/Thread") : NULL;
	jmethodID root = NULL;
	if (thread != NULL) {
		root = (*jni)->GetStaticMethodID(jni, roots, "root", "()Ljdk/internal/vm/ThreadContainer;");
		w->threads = (*jni)->GetMethodID(jni, container, "threads", "()Ljava/util/stream/Stream;");
		w->children = (*jni)->GetMethodID(jni, container, "children", "()Ljava/util/stream/Stream;");
		w->to_array = (*jni)->GetMethodID(jni, stream, "toArray", "()[Ljava/lang/Object;");
		w->is_virtual = (*jni)->GetMethodID(jni, thread, "isVirtual", "()Z");
	}
	/* JDK 17 has none of these: NoClassDefFoundError, NoSuchMethodError. */
	if ((*jni)->ExceptionCheck(jni))
		(*jni)->ExceptionClear(jni);
	if (root != NULL && w->threads != NULL && w->children != NULL && w->to_array != NULL && w->is_virtual != NULL) {
		jobject r = (*jni)->CallStaticObjectMethod(jni, roots, root);
		if ((*jni)->ExceptionCheck(jni))
			(*jni)->ExceptionClear(jni);
		else if (r != NULL) {
			vt_container(w, r, 0);
			(*jni)->DeleteLocalRef(jni, r);
		}
	}
	jclass local[] = {roots, container, stream, thread};
	for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
		if (local[i] != NULL)
			(*jni)->DeleteLocalRef(jni, local[i]);
}

jthread *jp_all_threads(jvmtiEnv *jvmti, JNIEnv *jni, jint *n)
{
	*n = 0;
	jthread *ths = NULL;
	jint nt = 0;
	if ((*jvmti)->GetAllThreads(jvmti, &nt, &ths) != JVMTI_ERROR_NONE)
		return NULL;
	struct vt_walk w = {.jni = jni, .cap = JP_VTHREADS_MAX};
	w.out = malloc(sizeof *w.out * ((size_t)nt + (size_t)w.cap + 1));
	for (jint t = 0; t < nt; t++) {
		if (w.out != NULL && (w.out[w.n] = (*jni)->NewGlobalRef(jni, ths[t])) != NULL)
			w.n++;
		(*jni)->DeleteLocalRef(jni, ths[t]);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)ths);
	if (w.out == NULL)
		return NULL;
	w.cap += w.n;
	virtual_threads(&w);
	static int said;
	if (w.more && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		jp_notef("BCI: more than %d virtual threads: only the first %d are looked at for loops that are running",
			 JP_VTHREADS_MAX, JP_VTHREADS_MAX);
	*n = w.n;
	return w.out;
}

void jp_all_threads_free(JNIEnv *jni, jthread *ths, jint n)
{
	for (jint i = 0; ths != NULL && i < n; i++)
		(*jni)->DeleteGlobalRef(jni, ths[i]);
	free(ths);
}
