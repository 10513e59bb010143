/*
 * bci_classes.c: the BCI source's class rewriting. The class file hook
 * hands class files to the Java transformer (ASM, in jprof-bci.jar on
 * the boot class path); classes loaded before collection starts, or
 * before the roots change, are retransformed. A class that cannot be
 * rewritten stays as it was and is named in log-msg.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bci.h"

/* jp_agent_jar is the path of jprof-bci.jar beside libjprof.so (the
 * agent's Java classes, for BCI and LOCK), malloc'd; NULL with err. */
char *jp_agent_jar(const char *who, char *err, int errlen)
{
	Dl_info di;
	if (dladdr((void *)jp_agent_jar, &di) == 0 || di.dli_fname == NULL) {
		snprintf(err, errlen, "%s: cannot tell where libjprof.so is", who);
		return NULL;
	}
	char *so = strdup(di.dli_fname);
	char *dir = so ? dirname(so) : NULL;
	char *jar = NULL;
	if (dir == NULL || asprintf(&jar, "%s/jprof-bci.jar", dir) < 0) {
		free(so);
		snprintf(err, errlen, "%s: no memory", who);
		return NULL;
	}
	free(so);
	if (access(jar, R_OK) != 0) {
		snprintf(err, errlen, "%s: %s not found (make agent builds it beside libjprof.so)", who, jar);
		free(jar);
		return NULL;
	}
	return jar;
}

/* jp_bci_configure is called by Go before jp_vm_setup: the source's jar
 * (found beside this library), package filters and roots. */
int jp_bci_configure(const char *include, const char *exclude, const char *roots, const char *cache_name, int cache_fd,
		     int64_t cache_budget, int flags, char *err, int errlen)
{
	char *jar = jp_agent_jar("BCI", err, errlen);
	if (jar == NULL)
		return -1;
	if ((flags & JP_BCI_JLM) && jp_jlm_configure() != 0) {
		free(jar);
		snprintf(err, errlen, "JLM: no memory for its sites");
		return -1;
	}
	bci.jar = jar;
	bci.include = strdup(include);
	bci.exclude = strdup(exclude);
	bci.roots = strdup(roots);
	bci.cache_fd = cache_fd;
	bci.cache_name = strdup(cache_name);
	bci.cache_budget = cache_budget;
	bci.flags = flags;
	jpvm.bci = 1;
	return 0;
}

/* bci_enable adds the capabilities, puts the jar on the boot class path
 * and turns the class file hook on (the source's enable). */
