/*
 * bci.c: the bytecode-instrumentation event source (option BCI).
 *
 * Classes are rewritten as they load (ClassFileLoadHook) and, when
 * collection starts, those already loaded are retransformed: the Java
 * transformer (java/agent, built into jprof-bci.jar next to libjprof.so
 * and put on the boot class path with ASM) injects calls to the static
 * natives of libjprof.bci.Probe, registered here. No JVMTI method event
 * is ever enabled, so the JIT compiles and inlines instrumented code.
 *
 * Keys: the engine keys contexts by the source's key, whose low bit must
 * be free and which must not be 0 (an empty map slot): a method with
 * registry handle h has key (h+1)<<1.
 *
 * Fast path: the injected call is a JNI static native with an int
 * constant. Once the caller is compiled this is a direct call into the
 * JNI wrapper (thread-state transitions, no handles, no object touched).
 * Measured with C2-compiled callers on this project's 2-core VM (a loop
 * calling an empty native before and after a trivial method, against the
 * same loop appending the id to a ThreadLocal int buffer instead): 8-16 ns
 * per event for the empty JNI call, 5-15 ns for the Java append, the
 * spread being the machine's load. The append would save a few ns but
 * leaves all of the engine's work still to do, later, on another thread
 * or in Java, and loses the Early/Late PTT reads around each event (the
 * calibration's premise); the engine's event itself (child lookup, PTT
 * reads: ~26 ns each with bpf) costs more than the call. So the native
 * call it is: jp_event runs exactly as for the JVMTI source.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jvmtiagent.h"

extern void jpGoBCINote(char *msg);

static struct {
	char *jar;     /* jprof-bci.jar (with ASM inside), for the boot class path */
	char *include; /* package prefixes, may be "" */
	char *exclude;
	char *roots;   /* ROOTS patterns, "" for every method */
	volatile int ready;         /* Java side set up (after VM init) */
	volatile int instrumenting; /* rewrite classes as they load */
	jclass transformer;         /* global refs */
	jclass probe;
	jmethodID m_transform, m_wanted, m_init, m_roots;
	/* Selective instrumentation: root methods (bit per handle) and
	 * whether events outside them are dropped. */
	volatile int selective;
	uint8_t *root_bits;
	uint32_t root_nbits;
	uint64_t transformed, failed; /* classes rewritten / retransform failures */
	uint64_t hook_calls, hook_ns; /* class file hooks that ran the transformer, and their time */
} bci;

/* Inside the transformer: classes it loads itself are not rewritten. */
static __thread int bci_busy;
/* Orders starting, retransformation and VM death. */
static pthread_mutex_t bci_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t bci_resolve(uintptr_t key)
{
	return (uint32_t)((key >> 1) - 1);
}

const jp_source jp_bci = { "bci", bci_resolve };

static inline uintptr_t bci_key(jint id)
{
	return ((uintptr_t)(uint32_t)id + 1) << 1;
}

/* bci_thread makes the calling Java thread's record at its first event. */
static __attribute__((noinline)) jp_thread *bci_thread(void)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jvmtiThreadInfo info;
	memset(&info, 0, sizeof info);
	const char *name = "unknown";
	if ((*jvmti)->GetThreadInfo(jvmti, NULL, &info) == JVMTI_ERROR_NONE && info.name)
		name = info.name;
	jp_thread *t = jp_thread_attach(name);
	if (info.name)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
	return t;
}

/* With ROOTS, a thread's depth of root frames: events of other methods
 * count only inside one. Reset with each collection epoch. */
static __thread struct {
	uint32_t epoch;
	uint32_t depth;
} bci_rd;

static inline int bci_is_root(jint id)
{
	uint32_t h = (uint32_t)id;
	return bci.root_bits != NULL && h < bci.root_nbits &&
	       (__atomic_load_n(&bci.root_bits[h >> 3], __ATOMIC_RELAXED) >> (h & 7) & 1);
}

