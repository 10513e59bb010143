/*
 * rootevents.c: ROOTS for the method-event source. Method events are on
 * only for a thread inside a root method, from the root's entry to its
 * return: HotSpot runs that thread interpreted meanwhile, and every other
 * thread, and this one outside the roots, with the JIT. The tree holds
 * the roots' whole subgraph, JDK methods included, exactly.
 *
 * A breakpoint at the first bytecode of each root method tells when a
 * thread enters one (HotSpot never compiles a method with a breakpoint,
 * nor inlines it, so every call is seen). Its callback records the root's
 * entry and turns the events on for the thread alone; from then on the
 * thread counts its open frames, and the exit that closes the root's
 * frame turns them off. Counting frames rather than matching the root
 * keeps a thread's events balanced when the roots change while it is
 * inside one, or when a root calls itself (the nested call's breakpoint
 * comes after its MethodEntry, and is ignored).
 *
 * Root methods are found by class and method name globs: in the classes
 * loaded when the VM starts, and in each class as it is prepared.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

/* The roots: pairs of globs on the dotted class name and the method
 * name, and the methods given a breakpoint. Changed under mu; the event
 * callbacks read none of it. */
static struct {
	pthread_mutex_t mu;
	int n;
	char **cls, **meth;
	jmethodID *mids;
	int nmids, cap;
} roots = { .mu = PTHREAD_MUTEX_INITIALIZER };

int jp_roots_on;

static void roots_free_patterns(void)
{
	for (int i = 0; i < roots.n; i++) {
		free(roots.cls[i]);
		free(roots.meth[i]);
	}
	free(roots.cls);
	free(roots.meth);
	roots.cls = roots.meth = NULL;
	roots.n = 0;
}

/* roots_parse reads "a.b.C.m+d.E.*" (':' also separates); 0, or -1 with
 * err. Slashes in class names are taken as dots. */
static int roots_parse(const char *spec, char *err, int errlen)
{
	char *s = strdup(spec);
	if (s == NULL) {
		snprintf(err, errlen, "no memory");
		return -1;
	}
	int cap = 1;
	for (const char *p = spec; *p; p++)
		cap += *p == '+' || *p == ':';
	char **cls = calloc(cap, sizeof *cls), **meth = calloc(cap, sizeof *meth);
	int n = 0, rc = 0;
	char *save = NULL;
	for (char *tok = strtok_r(s, "+:", &save); tok != NULL && cls && meth; tok = strtok_r(NULL, "+:", &save)) {
		while (*tok == ' ')
			tok++;
		size_t l = strlen(tok);
		while (l > 0 && tok[l - 1] == ' ')
			tok[--l] = 0;
		if (l == 0)
			continue;
		for (char *c = tok; *c; c++)
			if (*c == '/')
				*c = '.';
		char *dot = strrchr(tok, '.');
		if (dot == NULL || dot == tok || dot[1] == 0) {
			snprintf(err, errlen, "root %s: want Class.method (globs with *)", tok);
			rc = -1;
			break;
		}
		*dot = 0;
		cls[n] = strdup(tok);
		meth[n] = strdup(dot + 1);
		n++;
	}
	free(s);
	if (rc == 0 && (cls == NULL || meth == NULL)) {
		snprintf(err, errlen, "no memory");
		rc = -1;
	}
	if (rc == 0 && n == 0) {
		snprintf(err, errlen, "no root given");
		rc = -1;
	}
	if (rc != 0) {
		for (int i = 0; i < n; i++) {
			free(cls[i]);
			free(meth[i]);
		}
		free(cls);
		free(meth);
		return -1;
	}
	roots_free_patterns();
	roots.cls = cls;
	roots.meth = meth;
	roots.n = n;
	return 0;
}

/* jp_roots_configure takes the ROOTS option for the method-event source
 * (before jp_vm_setup). */
