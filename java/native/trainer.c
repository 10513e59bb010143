/*
 * trainer.c: the native methods of the libjprof trainer (TrainerCases),
 * library jptrainer.
 *
 * The trainer needs native methods of both kinds (static n, instance N)
 * as leaves, as "b-role" methods with bodies of one shape each (call a
 * leaf; call and throw; call and catch; call two leaves), as drivers that
 * call any pattern, and a thread root (type Other) that calls them: a
 * native thread attached to the JVM. Java methods are called through a
 * table of jmethodIDs filled once by setup(), indexed like
 * TrainerCases.NAMES. Bodies do as little as possible between calls, so
 * that the minimum delta of each sequence is glue only.
 */
#define _GNU_SOURCE
#include <jni.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Shapes of the native b-roles (trainer/internal/casegen). */
enum { F_CALL = 2, F_CALLTHROW = 3, F_CATCH = 4, F_SEQ = 5 };

/* Callable flags (casegen's register()). */
enum { C_STATIC = 1, C_ACT = 2 };

typedef struct {
	jmethodID mid;
	int flags;
	jint form, x, y;
} callable;

/* Written once by setup() before any pattern runs, read-only after. */
static JavaVM *jvm;
static jclass cls;
static jobject recv;
static jthrowable thrown;
static callable *tab;
static int ntab;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)reserved;
	jvm = vm;
	return JNI_VERSION_1_8;
}

static inline void call(JNIEnv *env, jint c)
{
	const callable *p = &tab[c];
	switch (p->flags) {
	case C_STATIC:
		(*env)->CallStaticVoidMethod(env, cls, p->mid);
		break;
	case C_STATIC | C_ACT:
		(*env)->CallStaticVoidMethod(env, cls, p->mid, p->form, p->x, p->y);
		break;
	case C_ACT:
		(*env)->CallVoidMethod(env, recv, p->mid, p->form, p->x, p->y);
		break;
	default:
		(*env)->CallVoidMethod(env, recv, p->mid);
	}
}

/* Leaves. */
JNIEXPORT void JNICALL Java_TrainerCases_nRet(JNIEnv *env, jclass k)
{
	(void)env;
	(void)k;
}

JNIEXPORT void JNICALL Java_TrainerCases_nThr(JNIEnv *env, jclass k)
{
	(void)k;
	(*env)->Throw(env, thrown);
}

JNIEXPORT void JNICALL Java_TrainerCases_NRet(JNIEnv *env, jobject self)
{
	(void)env;
	(void)self;
}

JNIEXPORT void JNICALL Java_TrainerCases_NThr(JNIEnv *env, jobject self)
{
	(void)self;
	(*env)->Throw(env, thrown);
}

/* b-roles: one shape per call, chosen by form. */
static inline void act(JNIEnv *env, jint form, jint x, jint y)
{
	switch (form) {
	case F_CALL:
		call(env, x); /* an exception of x stays pending: exit by exception */
		return;
	case F_CALLTHROW:
		call(env, x);
		(*env)->Throw(env, thrown);
		return;
	case F_CATCH:
		call(env, x);
		(*env)->ExceptionClear(env);
		return;
	case F_SEQ:
		call(env, x);
		(*env)->ExceptionClear(env);
		call(env, y);
		return;
	}
}

JNIEXPORT void JNICALL Java_TrainerCases_nAct(JNIEnv *env, jclass k, jint form, jint x, jint y)
{
	(void)k;
	act(env, form, x, y);
}

JNIEXPORT void JNICALL Java_TrainerCases_NAct(JNIEnv *env, jobject self, jint form, jint x, jint y)
{
	(void)self;
	act(env, form, x, y);
}

/* Drivers: call callable c reps times, catching what it throws. */
static jint drive(JNIEnv *env, jint c, jint reps)
{
	jint caught = 0;
	if (c < 0 || c >= ntab)
		return -1;
	for (jint r = 0; r < reps; r++) {
		call(env, c);
		if ((*env)->ExceptionCheck(env)) {
			(*env)->ExceptionClear(env);
			caught++;
		}
	}
	return caught;
}

JNIEXPORT jint JNICALL Java_TrainerCases_nDrive(JNIEnv *env, jclass k, jint c, jint reps)
{
	(void)k;
	return drive(env, c, reps);
}

JNIEXPORT jint JNICALL Java_TrainerCases_NDrive(JNIEnv *env, jobject self, jint c, jint reps)
{
	(void)self;
	return drive(env, c, reps);
}

/* The root driver: a native thread attached to the JVM, whose calls into
 * Java come from the thread root itself (type Other). */
struct root_job {
	jint *cs;
	jint n, reps;
	jint caught; /* -1: could not attach */
};

static void *root_main(void *arg)
{
	struct root_job *j = arg;
	JNIEnv *env;
	JavaVMAttachArgs a = { JNI_VERSION_1_8, "trainer-root", NULL };
	if ((*jvm)->AttachCurrentThread(jvm, (void **)&env, &a) != JNI_OK) {
		j->caught = -1;
		return NULL;
	}
	for (jint r = 0; r < j->reps; r++) {
		for (jint i = 0; i < j->n; i++) {
			call(env, j->cs[i]);
			if ((*env)->ExceptionCheck(env)) {
				(*env)->ExceptionClear(env);
				j->caught++;
			}
		}
	}
	(*jvm)->DetachCurrentThread(jvm);
	return NULL;
}