static __attribute__((noinline)) int bci_inside_roots(jint id, int tr)
{
	uint32_t ep = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (bci_rd.epoch != ep) {
		bci_rd.epoch = ep;
		bci_rd.depth = 0;
	}
	if (bci_is_root(id)) {
		if (tr == JP_TR_ENTRY)
			bci_rd.depth++;
		else if (bci_rd.depth > 0)
			bci_rd.depth--;
		return 1;
	}
	return bci_rd.depth > 0;
}

static inline void bci_event(jint id, int tr)
{
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return;
	if (__builtin_expect(bci.selective, 0) && !bci_inside_roots(id, tr))
		return;
	jp_thread *t = jp_thread_self();
	if (__builtin_expect(t == NULL, 0) && (t = bci_thread()) == NULL)
		return;
	jp_event(t, bci_key(id), tr);
}

static void JNICALL bci_enter(JNIEnv *env, jclass c, jint id)
{
	(void)env;
	(void)c;
	bci_event(id, JP_TR_ENTRY);
}

static void JNICALL bci_exit(JNIEnv *env, jclass c, jint id)
{
	(void)env;
	(void)c;
	bci_event(id, JP_TR_EXIT);
}

static void JNICALL bci_unwind(JNIEnv *env, jclass c, jint id)
{
	(void)env;
	(void)c;
	bci_event(id, JP_TR_EXCEPTION);
}

static jint JNICALL bci_register(JNIEnv *env, jclass c, jstring name, jint type)
{
	(void)c;
	const char *s = (*env)->GetStringUTFChars(env, name, NULL);
	if (s == NULL)
		return (jint)JP_METHOD_OVERFLOW(type);
	uint32_t h = jp_method_register(s, type);
	(*env)->ReleaseStringUTFChars(env, name, s);
	return (jint)h;
}

static void JNICALL bci_note(JNIEnv *env, jclass c, jstring msg)
{
	(void)c;
	const char *s = (*env)->GetStringUTFChars(env, msg, NULL);
	if (s == NULL)
		return;
	jpGoBCINote((char *)s);
	(*env)->ReleaseStringUTFChars(env, msg, s);
}

static void JNICALL bci_add_reads(JNIEnv *env, jclass c, jobject from, jobject to)
{
	(void)env;
	(void)c;
	(*jpvm.jvmti)->AddModuleReads(jpvm.jvmti, from, to);
}

static void JNICALL bci_mark_root(JNIEnv *env, jclass c, jint id)
{
	(void)env;
	(void)c;
	uint32_t h = (uint32_t)id;
	if (bci.root_bits != NULL && h < bci.root_nbits)
		__atomic_or_fetch(&bci.root_bits[h >> 3], (uint8_t)(1u << (h & 7)), __ATOMIC_RELAXED);
}

static void bci_retransform_named(JNIEnv *jni, jobjectArray names);

static void JNICALL bci_retransform_natives(JNIEnv *env, jclass c, jobjectArray names)
{
	(void)c;
	bci_retransform_named(env, names);
}

static void bci_notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bci_notef(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	jpGoBCINote(buf);
}

/* jp_bci_configure is called by Go before jp_vm_setup: the source's jar
 * (found beside this library), package filters and roots. */
int jp_bci_configure(const char *include, const char *exclude, const char *roots, char *err, int errlen)
{
	Dl_info di;
	if (dladdr((void *)jp_bci_configure, &di) == 0 || di.dli_fname == NULL) {
		snprintf(err, errlen, "BCI: cannot tell where libjprof.so is");
		return -1;
	}
	char *so = strdup(di.dli_fname);
	char *dir = so ? dirname(so) : NULL;
	char *jar = NULL;
	if (dir == NULL || asprintf(&jar, "%s/jprof-bci.jar", dir) < 0) {
		free(so);
		snprintf(err, errlen, "BCI: no memory");
		return -1;
	}
	free(so);
	if (access(jar, R_OK) != 0) {
		snprintf(err, errlen, "BCI: %s not found (make agent builds it beside libjprof.so)", jar);
		free(jar);
		return -1;
	}
	bci.jar = jar;
	bci.include = strdup(include);
	bci.exclude = strdup(exclude);
	bci.roots = strdup(roots);
	jpvm.bci = 1;
	return 0;
}