int jp_roots_configure(const char *spec, char *err, int errlen)
{
	pthread_mutex_lock(&roots.mu);
	int rc = roots_parse(spec, err, errlen);
	pthread_mutex_unlock(&roots.mu);
	if (rc == 0)
		jp_roots_on = 1;
	return rc;
}

static int roots_have(jmethodID m)
{
	for (int i = 0; i < roots.nmids; i++)
		if (roots.mids[i] == m)
			return 1;
	return 0;
}

/* roots_scan gives a breakpoint to the root methods of one prepared
 * class (mu held). */
static void roots_scan(jvmtiEnv *jvmti, jclass k)
{
	char *sig = NULL;
	if ((*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE || sig == NULL)
		return;
	size_t l = strlen(sig);
	int any = 0;
	if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';') {
		sig[l - 1] = 0;
		for (char *c = sig + 1; *c; c++)
			if (*c == '/')
				*c = '.';
		for (int i = 0; i < roots.n && !any; i++)
			any = fnmatch(roots.cls[i], sig + 1, 0) == 0;
	}
	jint nm = 0;
	jmethodID *ms = NULL;
	if (any && (*jvmti)->GetClassMethods(jvmti, k, &nm, &ms) == JVMTI_ERROR_NONE) {
		for (jint j = 0; j < nm; j++) {
			char *name = NULL;
			if ((*jvmti)->GetMethodName(jvmti, ms[j], &name, NULL, NULL) != JVMTI_ERROR_NONE || name == NULL)
				continue;
			int match = 0;
			for (int i = 0; i < roots.n && !match; i++)
				match = fnmatch(roots.cls[i], sig + 1, 0) == 0 && fnmatch(roots.meth[i], name, 0) == 0;
			(*jvmti)->Deallocate(jvmti, (unsigned char *)name);
			jint mods = 0;
			jlocation start = 0, end = 0;
			if (!match || roots_have(ms[j]) ||
			    (*jvmti)->GetMethodModifiers(jvmti, ms[j], &mods) != JVMTI_ERROR_NONE ||
			    (mods & 0x0500) != 0 || /* native, abstract: no bytecode */
			    (*jvmti)->GetMethodLocation(jvmti, ms[j], &start, &end) != JVMTI_ERROR_NONE)
				continue;
			if (roots.nmids == roots.cap) {
				int cap = roots.cap ? roots.cap * 2 : 16;
				jmethodID *nmids = realloc(roots.mids, cap * sizeof *nmids);
				if (nmids == NULL)
					continue;
				roots.mids = nmids;
				roots.cap = cap;
			}
			if ((*jvmti)->SetBreakpoint(jvmti, ms[j], start) == JVMTI_ERROR_NONE)
				roots.mids[roots.nmids++] = ms[j];
		}
		(*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
}

/* roots_scan_loaded scans every prepared class (mu held). */
static void roots_scan_loaded(jvmtiEnv *jvmti, JNIEnv *jni)
{
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE)
		return;
	for (jint i = 0; i < n; i++) {
		jint st = 0;
		if ((*jvmti)->GetClassStatus(jvmti, classes[i], &st) == JVMTI_ERROR_NONE &&
		    (st & JVMTI_CLASS_STATUS_PREPARED) && !(st & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE)))
			roots_scan(jvmti, classes[i]);
		if (jni != NULL)
			(*jni)->DeleteLocalRef(jni, classes[i]);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
}

void JNICALL jp_cb_roots_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass k)
{
	(void)jni;
	(void)thread;
	pthread_mutex_lock(&roots.mu);
	roots_scan(jvmti, k);
	pthread_mutex_unlock(&roots.mu);
}

/* jp_roots_vm_init finds the roots among the classes loaded so far. */
void jp_roots_vm_init(jvmtiEnv *jvmti, JNIEnv *jni)
{
	pthread_mutex_lock(&roots.mu);
	roots_scan_loaded(jvmti, jni);
	pthread_mutex_unlock(&roots.mu);
}

