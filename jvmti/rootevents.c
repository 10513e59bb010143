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
 * loaded when the VM starts, and in each class as it is prepared. The
 * grammar is agent/roots.go's (the Go side checks and normalizes the
 * value): '*' any run of characters, dots included, '?' one character;
 * a '.' of a class pattern also matches a '$' after the class name's
 * last '.' (a nested class in the source's spelling).
 * libjprof/bci/Selective.java matches with the same loop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

/* Patterns: globs on the dotted class name and on the method name. */
typedef struct {
	int n;
	char **cls, **meth;
} roots_pats;

/* The roots, and the methods given a breakpoint. Changed under mu; the
 * event callbacks read none of it. */
static struct {
	pthread_mutex_t mu;
	roots_pats p;
	jmethodID *mids;
	int nmids, cap;
} roots = { .mu = PTHREAD_MUTEX_INITIALIZER };

int jp_roots_on;

static void roots_pats_free(roots_pats *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->cls[i]);
		free(p->meth[i]);
	}
	free(p->cls);
	free(p->meth);
	p->cls = p->meth = NULL;
	p->n = 0;
}

/* u8len is the length of the UTF-8 sequence a byte starts, so that '?'
 * takes one character, as in Go and Java. */
static size_t u8len(const char *s)
{
	unsigned char c = (unsigned char)*s;
	size_t l = c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	for (size_t k = 1; k < l; k++)
		if ((s[k] & 0xc0) != 0x80)
			return k;
	return l;
}

/* glob_nest is jp_roots_glob where a pattern's '.' also matches a '$'
 * of the name at or after nest (NULL: nowhere). */