/* jp_bci_onload adds the capabilities, puts the jar on the boot class
 * path and turns the class file hook on (Agent_OnLoad). */
int jp_bci_onload(jvmtiEnv *jvmti, char *err, int errlen)
{
	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	caps.can_retransform_classes = 1;
	caps.can_generate_all_class_hook_events = 1;
	jvmtiError e = (*jvmti)->AddCapabilities(jvmti, &caps);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "BCI: AddCapabilities(retransform classes) failed: JVMTI error %d", (int)e);
		return -1;
	}
	e = (*jvmti)->AddToBootstrapClassLoaderSearch(jvmti, bci.jar);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "BCI: AddToBootstrapClassLoaderSearch(%s) failed: JVMTI error %d", bci.jar, (int)e);
		return -1;
	}
	e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, NULL);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "BCI: enabling ClassFileLoadHook failed: JVMTI error %d", (int)e);
		return -1;
	}
	return 0;
}

void JNICALL jp_bci_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
				    const char *name, jobject pd, jint len, const unsigned char *data,
				    jint *new_len, unsigned char **new_data)
{
	(void)redefined;
	(void)pd;
	if (!bci.ready || !bci.instrumenting || bci_busy || name == NULL || jni == NULL || jp.dead)
		return;
	bci_busy = 1;
	uint64_t t0 = jp_mono_ns();
	if ((*jni)->PushLocalFrame(jni, 8) != 0) {
		(*jni)->ExceptionClear(jni);
		bci_busy = 0;
		return;
	}
	jstring jname = (*jni)->NewStringUTF(jni, name);
	jbyteArray in = (*jni)->NewByteArray(jni, len);
	jbyteArray out = NULL;
	if (jname != NULL && in != NULL) {
		(*jni)->SetByteArrayRegion(jni, in, 0, len, (const jbyte *)data);
		out = (jbyteArray)(*jni)->CallStaticObjectMethod(jni, bci.transformer, bci.m_transform, jname,
								 (jboolean)(loader == NULL), in);
	}
	if ((*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		out = NULL;
		__atomic_add_fetch(&bci.failed, 1, __ATOMIC_RELAXED);
		bci_notef("BCI: class %s left as it was: the transformer threw", name);
	}
	if (out != NULL) {
		jint n = (*jni)->GetArrayLength(jni, out);
		unsigned char *buf = NULL;
		if (n > 0 && (*jvmti)->Allocate(jvmti, n, &buf) == JVMTI_ERROR_NONE) {
			(*jni)->GetByteArrayRegion(jni, out, 0, n, (jbyte *)buf);
			*new_data = buf;
			*new_len = n;
			__atomic_add_fetch(&bci.transformed, 1, __ATOMIC_RELAXED);
		}
	}
	(*jni)->PopLocalFrame(jni, NULL);
	__atomic_add_fetch(&bci.hook_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.hook_ns, jp_mono_ns() - t0, __ATOMIC_RELAXED);
	bci_busy = 0;
}

static JNIEnv *bci_env(void)
{
	JNIEnv *env = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK)
		return NULL;
	return env;
}

/* bci_retransform_list retransforms classes (local refs, deleted here);
 * classes that cannot be are named in log-msg and stay as they are. */