JNIEXPORT jint JNICALL Java_TrainerCases_rootDrive(JNIEnv *env, jclass k, jintArray cs, jint reps)
{
	(void)k;
	struct root_job j = { NULL, (*env)->GetArrayLength(env, cs), reps, 0 };
	j.cs = malloc(sizeof(jint) * (size_t)(j.n > 0 ? j.n : 1));
	if (j.cs == NULL)
		return -1;
	(*env)->GetIntArrayRegion(env, cs, 0, j.n, j.cs);
	for (jint i = 0; i < j.n; i++) {
		if (j.cs[i] < 0 || j.cs[i] >= ntab) {
			free(j.cs);
			return -1;
		}
	}
	pthread_t th;
	if (pthread_create(&th, NULL, root_main, &j) != 0) {
		free(j.cs);
		return -1;
	}
	pthread_join(th, NULL);
	free(j.cs);
	return j.caught;
}

/* Environmental overhead, native callers: n calls of callable c (nothing
 * for c < 0), timed on the monotonic clock, in ns. */
static jlong now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static jlong env_loop(JNIEnv *env, jint c, jint n)
{
	jlong t0 = now_ns();
	if (c < 0 || c >= ntab) {
		for (jint i = 0; i < n; i++) {
			if ((*env)->ExceptionCheck(env))
				(*env)->ExceptionClear(env);
			__asm__ volatile("" ::: "memory"); /* keep the loop */
		}
	} else {
		for (jint i = 0; i < n; i++) {
			call(env, c);
			if ((*env)->ExceptionCheck(env))
				(*env)->ExceptionClear(env);
		}
	}
	return now_ns() - t0;
}

JNIEXPORT jlong JNICALL Java_TrainerCases_nEnv(JNIEnv *env, jclass k, jint c, jint n)
{
	(void)k;
	return env_loop(env, c, n);
}

JNIEXPORT jlong JNICALL Java_TrainerCases_NEnv(JNIEnv *env, jobject self, jint c, jint n)
{
	(void)self;
	return env_loop(env, c, n);
}

/* setup resolves the callables. On failure a Java exception is pending
 * (NoSuchMethodError from the lookup, or OutOfMemoryError). */
JNIEXPORT void JNICALL Java_TrainerCases_setup(JNIEnv *env, jclass k, jobject r, jthrowable ex,
					       jobjectArray names, jobjectArray sigs, jintArray flags,
					       jintArray forms, jintArray xs, jintArray ys)
{
	jint n = (*env)->GetArrayLength(env, names);
	callable *t = calloc((size_t)(n > 0 ? n : 1), sizeof *t);
	jint *buf = malloc(sizeof(jint) * 4 * (size_t)(n > 0 ? n : 1));
	if (t == NULL || buf == NULL) {
		free(t);
		free(buf);
		jclass oom = (*env)->FindClass(env, "java/lang/OutOfMemoryError");
		if (oom != NULL)
			(*env)->ThrowNew(env, oom, "trainer: callable table");
		return;
	}
	(*env)->GetIntArrayRegion(env, flags, 0, n, buf);
	(*env)->GetIntArrayRegion(env, forms, 0, n, buf + n);
	(*env)->GetIntArrayRegion(env, xs, 0, n, buf + 2 * n);
	(*env)->GetIntArrayRegion(env, ys, 0, n, buf + 3 * n);
	for (jint i = 0; i < n; i++) {
		jstring jn = (*env)->GetObjectArrayElement(env, names, i);
		jstring js = (*env)->GetObjectArrayElement(env, sigs, i);
		const char *name = (*env)->GetStringUTFChars(env, jn, NULL);
		const char *sig = (*env)->GetStringUTFChars(env, js, NULL);
		t[i].flags = buf[i];
		t[i].form = buf[n + i];
		t[i].x = buf[2 * n + i];
		t[i].y = buf[3 * n + i];
		if (name != NULL && sig != NULL)
			t[i].mid = (t[i].flags & C_STATIC) ? (*env)->GetStaticMethodID(env, k, name, sig)
							   : (*env)->GetMethodID(env, k, name, sig);
		if (name != NULL)
			(*env)->ReleaseStringUTFChars(env, jn, name);
		if (sig != NULL)
			(*env)->ReleaseStringUTFChars(env, js, sig);
		(*env)->DeleteLocalRef(env, jn);
		(*env)->DeleteLocalRef(env, js);
		if (t[i].mid == NULL) { /* exception pending */
			free(t);
			free(buf);
			return;
		}
	}
	free(buf);
	cls = (*env)->NewGlobalRef(env, k);
	recv = (*env)->NewGlobalRef(env, r);
	thrown = (*env)->NewGlobalRef(env, ex);
	tab = t;
	ntab = n;
}