static int glob_nest(const char *p, const char *n, const char *nest)
{
	const char *star = NULL, *mark = NULL;
	while (*n) {
		if (*p == '?') {
			p++;
			n += u8len(n);
		} else if (*p == '*') {
			star = p++;
			mark = n;
		} else if (*p && (*p == *n || (*p == '.' && *n == '$' && nest != NULL && n >= nest))) {
			p++;
			n++;
		} else if (star != NULL) {
			p = star + 1;
			mark += u8len(mark);
			n = mark;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == 0;
}

/* jp_roots_glob matches a name against a pattern: '*' any run of
 * characters, '?' one character, the rest itself. Greedy with one
 * backtrack point, the last '*' (agent/roots.go's globMatch). */
int jp_roots_glob(const char *p, const char *n)
{
	return glob_nest(p, n, NULL);
}

/* roots_class_match matches a dotted binary class name against a class
 * pattern as agent/roots.go's classMatch does: a '.' of the pattern also
 * matches a '$' after the name's last '.', since which '$' nest a class
 * is not in its name (Outer$In$ner may be In$ner in Outer). */
static int roots_class_match(const char *pat, const char *name)
{
	const char *dot = strrchr(name, '.');
	return glob_nest(pat, name, dot != NULL ? dot + 1 : name);
}

/* roots_parse reads "a.b.C.m+d.E.*" (':' also separates) into out; 0,
 * or -1 with err. Slashes in class names are taken as dots. */
static int roots_parse(const char *spec, roots_pats *out, char *err, int errlen)
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
			snprintf(err, errlen, "root %s: want Class.method", tok);
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
	roots_pats p = { n, cls, meth };
	if (rc != 0) {
		roots_pats_free(&p);
		return -1;
	}
	*out = p;
	return 0;
}

/* jp_roots_configure takes the ROOTS option for the method-event source
 * (before jp_vm_setup). */
int jp_roots_configure(const char *spec, char *err, int errlen)
{
	roots_pats p;
	if (roots_parse(spec, &p, err, errlen) != 0)
		return -1;
	pthread_mutex_lock(&roots.mu);
	roots_pats_free(&roots.p);
	roots.p = p;
	pthread_mutex_unlock(&roots.mu);
	jp_roots_on = 1;
	jp.roots = 1;
	return 0;
}

static int roots_have(jmethodID m)
{
	for (int i = 0; i < roots.nmids; i++)
		if (roots.mids[i] == m)
			return 1;
	return 0;
}

/* roots_scan finds the methods with bytecode of one prepared class that
 * the patterns match and returns how many; with set (mu held, p the
 * roots'), it gives each a breakpoint. */
static int roots_scan(jvmtiEnv *jvmti, jclass k, const roots_pats *p, int set)
{
	char *sig = NULL;
	if ((*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE || sig == NULL)
		return 0;
	size_t l = strlen(sig);
	char *name = sig + 1;
	int any = 0, found = 0;
	if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';') {
		sig[l - 1] = 0;
		for (char *c = name; *c; c++)
			if (*c == '/')
				*c = '.';
		for (int i = 0; i < p->n && !any; i++)
			any = roots_class_match(p->cls[i], name);
	}
	jint nm = 0;
	jmethodID *ms = NULL;
	if (any && (*jvmti)->GetClassMethods(jvmti, k, &nm, &ms) == JVMTI_ERROR_NONE) {
		for (jint j = 0; j < nm; j++) {
			char *mname = NULL;
			if ((*jvmti)->GetMethodName(jvmti, ms[j], &mname, NULL, NULL) != JVMTI_ERROR_NONE || mname == NULL)
				continue;
			int match = 0;
			for (int i = 0; i < p->n && !match; i++)
				match = jp_roots_glob(p->meth[i], mname) && roots_class_match(p->cls[i], name);
			(*jvmti)->Deallocate(jvmti, (unsigned char *)mname);
			jint mods = 0;
			jlocation start = 0, end = 0;
			if (!match || (*jvmti)->GetMethodModifiers(jvmti, ms[j], &mods) != JVMTI_ERROR_NONE ||
			    (mods & 0x0500) != 0 || /* native, abstract: no bytecode */
			    (*jvmti)->GetMethodLocation(jvmti, ms[j], &start, &end) != JVMTI_ERROR_NONE)
				continue;
			found++;
			if (!set || roots_have(ms[j]))
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
	return found;
}

/* roots_scan_loaded scans every prepared class; the count of methods
 * matched. */
static int roots_scan_loaded(jvmtiEnv *jvmti, JNIEnv *jni, const roots_pats *p, int set)
{
	jint n = 0;
	jclass *classes = NULL;
	int found = 0;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE)
		return 0;
	for (jint i = 0; i < n; i++) {
		jint st = 0;
		if ((*jvmti)->GetClassStatus(jvmti, classes[i], &st) == JVMTI_ERROR_NONE &&
		    (st & JVMTI_CLASS_STATUS_PREPARED) && !(st & (JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE)))
			found += roots_scan(jvmti, classes[i], p, set);
		if (jni != NULL)
			(*jni)->DeleteLocalRef(jni, classes[i]);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
	return found;
}

void JNICALL jp_cb_roots_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass k)
{
	(void)jni;
	(void)thread;
	pthread_mutex_lock(&roots.mu);
	roots_scan(jvmti, k, &roots.p, 1);
	pthread_mutex_unlock(&roots.mu);
}

/* jp_roots_vm_init finds the roots among the classes loaded so far. */
void jp_roots_vm_init(jvmtiEnv *jvmti, JNIEnv *jni)
{
	pthread_mutex_lock(&roots.mu);
	roots_scan_loaded(jvmti, jni, &roots.p, 1);
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
	roots_pats p;
	if (roots_parse(spec, &p, err, errlen) != 0)
		return -1;
	pthread_mutex_lock(&roots.mu);
	roots_pats_free(&roots.p);
	roots.p = p;
	for (int i = 0; i < roots.nmids; i++) {
		jlocation start = 0, end = 0;
		if ((*jvmti)->GetMethodLocation(jvmti, roots.mids[i], &start, &end) == JVMTI_ERROR_NONE)
			(*jvmti)->ClearBreakpoint(jvmti, roots.mids[i], start);
	}
	roots.nmids = 0;
	roots_scan_loaded(jvmti, jni, &roots.p, 1);
	pthread_mutex_unlock(&roots.mu);
	return 0;
}

/* jp_roots_count is how many methods are roots now. */
int jp_roots_count(void)
{
	pthread_mutex_lock(&roots.mu);
	int n = roots.nmids;
	pthread_mutex_unlock(&roots.mu);
	return n;
}

/* jp_roots_match_loaded is how many methods with bytecode of the loaded
 * classes these roots match (the BCI source before it instruments), or
 * -1 if spec is not a roots value. Needs a thread attached to the VM. */
int jp_roots_match_loaded(const char *spec)
{
	JNIEnv *jni = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK)
		jni = NULL;
	char err[128];
	roots_pats p;
	if (roots_parse(spec, &p, err, sizeof err) != 0)
		return -1;
	int n = roots_scan_loaded(jpvm.jvmti, jni, &p, 0);
	roots_pats_free(&p);
	return n;
}

/* jp_roots_class_findable says whether a class of this dotted binary
 * name is loaded, or has a class file the system class loader finds
 * (its parents' included, so the JDK's modules too): 1 yes, 0 no, -1
 * cannot tell. It loads nothing. Needs a thread attached to the VM. */
int jp_roots_class_findable(const char *dotted)
{
	JNIEnv *jni = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK || jni == NULL)
		return -1;
	size_t l = strlen(dotted);
	char *sig = malloc(l + 3), *res = malloc(l + 7);
	if (sig == NULL || res == NULL) {
		free(sig);
		free(res);
		return -1;
	}
	sig[0] = 'L';
	for (size_t i = 0; i < l; i++)
		sig[i + 1] = res[i] = dotted[i] == '.' ? '/' : dotted[i];
	memcpy(sig + l + 1, ";", 2);
	memcpy(res + l, ".class", 7);
	int found = 0;
	jvmtiEnv *jvmti = jpvm.jvmti;
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) == JVMTI_ERROR_NONE) {
		for (jint i = 0; i < n; i++) {
			char *s = NULL;
			if (!found && (*jvmti)->GetClassSignature(jvmti, classes[i], &s, NULL) == JVMTI_ERROR_NONE && s != NULL) {
				found = strcmp(s, sig) == 0;
				(*jvmti)->Deallocate(jvmti, (unsigned char *)s);
			}
			(*jni)->DeleteLocalRef(jni, classes[i]);
		}
		(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
	}
	if (!found) {
		found = -1;
		jclass cl = (*jni)->FindClass(jni, "java/lang/ClassLoader");
		jmethodID sys = cl ? (*jni)->GetStaticMethodID(jni, cl, "getSystemClassLoader", "()Ljava/lang/ClassLoader;") : NULL;
		jmethodID get = cl ? (*jni)->GetMethodID(jni, cl, "getResource", "(Ljava/lang/String;)Ljava/net/URL;") : NULL;
		jobject loader = sys ? (*jni)->CallStaticObjectMethod(jni, cl, sys) : NULL;
		jstring name = loader && get ? (*jni)->NewStringUTF(jni, res) : NULL;
		jobject url = name ? (*jni)->CallObjectMethod(jni, loader, get, name) : NULL;
		if ((*jni)->ExceptionCheck(jni))
			(*jni)->ExceptionClear(jni);
		else if (name != NULL)
			found = url != NULL;
		if (url)
			(*jni)->DeleteLocalRef(jni, url);
		if (name)
			(*jni)->DeleteLocalRef(jni, name);
		if (loader)
			(*jni)->DeleteLocalRef(jni, loader);
		if (cl)
			(*jni)->DeleteLocalRef(jni, cl);
	}
	free(sig);
	free(res);
	return found;
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

/* jp_roots_class_file reads the class file of a class of this dotted
 * binary name as the system class loader finds it (getResourceAsStream:
 * nothing is loaded or initialized); malloc'd bytes and their length, or
 * NULL. Needs a thread attached to the VM. */
unsigned char *jp_roots_class_file(const char *dotted, int *len)
{
	JNIEnv *jni = NULL;
	*len = 0;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK || jni == NULL)
		return NULL;
	if ((*jni)->PushLocalFrame(jni, 16) != 0) {
		(*jni)->ExceptionClear(jni);
		return NULL;
	}
	size_t l = strlen(dotted);
	char *res = malloc(l + 7);
	unsigned char *out = NULL;
	if (res != NULL) {
		for (size_t i = 0; i < l; i++)
			res[i] = dotted[i] == '.' ? '/' : dotted[i];
		memcpy(res + l, ".class", 7);
		jclass cl = (*jni)->FindClass(jni, "java/lang/ClassLoader");
		jclass is = (*jni)->FindClass(jni, "java/io/InputStream");
		jmethodID sys = cl ? (*jni)->GetStaticMethodID(jni, cl, "getSystemClassLoader", "()Ljava/lang/ClassLoader;") : NULL;
		jmethodID get = cl ? (*jni)->GetMethodID(jni, cl, "getResourceAsStream", "(Ljava/lang/String;)Ljava/io/InputStream;") : NULL;
		jmethodID all = is ? (*jni)->GetMethodID(jni, is, "readAllBytes", "()[B") : NULL;
		jmethodID close = is ? (*jni)->GetMethodID(jni, is, "close", "()V") : NULL;
		jobject loader = sys ? (*jni)->CallStaticObjectMethod(jni, cl, sys) : NULL;
		jstring name = loader && get && all && close ? (*jni)->NewStringUTF(jni, res) : NULL;
		jobject in = name ? (*jni)->CallObjectMethod(jni, loader, get, name) : NULL;
		jbyteArray b = in && !(*jni)->ExceptionCheck(jni) ? (jbyteArray)(*jni)->CallObjectMethod(jni, in, all) : NULL;
		if (in != NULL) {
			(*jni)->ExceptionClear(jni);
			(*jni)->CallVoidMethod(jni, in, close);
		}
		(*jni)->ExceptionClear(jni);
		if (b != NULL) {
			jsize n = (*jni)->GetArrayLength(jni, b);
			if (n > 0 && (out = malloc(n)) != NULL) {
				(*jni)->GetByteArrayRegion(jni, b, 0, n, (jbyte *)out);
				*len = n;
			}
		}
		(*jni)->ExceptionClear(jni);
	}
	free(res);
	(*jni)->PopLocalFrame(jni, NULL);
	return out;
}