static void bci_retransform_list(JNIEnv *jni, jclass *want, jint nw)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	/* In batches; a batch that fails is retried class by class, so that
	 * one class the VM refuses does not keep the others as they were. */
	const jint batch = 256;
	for (jint i = 0; i < nw; i += batch) {
		jint m = nw - i < batch ? nw - i : batch;
		jvmtiError e = (*jvmti)->RetransformClasses(jvmti, m, want + i);
		if (e == JVMTI_ERROR_NONE)
			continue;
		for (jint j = i; j < i + m; j++) {
			e = (*jvmti)->RetransformClasses(jvmti, 1, want + j);
			if (e != JVMTI_ERROR_NONE) {
				char *sig = NULL;
				(*jvmti)->GetClassSignature(jvmti, want[j], &sig, NULL);
				bci_notef("BCI: class %s left as it was: RetransformClasses: JVMTI error %d",
					  sig ? sig : "?", (int)e);
				__atomic_add_fetch(&bci.failed, 1, __ATOMIC_RELAXED);
				if (sig)
					(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
			}
		}
	}
	for (jint i = 0; i < nw; i++)
		(*jni)->DeleteLocalRef(jni, want[i]);
}

/* bci_retransform_named retransforms the loaded classes of these names
 * (selective instrumentation's queue), on the caller's thread. */
static void bci_retransform_named(JNIEnv *jni, jobjectArray names)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jint nn = (*jni)->GetArrayLength(jni, names);
	char **want_names = calloc(nn > 0 ? nn : 1, sizeof(char *));
	if (want_names == NULL)
		return;
	for (jint i = 0; i < nn; i++) {
		jstring s = (jstring)(*jni)->GetObjectArrayElement(jni, names, i);
		const char *u = s ? (*jni)->GetStringUTFChars(jni, s, NULL) : NULL;
		if (u != NULL) {
			want_names[i] = strdup(u);
			(*jni)->ReleaseStringUTFChars(jni, s, u);
		}
		if (s)
			(*jni)->DeleteLocalRef(jni, s);
	}
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) == JVMTI_ERROR_NONE) {
		jclass *want = calloc(n > 0 ? n : 1, sizeof(jclass));
		jint nw = 0;
		for (jint i = 0; i < n; i++) {
			char *sig = NULL;
			int keep = 0;
			jboolean mod = JNI_FALSE;
			if (want != NULL && (*jvmti)->GetClassSignature(jvmti, classes[i], &sig, NULL) == JVMTI_ERROR_NONE &&
			    sig != NULL) {
				size_t l = strlen(sig);
				if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';') {
					for (jint k = 0; k < nn && !keep; k++)
						keep = want_names[k] != NULL && strlen(want_names[k]) == l - 2 &&
						       strncmp(want_names[k], sig + 1, l - 2) == 0;
				}
				(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
			}
			if (keep && (*jvmti)->IsModifiableClass(jvmti, classes[i], &mod) == JVMTI_ERROR_NONE && mod)
				want[nw++] = classes[i];
			else
				(*jni)->DeleteLocalRef(jni, classes[i]);
		}
		pthread_mutex_lock(&bci_lock);
		if (bci.instrumenting && !jp.dead)
			bci_retransform_list(jni, want, nw);
		else
			for (jint i = 0; i < nw; i++)
				(*jni)->DeleteLocalRef(jni, want[i]);
		pthread_mutex_unlock(&bci_lock);
		free(want);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
	}
	for (jint i = 0; i < nn; i++)
		free(want_names[i]);
	free(want_names);
}

/* bci_retransform retransforms the loaded classes the transformer
 * wants. Called with bci_lock held, on a thread attached to the VM. */