/* jp_roots_set changes the roots of a running VM (rtdriver roots=):
 * the old roots lose their breakpoints; a thread inside one goes on to
 * its exit. 0, or -1 with err. */
int jp_roots_set(const char *spec, char *err, int errlen)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	JNIEnv *jni = NULL;
	(*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8);
	pthread_mutex_lock(&roots.mu);
	int rc = roots_parse(spec, err, errlen);
	if (rc == 0) {
		for (int i = 0; i < roots.nmids; i++) {
			jlocation start = 0, end = 0;
			if ((*jvmti)->GetMethodLocation(jvmti, roots.mids[i], &start, &end) == JVMTI_ERROR_NONE)
				(*jvmti)->ClearBreakpoint(jvmti, roots.mids[i], start);
		}
		roots.nmids = 0;
		roots_scan_loaded(jvmti, jni);
	}
	pthread_mutex_unlock(&roots.mu);
	return rc;
}

/* jp_roots_count is how many methods are roots now. */
int jp_roots_count(void)
{
	pthread_mutex_lock(&roots.mu);
	int n = roots.nmids;
	pthread_mutex_unlock(&roots.mu);
	return n;
}

static int roots_thread_events(jvmtiEnv *jvmti, jthread thread, jvmtiEventMode mode)
{
	jvmtiError e = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_ENTRY, thread);
	if (e == JVMTI_ERROR_NONE)
		e = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_EXIT, thread);
	return (int)e;
}

/* Root entries not collected: the JVM refused to turn events on for the
 * thread, or it is a virtual thread and VTHREADS is off. */
static uint64_t roots_refused;

uint64_t jp_roots_refused(void)
{
	return __atomic_load_n(&roots_refused, __ATOMIC_RELAXED);
}

/* The count of frames open inside a root is kept in the thread's engine
 * record (src_frames): with virtual threads followed (VTHREADS), that is
 * the virtual thread's, which may move to another carrier inside a root. */

void JNICALL jp_cb_roots_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
				    jlocation location)
{
	(void)location;
	jp_thread *t = jp_thread_self();
	if (t != NULL && t->src_frames > 0)
		return; /* a root called inside one: its MethodEntry counted it */
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return;
	/* A virtual thread's count must follow it from carrier to carrier:
	 * in its own record, which only VTHREADS gives it. */
	if (jp_vt_mode != JP_VT_TRACKED && jp_vt_is_virtual(jni, thread)) {
		__atomic_add_fetch(&roots_refused, 1, __ATOMIC_RELAXED);
		return;
	}
	if (t == NULL && (t = jp_vm_thread(jvmti, thread)) == NULL)
		return;
	/* On before the root's entry is recorded: turning them on
	 * deoptimizes this thread's compiled frames, which is the agent's
	 * work, charged to nothing (the thread root runs until the entry). */
	if (roots_thread_events(jvmti, thread, JVMTI_ENABLE) != 0) {
		roots_thread_events(jvmti, thread, JVMTI_DISABLE);
		__atomic_add_fetch(&roots_refused, 1, __ATOMIC_RELAXED);
		return;
	}
	t->src_frames = 1;
	jp_event(t, (uintptr_t)method, JP_TR_ENTRY);
}

void JNICALL jp_cb_roots_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	jp_thread *t = jp_thread_self();
	if (t == NULL || t->src_frames == 0)
		return;
	t->src_frames++;
	if (__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		jp_event(t, (uintptr_t)mid, JP_TR_ENTRY);
}

void JNICALL jp_cb_roots_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
				     jboolean by_exception, jvalue rv)
{
	(void)jni;
	(void)rv;
	jp_thread *t = jp_thread_self();
	if (t == NULL || t->src_frames == 0)
		return;
	if (__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		jp_event(t, (uintptr_t)mid, by_exception ? JP_TR_EXCEPTION : JP_TR_EXIT);
	if (--t->src_frames == 0)
		roots_thread_events(jvmti, thread, JVMTI_DISABLE);
}