int bci_enable(jvmtiEnv *jvmti, int live, char *err, int errlen)
{
	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	caps.can_retransform_classes = 1;
	caps.can_generate_all_class_hook_events = 1;
	caps.can_get_bytecodes = 1; /* bci_loops.c */
	jvmtiError e = (*jvmti)->AddCapabilities(jvmti, &caps);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "BCI: AddCapabilities(retransform classes) failed: JVMTI error %d", (int)e);
		return -1;
	}
	/* Attached, natives stay as they are: the wrappers could never be
	 * taken out again (a retransformation cannot remove methods), and
	 * detaching must leave the program as it was. */
	if (live && (bci.flags & JP_BCI_NATIVES)) {
		bci.flags &= ~JP_BCI_NATIVES;
		bci.natives_refused = -1;
	}
	if (bci.flags & JP_BCI_NATIVES) {
		/* Native methods are seen through wrappers that call the native
		 * renamed with this prefix (Transformer.NATIVE_PREFIX), which the
		 * VM then links to the original name's code. */
		memset(&caps, 0, sizeof caps);
		caps.can_set_native_method_prefix = 1;
		e = (*jvmti)->AddCapabilities(jvmti, &caps);
		if (e == JVMTI_ERROR_NONE)
			e = (*jvmti)->SetNativeMethodPrefix(jvmti, JP_BCI_NATIVE_PREFIX);
		if (e != JVMTI_ERROR_NONE) {
			bci.flags &= ~JP_BCI_NATIVES;
			bci.natives_refused = (int)e;
		}
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

/* bci_wrapped says whether a class has native methods renamed with the
 * prefix: its natives were wrapped when it loaded, and a retransformation
 * must wrap them again (it cannot remove methods). */
static int bci_wrapped(jvmtiEnv *jvmti, jclass c)
{
	jint n = 0;
	jmethodID *ms = NULL;
	int found = 0;
	if ((*jvmti)->GetClassMethods(jvmti, c, &n, &ms) != JVMTI_ERROR_NONE)
		return 0;
	size_t pl = strlen(JP_BCI_NATIVE_PREFIX);
	for (jint i = 0; i < n && !found; i++) {
		char *mn = NULL;
		if ((*jvmti)->GetMethodName(jvmti, ms[i], &mn, NULL, NULL) == JVMTI_ERROR_NONE && mn != NULL) {
			found = strncmp(mn, JP_BCI_NATIVE_PREFIX, pl) == 0;
			(*jvmti)->Deallocate(jvmti, (unsigned char *)mn);
		}
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
	return found;
}

void JNICALL jp_bci_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
				    const char *name, jobject pd, jint len, const unsigned char *data,
				    jint *new_len, unsigned char **new_data)
{
	(void)pd;
	if (!bci.ready || !bci.instrumenting || bci_busy || name == NULL || jni == NULL || jp.dead)
		return;
	bci_busy = 1;
	uint64_t t0 = jp_mono_ns();
	/* The hook runs in the middle of the method whose code loads the
	 * class: its work is the agent's, charged to no method. */
	jp_aside aside;
	jp_aside_begin(jp_thread_self(), &aside);
	/* A first load outside ROOTS may be in BCICACHE (answered here, in C),
	 * and may go there. */
	char entry[JP_BCI_CACHE_NAME], cp[JP_BCI_CACHE_NAME]; /* its names: plain, and with the class path's stamp */
	int cacheable = __atomic_load_n(&bci.cache_on, __ATOMIC_ACQUIRE) && redefined == NULL && !bci.selective;
	if (cacheable) {
		jp_bci_cache_name(name, data, len, entry);
		jp_bci_cache_name_cp(entry, cp);
		const char *const names[2] = { entry, cp };
		if (jp_bci_cache_hit(jvmti, name, names, len, new_len, new_data))
			goto done;
	}
	if ((*jni)->PushLocalFrame(jni, 8) != 0) {
		(*jni)->ExceptionClear(jni);
		jp_aside_end(jp_thread_self(), &aside);
		bci_busy = 0;
		return;
	}
	jstring jname = (*jni)->NewStringUTF(jni, name);
	jstring jentry = cacheable ? (*jni)->NewStringUTF(jni, entry) : NULL;
	jbyteArray in = (*jni)->NewByteArray(jni, len);
	jbyteArray out = NULL;
	if (jname != NULL && in != NULL && (jentry != NULL || !cacheable)) {
		(*jni)->SetByteArrayRegion(jni, in, 0, len, (const jbyte *)data);
		jint how = 0;
		if (redefined != NULL)
			how = JP_BCI_RETRANSFORMING | (bci_wrapped(jvmti, redefined) ? JP_BCI_WRAPPED : 0);
		out = (jbyteArray)(*jni)->CallStaticObjectMethod(jni, bci.transformer, bci.m_transform, loader, jname,
								 (jboolean)(loader == NULL), in, how, jentry);
	}
	if ((*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		out = NULL;
		__atomic_add_fetch(&bci.failed, 1, __ATOMIC_RELAXED);
		jp_notef("BCI: class %s left as it was: the transformer threw", name);
	}
	if (out != NULL && cacheable) {
		/* The class's BCICACHE entry, or the class if it cannot be kept
		 * (a class file: the path below). An entry that cannot be taken
		 * apart for want of memory leaves the class as it was. */
		jint n = (*jni)->GetArrayLength(jni, out);
		jbyte magic[4] = { 0 };
		if (n >= 4)
			(*jni)->GetByteArrayRegion(jni, out, 0, 4, magic);
		/* JPC2: an entry whose rewrite depends on the class path's jars,
		 * kept under the name that holds their stamp, as JPC1. */
		int cpdep = memcmp(magic, "JPC2", 4) == 0;
		if (cpdep || memcmp(magic, "JPC1", 4) == 0) {
			unsigned char *e = malloc((size_t)n);
			if (e != NULL) {
				(*jni)->GetByteArrayRegion(jni, out, 0, n, (jbyte *)e);
				if (cpdep)
					e[3] = '1';
				jp_bci_cache_add(jvmti, name, cpdep ? cp : entry, e, (size_t)n, len, new_len, new_data);
				free(e);
			} else {
				__atomic_add_fetch(&bci.failed, 1, __ATOMIC_RELAXED);
				jp_notef("BCI: class %s left as it was: no memory", name);
			}
			out = NULL;
		}
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
done:
	jp_aside_end(jp_thread_self(), &aside);
	__atomic_add_fetch(&bci.hook_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.hook_ns, jp_mono_ns() - t0, __ATOMIC_RELAXED);
	bci_busy = 0;
}

/* bci_retransform_list retransforms classes (local refs, deleted here);
 * classes that cannot be are named in log-msg and stay as they are. */
void bci_retransform_list(JNIEnv *jni, jclass *want, jint nw)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	/* In batches; a batch that fails is retried class by class, so that
	 * one class the VM refuses does not keep the others as they were. */
	const jint batch = 256;
	for (jint i = 0; i < nw; i += batch) {
		jint m = nw - i < batch ? nw - i : batch;
		uint64_t t0 = jp_mono_ns();
		jvmtiError e = (*jvmti)->RetransformClasses(jvmti, m, want + i);
		__atomic_add_fetch(&bci.retransforms, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&bci.retransform_ns, jp_mono_ns() - t0, __ATOMIC_RELAXED);
		if (e == JVMTI_ERROR_NONE)
			continue;
		for (jint j = i; j < i + m; j++) {
			e = (*jvmti)->RetransformClasses(jvmti, 1, want + j);
			if (e != JVMTI_ERROR_NONE) {
				/* Named as a Java programmer writes it (a.B, not
				 * La/B;), the error by its JVMTI name. */
				char *sig = NULL, *en = NULL;
				(*jvmti)->GetClassSignature(jvmti, want[j], &sig, NULL);
				(*jvmti)->GetErrorName(jvmti, e, &en);
				char *name = sig;
				size_t sl = sig ? strlen(sig) : 0;
				if (sl > 2 && sig[0] == 'L' && sig[sl - 1] == ';') {
					name = sig + 1;
					sig[sl - 1] = 0;
					for (char *c = name; *c; c++)
						if (*c == '/')
							*c = '.';
				}
				jp_notef("BCI: class %s left as it was: RetransformClasses: %s (JVMTI error %d)",
					  name ? name : "?", en ? en : "unknown error", (int)e);
				__atomic_add_fetch(&bci.failed, 1, __ATOMIC_RELAXED);
				if (sig)
					(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
				if (en)
					(*jvmti)->Deallocate(jvmti, (unsigned char *)en);
			}
		}
	}
	for (jint i = 0; i < nw; i++)
		(*jni)->DeleteLocalRef(jni, want[i]);
}

/* bci_retransform_named retransforms the loaded classes of these names
 * (selective instrumentation's queue), on the caller's thread. */
void bci_retransform_named(JNIEnv *jni, jobjectArray names)
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

int bci_class_wanted(JNIEnv *jni, jclass c, char **sig)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jobject loader = NULL;
	int keep = 0;
	*sig = NULL;
	if ((*jvmti)->GetClassSignature(jvmti, c, sig, NULL) != JVMTI_ERROR_NONE || *sig == NULL)
		return 0;
	size_t l = strlen(*sig);
	if (l > 2 && (*sig)[0] == 'L' && (*sig)[l - 1] == ';' && (*jvmti)->GetClassLoader(jvmti, c, &loader) == JVMTI_ERROR_NONE) {
		(*sig)[l - 1] = 0;
		jstring jname = (*jni)->NewStringUTF(jni, *sig + 1);
		if (jname != NULL)
			keep = (*jni)->CallStaticBooleanMethod(jni, bci.transformer, bci.m_wanted, jname, (jboolean)(loader == NULL));
		if ((*jni)->ExceptionCheck(jni)) {
			(*jni)->ExceptionClear(jni);
			keep = 0;
		}
		if (jname != NULL)
			(*jni)->DeleteLocalRef(jni, jname);
		if (loader != NULL)
			(*jni)->DeleteLocalRef(jni, loader);
	}
	return keep;
}

/* bci_loops_first: the classes of lifelong loops (bci_running_loops),
 * looked for before bci_lock is taken (the look waits) by a caller about
 * to retransform, attached only: a JVM started with the agent chose to
 * run with it (and a late start's profile misses nothing: the methods of
 * a running loop's class are seen, where an attach leaves them out; the
 * loops left running interpreted are named a second later, as an
 * attach's missed ones are); an attach promises to leave the program at
 * its old speed. */
jclass *bci_loops_first(JNIEnv *jni, jint *n, jthread **vts, jint *nvts)
{
	*n = 0;
	if (vts != NULL) {
		*vts = NULL;
		*nvts = 0;
	}
	return jpvm.live ? bci_running_loops(jpvm.jvmti, jni, n, vts, nvts) : NULL;
}

/* bci_retransform retransforms the loaded classes the transformer
 * wants, leaving alone those of running (bci_loops_first's, taken
 * over). Called with bci_lock held, on a thread attached to the VM. */
void bci_retransform(JNIEnv *jni, jclass *running, jint nrun)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	jint n = 0;
	jclass *classes = NULL;
	if ((*jvmti)->GetLoadedClasses(jvmti, &n, &classes) != JVMTI_ERROR_NONE) {
		jp_notef("BCI: GetLoadedClasses failed: loaded classes not instrumented");
		bci_running_free(jni, running, nrun);
		return;
	}
	jclass *want = calloc(n > 0 ? n : 1, sizeof(jclass));
	jint nw = 0;
	uint64_t kept = 0;
	for (jint i = 0; i < n; i++) {
		jboolean mod = JNI_FALSE;
		char *sig = NULL;
		int keep = (*jvmti)->IsModifiableClass(jvmti, classes[i], &mod) == JVMTI_ERROR_NONE && mod &&
			   bci_class_wanted(jni, classes[i], &sig);
		if (keep && bci_keep_running(jni, running, nrun, classes[i])) {
			keep = 0;
			/* At a detach, one the start left alone was never
			 * instrumented: not one left instrumented. */
			if (bci.instrumenting) {
				kept++;
				jp_notef("BCI: class %s left as it was: a method of it is running a loop (a retransformation "
					 "would leave that loop interpreted until it returns)", sig + 1);
			} else if (!bci_keep_running(jni, bci.start_kept, bci.nstart_kept, classes[i])) {
				kept++;
				bci_keep_class(jni, &bci.detach_kept, &bci.ndetach_kept, classes[i]);
				jp_notef("BCI: class %s keeps its instrumentation: a method of it is running a loop (restored, "
					 "that loop would run interpreted until it returns); its probes return at once",
					 sig + 1);
			}
		}
		if (sig != NULL)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
		if (keep && want != NULL)
			want[nw++] = classes[i];
		else
			(*jni)->DeleteLocalRef(jni, classes[i]);
	}
	/* The profile's header tells the classes its own start left alone;
	 * the detach, the ones it leaves instrumented. */
	if (bci.instrumenting) {
		__atomic_store_n(&bci.kept_running, kept, __ATOMIC_RELAXED);
		bci_running_free(jni, bci.start_kept, bci.nstart_kept);
		bci.start_kept = running;
		bci.nstart_kept = nrun;
	} else {
		__atomic_store_n(&bci.kept_detach, kept, __ATOMIC_RELAXED);
		bci_running_free(jni, running, nrun);
	}
	if (bci.instrumenting) /* a start instruments them again anyway */
		bci_detach_kept_free(jni);
	if (want != NULL)
		bci_retransform_list(jni, want, nw);
	free(want);
	(*jvmti)->Deallocate(jvmti, (unsigned char *)classes);
}

/* bci_detach stops rewriting classes and gives the instrumented ones
 * their own bytes back: the class file hook leaves a class alone while
 * not instrumenting, so a retransformation restores it. Methods running
 * meanwhile finish in their instrumented versions, whose probes return at
 * once with collection off. A later start instruments again. */
int bci_detach(char *err, int errlen)
{
	JNIEnv *jni = jp_env();
	if (jni == NULL) {
		snprintf(err, errlen, "BCI: the calling thread is not attached to the VM");
		return -1;
	}
	jint nrun = 0, nvts = 0;
	jthread *vts = NULL;
	jclass *running = bci.instrumenting && bci.ready ? bci_loops_first(jni, &nrun, &vts, &nvts) : NULL;
	pthread_mutex_lock(&bci_lock);
	if (bci.instrumenting && bci.ready && !jp.dead) {
		uint64_t failed = __atomic_load_n(&bci.failed, __ATOMIC_RELAXED);
		bci.instrumenting = 0;
		bci_retransform(jni, running, nrun);
		running = NULL;
		/* The restore looks at these, and the platform threads. */
		if (bci.ndetach_kept > 0) {
			jp_all_threads_free(jni, bci.detach_vthreads, bci.ndetach_vthreads);
			bci.detach_vthreads = vts;
			bci.ndetach_vthreads = nvts;
			vts = NULL;
			nvts = 0;
		}
		uint64_t left = __atomic_load_n(&bci.failed, __ATOMIC_RELAXED) - failed +
				__atomic_load_n(&bci.kept_detach, __ATOMIC_RELAXED);
		if (left > 0)
			jp_notef("BCI: detach: %llu classes keep their instrumentation (their probes return at once, "
				 "a JNI call each, while those methods run)",
				 (unsigned long long)left);
	}
	bci.instrumenting = 0;
	jp_jlm_events(0);
	pthread_mutex_unlock(&bci_lock);
	bci_running_free(jni, running, nrun);
	jp_all_threads_free(jni, vts, nvts);
	return 0;
}

/* jp_bci_roots changes the roots of selective instrumentation (""
 * or "all": every method) and re-instruments the loaded classes; a new
 * collection epoch starts if collecting. Collection pauses meanwhile:
 * until a thread's frames return, they run the code of the old roots,
 * whose sub probes call the agent only while some thread is inside an
 * old root (Probe.rooted), so that an entry could be counted and its
 * exit not, leaving the frame open and nesting later calls under it.
 * Returns 0, or -1 with err. */
int jp_bci_roots(const char *roots, char *err, int errlen)
{
	JNIEnv *jni = jp_env();
	if (!bci.ready || jni == NULL) {
		snprintf(err, errlen, "BCI is not set up (yet)");
		return -1;
	}
	jint nrun = 0;
	jclass *running = bci.instrumenting ? bci_loops_first(jni, &nrun, NULL, NULL) : NULL;
	pthread_mutex_lock(&bci_lock);
	/* Under ROOTS what is rewritten depends on the run: BCICACHE is
	 * neither read nor added to from now on (before the transformer
	 * turns selective, so no class is answered from it meanwhile). */
	__atomic_store_n(&bci.cache_on, 0, __ATOMIC_SEQ_CST);
	int rc = 0;
	int collecting = __atomic_load_n(&jp.collecting, __ATOMIC_ACQUIRE);
	if (collecting)
		jp_collect(0);
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
		__atomic_store_n(&bci.nroots, 0, __ATOMIC_RELAXED);
		bci_runs_reset();
		bci.selective = roots[0] != 0 && strcmp(roots, "all") != 0;
		jp.roots = bci.selective;
		if (bci.instrumenting) {
			bci_retransform(jni, running, nrun);
			running = NULL;
		}
	}
	if (collecting)
		jp_collect(1);
	pthread_mutex_unlock(&bci_lock);
	bci_running_free(jni, running, nrun);
	return rc;
}