static void bci_retransform(JNIEnv *jni)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE) {
		bci_notef("BCI: GetLoadedClasses failed: loaded classes not instrumented");
		return;
	}
	jclass *want = calloc(n > 0 ? n : 1, sizeof(jclass));
	jint nw = 0;
	for (jint i = 0; i < n; i++) {
		jboolean mod = JNI_FALSE;
		char *sig = NULL;
		jobject loader = NULL;
		int keep = 0;
		if ((*jvmti)->IsModifiableClass(jvmti, classes[i], &mod) == JVMTI_ERROR_NONE && mod &&
		    (*jvmti)->GetClassSignature(jvmti, classes[i], &sig, NULL) == JVMTI_ERROR_NONE && sig != NULL) {
			size_t l = strlen(sig);
			if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';' &&
			    (*jvmti)->GetClassLoader(jvmti, classes[i], &loader) == JVMTI_ERROR_NONE) {
				sig[l - 1] = 0;
				jstring jname = (*jni)->NewStringUTF(jni, sig + 1);
				if (jname != NULL)
					keep = (*jni)->CallStaticBooleanMethod(jni, bci.transformer, bci.m_wanted, jname,
									       (jboolean)(loader == NULL));
				if ((*jni)->ExceptionCheck(jni)) {
					(*jni)->ExceptionClear(jni);
					keep = 0;
				}
				if (jname != NULL)
					(*jni)->DeleteLocalRef(jni, jname);
				if (loader != NULL)
					(*jni)->DeleteLocalRef(jni, loader);
			}
		}
		if (sig != NULL)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
		if (keep && want != NULL)
			want[nw++] = classes[i];
		else
			(*jni)->DeleteLocalRef(jni, classes[i]);
	}
	if (want != NULL)
		bci_retransform_list(jni, want, nw);
	free(want);
	(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
}

/* jp_bci_vm_init sets the Java side up (VM init, on the main thread) and,
 * if collection started at load, instruments what loaded before. */
void jp_bci_vm_init(JNIEnv *jni)
{
	static const JNINativeMethod natives[] = {
		{ "enter", "(I)V", (void *)bci_enter },
		{ "exit", "(I)V", (void *)bci_exit },
		{ "unwind", "(I)V", (void *)bci_unwind },
		{ "register", "(Ljava/lang/String;I)I", (void *)bci_register },
		{ "note", "(Ljava/lang/String;)V", (void *)bci_note },
		{ "addReads", "(Ljava/lang/Module;Ljava/lang/Module;)V", (void *)bci_add_reads },
		{ "markRoot", "(I)V", (void *)bci_mark_root },
		{ "retransform", "([Ljava/lang/String;)V", (void *)bci_retransform_natives },
	};
	bci.root_nbits = jp.max_methods;
	bci.root_bits = calloc(jp.max_methods / 8 + 1, 1);
	bci_busy = 1;
	jclass p = (*jni)->FindClass(jni, "libjprof/bci/Probe");
	jclass t = p ? (*jni)->FindClass(jni, "libjprof/bci/Transformer") : NULL;
	if (p == NULL || t == NULL ||
	    (*jni)->RegisterNatives(jni, p, natives, sizeof natives / sizeof natives[0]) != 0) {
		(*jni)->ExceptionDescribe(jni);
		(*jni)->ExceptionClear(jni);
		bci_busy = 0;
		bci_notef("BCI: the agent's Java classes could not be loaded: nothing is instrumented");
		fprintf(stderr, "libjprof: BCI: the agent's Java classes could not be loaded: nothing is instrumented\n");
		return;
	}
	bci.probe = (*jni)->NewGlobalRef(jni, p);
	bci.transformer = (*jni)->NewGlobalRef(jni, t);
	bci.m_transform = (*jni)->GetStaticMethodID(jni, t, "transform", "(Ljava/lang/String;Z[B)[B");
	bci.m_wanted = (*jni)->GetStaticMethodID(jni, t, "wanted", "(Ljava/lang/String;Z)Z");
	bci.m_init = (*jni)->GetStaticMethodID(jni, t, "init", "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V");
	bci.m_roots = (*jni)->GetStaticMethodID(jni, t, "setRoots", "(Ljava/lang/String;)V");
	if (bci.m_transform && bci.m_wanted && bci.m_init && bci.m_roots) {
		jstring inc = (*jni)->NewStringUTF(jni, bci.include);
		jstring exc = (*jni)->NewStringUTF(jni, bci.exclude);
		jstring roots = (*jni)->NewStringUTF(jni, bci.roots);
		(*jni)->CallStaticVoidMethod(jni, t, bci.m_init, inc, exc, roots);
		bci.selective = bci.roots[0] != 0 && strcmp(bci.roots, "all") != 0;
	}
	if ((*jni)->ExceptionCheck(jni) || !bci.m_transform || !bci.m_wanted || !bci.m_init || !bci.m_roots) {
		(*jni)->ExceptionDescribe(jni);
		(*jni)->ExceptionClear(jni);
		bci_busy = 0;
		bci_notef("BCI: the transformer could not be set up: nothing is instrumented");
		return;
	}
	bci_busy = 0;
	pthread_mutex_lock(&bci_lock);
	bci.ready = 1;
	if (bci.instrumenting)
		bci_retransform(jni);
	pthread_mutex_unlock(&bci_lock);
}

/* jp_bci_set turns collection on (instrumenting first: classes loaded
 * later as they load, those loaded before by retransformation) or off.
 * Instrumented code stays: off, its calls return at once. -1 once the
 * VM is dying. */
int jp_bci_set(int on)
{
	pthread_mutex_lock(&bci_lock);
	int rc = 0;
	if (on && jp.dead) {
		rc = -1;
	} else if (on) {
		jp_collect(1);
		if (!bci.instrumenting) {
			bci.instrumenting = 1;
			JNIEnv *jni = bci.ready ? bci_env() : NULL;
			if (jni != NULL)
				bci_retransform(jni);
		}
	} else {
		jp_collect(0);
	}
	pthread_mutex_unlock(&bci_lock);
	return rc;
}

/* jp_bci_roots changes the roots of selective instrumentation (""
 * or "all": every method) and re-instruments the loaded classes; a new
 * collection epoch starts if collecting. Returns 0, or -1 with err. */
int jp_bci_roots(const char *roots, char *err, int errlen)
{
	JNIEnv *jni = bci_env();
	if (!bci.ready || jni == NULL) {
		snprintf(err, errlen, "BCI is not set up (yet)");
		return -1;
	}
	pthread_mutex_lock(&bci_lock);
	int rc = 0;
	jstring s = (*jni)->NewStringUTF(jni, roots);
	if (s != NULL)
		(*jni)->CallStaticVoidMethod(jni, bci.transformer, bci.m_roots, s);
	jthrowable ex = (*jni)->ExceptionOccurred(jni);
	if (s == NULL || ex != NULL) {
		(*jni)->ExceptionClear(jni);
		snprintf(err, errlen, "bad roots %s", roots);
		if (ex != NULL) {
			jclass tc = (*jni)->GetObjectClass(jni, ex);
			jmethodID gm = (*jni)->GetMethodID(jni, tc, "getMessage", "()Ljava/lang/String;");
			jstring m = gm ? (jstring)(*jni)->CallObjectMethod(jni, ex, gm) : NULL;
			(*jni)->ExceptionClear(jni);
			const char *u = m ? (*jni)->GetStringUTFChars(jni, m, NULL) : NULL;
			if (u != NULL) {
				snprintf(err, errlen, "%s", u);
				(*jni)->ReleaseStringUTFChars(jni, m, u);
			}
		}
		rc = -1;
	} else {
		memset(bci.root_bits, 0, bci.root_nbits / 8 + 1);
		bci.selective = roots[0] != 0 && strcmp(roots, "all") != 0;
		if (bci.instrumenting)
			bci_retransform(jni);
		if (jp.collecting)
			jp_collect(1);
	}
	pthread_mutex_unlock(&bci_lock);
	return rc;
}

void jp_bci_die(void)
{
	pthread_mutex_lock(&bci_lock);
	jp.dead = 1;
	jp_collect(0);
	pthread_mutex_unlock(&bci_lock);
}

void jp_bci_stats(uint64_t *out)
{
	out[0] = __atomic_load_n(&bci.transformed, __ATOMIC_RELAXED);
	out[1] = __atomic_load_n(&bci.failed, __ATOMIC_RELAXED);
	out[2] = __atomic_load_n(&bci.hook_calls, __ATOMIC_RELAXED);
	out[3] = __atomic_load_n(&bci.hook_ns, __ATOMIC_RELAXED);
}