/* jp_bci_instrumenting: whether classes are being rewritten (collection
 * started once). */
int jp_bci_instrumenting(void)
{
	return bci.instrumenting;
}

/* jp_bci_sizes fills out[5] with the transformer's map sizes
 * (Transformer.sizes: method names registered, classes known, method
 * names declared, methods reached, classes forgotten as their loaders
 * were collected); 0, or -1 if they cannot be read. Needs a thread
 * attached to the VM. */
int jp_bci_sizes(uint64_t *out)
{
	JNIEnv *jni = jp_env();
	if (!bci.ready || jni == NULL || bci.m_sizes == NULL)
		return -1;
	if ((*jni)->PushLocalFrame(jni, 4) != 0) {
		(*jni)->ExceptionClear(jni);
		return -1;
	}
	int rc = -1;
	jlongArray a = (jlongArray)(*jni)->CallStaticObjectMethod(jni, bci.transformer, bci.m_sizes);
	if (!(*jni)->ExceptionCheck(jni) && a != NULL && (*jni)->GetArrayLength(jni, a) == JP_BCI_NSIZES) {
		jlong v[JP_BCI_NSIZES];
		(*jni)->GetLongArrayRegion(jni, a, 0, JP_BCI_NSIZES, v);
		for (int i = 0; i < JP_BCI_NSIZES; i++)
			out[i] = (uint64_t)v[i];
		/* The classes BCICACHE answered never reached the transformer. */
		out[0] = jp_bci_names();
		out[5] += __atomic_load_n(&bci.cache_trivial, __ATOMIC_RELAXED);
		out[6] += __atomic_load_n(&bci.cache_wrapped, __ATOMIC_RELAXED);
		out[7] = __atomic_load_n(&bci.cache_hits, __ATOMIC_RELAXED);
		out[8] = __atomic_load_n(&bci.cache_misses, __ATOMIC_RELAXED);
		out[9] = __atomic_load_n(&bci.cache_added, __ATOMIC_RELAXED);
		rc = 0;
	}
	(*jni)->ExceptionClear(jni);
	(*jni)->PopLocalFrame(jni, NULL);
	return rc;
}

int jp_bci_natives_refused(void)
{
	return bci.natives_refused;
}
