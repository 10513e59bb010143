/*
 * bci.c: the bytecode-instrumentation event source (option BCI).
 *
 * Classes are rewritten as they load (ClassFileLoadHook) and, when
 * collection starts, those already loaded are retransformed: the Java
 * transformer (java/agent, built into jprof-bci.jar next to libjprof.so
 * and put on the boot class path with ASM) injects calls to the static
 * natives of libjprof.bci.Probe, registered here (the rewriting itself
 * is bci_classes.c). No JVMTI method event is ever enabled, so the JIT
 * compiles and inlines instrumented code.
 *
 * Keys: the engine keys contexts by the source's key, whose low bit must
 * be free and which must not be 0 (an empty map slot): a method with
 * registry handle h has key (h+1)<<1.
 *
 * Fast path: the injected call is a JNI static native with an int
 * constant. Once the caller is compiled this is a direct call into the
 * JNI wrapper (thread-state transitions, no handles, no object touched).
 * Measured with C2-compiled callers (a loop calling an empty native
 * before and after a trivial method, against the same loop appending the
 * id to a ThreadLocal int buffer instead), the empty JNI call and the Java
 * append cost about the same per event, within the machine's noise. The
 * append leaves all of the engine's work still to do, later, on another
 * thread or in Java, and loses the Early/Late PTT reads around each event
 * (the calibration's premise); the engine's event itself (child lookup,
 * two PTT reads) costs more than the call. So the native call it is:
 * jp_event runs exactly as for the JVMTI source.
 *
 * On a real program the call sites cost JIT time too: each probe is a
 * call in compiled code, across which HotSpot keeps no value in a
 * register, so C2 works harder on every instrumented method it inlines.
 * Checked on javac (BCI CALLTREE, the bench's workload) by pointing the
 * probes at a Java method that appends the id to a ThreadLocal int array
 * instead, which C2 inlines: C2's CPU time fell by about a third. The
 * run itself fell by more (3.2-3.5 s to 2.3-2.5 s, 1.3 s without the
 * agent), but the append skips the engine's work for every event and
 * the report; doing that work later from the buffered ids would take
 * back most of the difference, and the events would have no PTT reads
 * of their own. Tried since (javac, BCI CALLTREE, interleaved): the same
 * ThreadLocal buffer drained through one JNI call per 4096 events into
 * jp_event ran no faster than the native probes (4.7-4.8 s against
 * 4.3-5.1 s), and C2's time fell by a tenth, not a third. Nor did
 * leaving out the catch-all handlers change the run; the class rewriting
 * alone (every probe left out) was a third of BCI's cost. Nor did one
 * exit probe per method (every return a jump to a shared block holding
 * the probe and the return): javac's compiled code shrank by about 5%,
 * C2's time did not move (3.4-3.9 s either way, 3 interleaved pairs).
 * Keeping C2 from inlining instrumented methods (a compiler directive
 * naming their packages, replaced as classes of new packages loaded)
 * halved C2's time on javac and H2 and cut the process's CPU time by a
 * fifth, while the wall time, which the program's own thread sets on two
 * cores, hardly moved: javac -5% in 10 interleaved rounds (+5% in 4
 * others), H2 unchanged, groovy +9% (its calls no longer inlined, the
 * trivial methods of those packages with them: a directive cannot name
 * methods cheaply). Not kept.
 *
 * On JDK 22 and later the probes can be FFM critical downcalls instead
 * (FFMPROBES, bci_ffm.c): no JNI transitions, but a method handle call to
 * compile in every instrumented method. Tried on JDK 17, and removed:
 * its critical natives (CriticalJNINatives set through vmflags.c's
 * jp_vm_set_bool_flag, the probes a Java method calling a JavaCritical_
 * entry, JNI for a thread's first event) were used by compiled code, as
 * perf showed, and ran no faster than the JNI probes (BenchWorkload
 * 13.1-13.8 ms against 12.7-12.9, groovy 7.6-8.3 s against 7.3-7.7 s,
 * interleaved): the transitions are not where an event's time goes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bci.h"

struct jp_bci_state bci;
__thread int bci_busy;
pthread_mutex_t bci_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t bci_resolve(uintptr_t key)
{
	return (uint32_t)((key >> 1) - 1);
}

const jp_source jp_bci = { "bci", bci_resolve };


/* With ROOTS, events of other methods count only inside a root: the
 * thread's depth of root frames is kept in its record (src_frames, reset
 * with each collection epoch), so that a virtual thread's count moves
 * with it between carriers. *tp is the thread's record, made here at a
 * root's entry if it has none (a thread outside every root needs none). */
static __attribute__((noinline)) int bci_inside_roots(jp_thread **tp, jint id, int tr)
{
	jp_thread *t = *tp;
	int root = bci_is_root(id);
	if (t == NULL) {
		if (!root || tr != JP_TR_ENTRY || (t = jp_vm_thread(jpvm.jvmti, NULL)) == NULL)
			return 0;
		*tp = t;
	}
	uint32_t ep = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (t->src_epoch != ep) {
		t->src_epoch = ep;
		t->src_frames = 0;
	}
	if (root) {
		if (tr == JP_TR_ENTRY)
			t->src_frames++;
		else if (t->src_frames > 0)
			t->src_frames--;
		return 1;
	}
	return t->src_frames > 0;
}

/* Selective instrumentation grows as it runs: a method that runs inside
 * a root for the first time has the transformer instrument, there and
 * then on this thread, the classes its calls may reach (Transformer.expand),
 * so that its calls are seen from the first. Once per method of the
 * subgraph (bit per handle). */
static inline int bci_has_run(jint id)
{
	uint32_t h = (uint32_t)id;
	return bci.run_bits == NULL || h >= bci.root_nbits ||
	       (__atomic_load_n(&bci.run_bits[h >> 3], __ATOMIC_RELAXED) >> (h & 7) & 1);
}

/* bci_first_run claims the first run of a method: 1 for the one thread
 * that is to expand it. */
static inline int bci_first_run(jint id)
{
	uint32_t h = (uint32_t)id;
	uint8_t bit = (uint8_t)(1u << (h & 7));
	return !(__atomic_fetch_or(&bci.run_bits[h >> 3], bit, __ATOMIC_RELAXED) & bit);
}

/* bci_expand has the transformer follow a method's calls (id), or
 * only retransform the classes pending (id -1). */
static __attribute__((noinline)) void bci_expand(JNIEnv *env, jint id)
{
	if (env == NULL || bci.m_expand == NULL)
		return;
	/* Not bci_busy: the retransformation it makes runs the class file
	 * hook on this thread, which must rewrite. */
	uint64_t t0 = jp_mono_ns();
	(*env)->CallStaticVoidMethod(env, bci.transformer, bci.m_expand, id);
	if ((*env)->ExceptionCheck(env))
		(*env)->ExceptionClear(env);
	__atomic_add_fetch(&bci.expands, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.expand_ns, jp_mono_ns() - t0, __ATOMIC_RELAXED);
}

/* bci_runs_reset forgets which methods ran (the roots changed). */
void bci_runs_reset(void)
{
	if (bci.run_bits != NULL)
		memset(bci.run_bits, 0, bci.root_nbits / 8 + 1);
}

__thread uint32_t bci_idle __attribute__((tls_model("initial-exec")));

/* bci_frame_key is the key of a frame whose running version the
 * transformer instrumented, else 0: a method whose class was
 * retransformed since it was entered runs its old, obsolete version,
 * without probes; a trivial method, java.base's and the probes' own have
 * no handle. */
static uintptr_t bci_frame_key(jvmtiEnv *jvmti, jmethodID mid)
{
	jboolean obsolete = JNI_FALSE;
	if ((*jvmti)->IsMethodObsolete(jvmti, mid, &obsolete) != JVMTI_ERROR_NONE || obsolete)
		return 0;
	uint32_t h = jp_mid_find(mid);
	if (h == UINT32_MAX) {
		char *name = jp_mid_name_of(mid);
		h = name != NULL ? jp_bci_handle(name) : UINT32_MAX;
		free(name);
		if (h == UINT32_MAX)
			return 0;
		jp_mid_insert(mid, h);
	}
	return bci_key((jint)h);
}

/* bci_seed is a thread's first event after collection restarted over
 * instrumented code (bci.seed): the frames it entered before, while
 * collection was off, still run their probes, and their exits would come
 * without entries (empty O: rows off the thread's root, their callees
 * hanging there too). Their frames are read from the thread's stack and
 * seeded (as O:, one call each), as method events do. Once per thread
 * per epoch. */
static __attribute__((noinline)) jp_thread *bci_seed(jp_thread *t, jint id, int tr)
{
	return jp_vm_seed(jpvm.jvmti, t, bci_frame_key, tr == JP_TR_ENTRY ? bci_key(id) : 0);
}

static inline void bci_event(JNIEnv *env, jint id, int tr)
{
	id = bci_id(id);
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED)) {
		/* Counted coarsely, per thread: no shared line written per call. */
		if (__builtin_expect(++bci_idle == JP_BCI_IDLE_STEP, 0)) {
			bci_idle = 0;
			__atomic_add_fetch(&bci.idle_calls, JP_BCI_IDLE_STEP, __ATOMIC_RELAXED);
		}
		return;
	}
	int expand = 0;
	jp_thread *t = jp_thread_self();
	if (__builtin_expect(bci.seed, 0) && !bci.selective && (t == NULL || jp_thread_stale(t)) &&
	    (t = bci_seed(t, id, tr)) == NULL)
		return;
	if (__builtin_expect(bci.selective, 0)) {
		if (!bci_inside_roots(&t, id, tr))
			return;
		if (tr == JP_TR_ENTRY) {
			if (!bci_has_run(id) && bci_first_run(id))
				expand = 1;
			else if (__builtin_expect(bci.pending, 0) && __atomic_exchange_n(&bci.pending, 0, __ATOMIC_RELAXED))
				expand = 2;
		}
	}
	if (__builtin_expect(t == NULL, 0) && (t = jp_vm_thread(jpvm.jvmti, NULL)) == NULL)
		return;
	jp_event(t, bci_key(id), tr);
	if (__builtin_expect(expand, 0)) {
		bci_expand(env, expand == 1 ? id : -1);
		jp_event_skip(t); /* the agent's work, not the method's */
	}
}

/* bci_rooted counts a root frame in (+1) or out (-1) and keeps
 * Probe.rooted equal to (count > 0) before a root's body runs: a root
 * whose thread saw it 0 would drop its subgraph's entries (the sub
 * probes skip the agent) and count their exits as unmatched.
 *
 * Writers hold a lock and publish the field's value in rooted_pub, which
 * they clear first: clear, read the count, write the field, publish.
 * A thread entering a root while others are inside (count > 1) only
 * checks rooted_pub after its increment. If it sees 1, the field holds 1
 * and stays so: a writer that would write 0 read the count after
 * clearing rooted_pub, so after this increment (all sequentially
 * consistent), and saw it above 0. Otherwise it writes under the lock,
 * as the first thread in and the last out do. (Checking the count alone,
 * a second thread could run its root while the first was still about to
 * write 1: several threads in roots at once lost calls.) */
void bci_rooted(JNIEnv *env, int d)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static int rooted_pub;
	int64_t n = __atomic_add_fetch(&bci.rooted, d, __ATOMIC_SEQ_CST);
	if (bci.f_rooted == NULL)
		return;
	if (d > 0 ? n > 1 && __atomic_load_n(&rooted_pub, __ATOMIC_SEQ_CST) : n != 0)
		return;
	pthread_mutex_lock(&mu);
	__atomic_store_n(&rooted_pub, 0, __ATOMIC_SEQ_CST);
	int v = __atomic_load_n(&bci.rooted, __ATOMIC_SEQ_CST) > 0;
	(*env)->SetStaticIntField(env, bci.probe, bci.f_rooted, v);
	__atomic_store_n(&rooted_pub, v, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&mu);
}

static void JNICALL bci_root_enter(JNIEnv *env, jclass c, jint id)
{
	(void)c;
	bci_rooted(env, 1);
	bci_event(env, id, JP_TR_ENTRY);
}

static void JNICALL bci_root_exit(JNIEnv *env, jclass c, jint id)
{
	(void)c;
	bci_event(env, id, JP_TR_EXIT);
	bci_rooted(env, -1);
}

static void JNICALL bci_root_unwind(JNIEnv *env, jclass c, jint id, jthrowable ex)
{
	(void)c;
	bci_unwinds_lost(env, ex);
	bci_dead_frames(env, id);
	bci_event(env, id, JP_TR_EXCEPTION);
	bci_rooted(env, -1);
}

static void JNICALL bci_enter(JNIEnv *env, jclass c, jint id)
{
	(void)c;
	bci_event(env, id, JP_TR_ENTRY);
}

static void JNICALL bci_exit(JNIEnv *env, jclass c, jint id)
{
	(void)c;
	bci_event(env, id, JP_TR_EXIT);
}

static void JNICALL bci_unwind(JNIEnv *env, jclass c, jint id, jthrowable ex)
{
	(void)c;
	bci_unwinds_lost(env, ex);
	bci_dead_frames(env, id);
	bci_event(env, id, JP_TR_EXCEPTION);
}

static jint JNICALL bci_register(JNIEnv *env, jclass c, jstring name, jint type)
{
	(void)c;
	const char *s = (*env)->GetStringUTFChars(env, name, NULL);
	if (s == NULL)
		return (jint)JP_METHOD_OVERFLOW(type);
	uint32_t h = jp_bci_register_name(s, type);
	(*env)->ReleaseStringUTFChars(env, name, s);
	return (jint)h;
}

static void JNICALL bci_note(JNIEnv *env, jclass c, jstring msg)
{
	(void)c;
	const char *s = (*env)->GetStringUTFChars(env, msg, NULL);
	if (s == NULL)
		return;
	jp_notef("%s", s);
	(*env)->ReleaseStringUTFChars(env, msg, s);
}

static void JNICALL bci_mark_root(JNIEnv *env, jclass c, jint id)
{
	(void)env;
	(void)c;
	uint32_t h = (uint32_t)id;
	uint8_t bit = (uint8_t)(1u << (h & 7));
	if (bci.root_bits != NULL && h < bci.root_nbits &&
	    !(__atomic_fetch_or(&bci.root_bits[h >> 3], bit, __ATOMIC_RELAXED) & bit))
		__atomic_add_fetch(&bci.nroots, 1, __ATOMIC_RELAXED);
}

static void JNICALL bci_pending(JNIEnv *env, jclass c)
{
	(void)env;
	(void)c;
	__atomic_store_n(&bci.pending, 1, __ATOMIC_RELAXED);
}

static void JNICALL bci_retransform_natives(JNIEnv *env, jclass c, jobjectArray names)
{
	(void)c;
	bci_retransform_named(env, names);
}

/* bci_no_asserts says whether no class of this JVM can have its
 * assertions on: no -ea in any form nor a -da naming a class or package
 * (the directives the class loaders read, through ClassLoader's private
 * retrieveDirectives; a plain -da records none, and leaves them off) and
 * system assertions off (-esa: what a boot class desires). A program may
 * still turn them on for classes it loads later (ClassLoader's
 * setDefaultAssertionStatus): README, ALLMETHODS. */
static int bci_no_asserts(JNIEnv *jni)
{
	int off = 0;
	if ((*jni)->PushLocalFrame(jni, 16) != 0) {
		(*jni)->ExceptionClear(jni);
		return 0;
	}
	jclass cl = (*jni)->FindClass(jni, "java/lang/ClassLoader");
	jclass dc = cl ? (*jni)->FindClass(jni, "java/lang/AssertionStatusDirectives") : NULL;
	jclass cc = dc ? (*jni)->FindClass(jni, "java/lang/Class") : NULL;
	jclass oc = cc ? (*jni)->FindClass(jni, "java/lang/Object") : NULL;
	jmethodID rd = oc ? (*jni)->GetStaticMethodID(jni, cl, "retrieveDirectives", "()Ljava/lang/AssertionStatusDirectives;") : NULL;
	jmethodID das = rd ? (*jni)->GetMethodID(jni, cc, "desiredAssertionStatus", "()Z") : NULL;
	jfieldID fc = das ? (*jni)->GetFieldID(jni, dc, "classes", "[Ljava/lang/String;") : NULL;
	jfieldID fp = fc ? (*jni)->GetFieldID(jni, dc, "packages", "[Ljava/lang/String;") : NULL;
	jfieldID fd = fp ? (*jni)->GetFieldID(jni, dc, "deflt", "Z") : NULL;
	jobject d = fd ? (*jni)->CallStaticObjectMethod(jni, cl, rd) : NULL;
	if (d != NULL && !(*jni)->ExceptionCheck(jni)) {
		jobjectArray c = (*jni)->GetObjectField(jni, d, fc);
		jobjectArray p = (*jni)->GetObjectField(jni, d, fp);
		off = c != NULL && p != NULL && (*jni)->GetArrayLength(jni, c) == 0 && (*jni)->GetArrayLength(jni, p) == 0 &&
		      !(*jni)->GetBooleanField(jni, d, fd) && !(*jni)->CallBooleanMethod(jni, oc, das) && !(*jni)->ExceptionCheck(jni);
	}
	(*jni)->ExceptionClear(jni);
	(*jni)->PopLocalFrame(jni, NULL);
	return off;
}

int jp_bci_no_asserts(void)
{
	return (bci.flags & JP_BCI_NO_ASSERTS) != 0;
}

/* jp_bci_vm_init sets the Java side up (VM init, on the main thread) and,
 * if collection started at load, instruments what loaded before. */
static void bci_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)thread;
	if (bci.cache_fd >= 0 && jp_bci_foreign())
		bci.flags |= JP_BCI_FOREIGN;
	if (bci_no_asserts(jni))
		bci.flags |= JP_BCI_NO_ASSERTS;
	static const JNINativeMethod natives[] = {
		{ "enter", "(I)V", (void *)bci_enter },
		{ "exit", "(I)V", (void *)bci_exit },
		{ "unwind", "(ILjava/lang/Throwable;)V", (void *)bci_unwind },
		{ "caught", "(I)V", (void *)bci_caught },
		{ "rootEnter", "(I)V", (void *)bci_root_enter },
		{ "rootExit", "(I)V", (void *)bci_root_exit },
		{ "rootUnwind", "(ILjava/lang/Throwable;)V", (void *)bci_root_unwind },
		{ "register", "(Ljava/lang/String;I)I", (void *)bci_register },
		{ "note", "(Ljava/lang/String;)V", (void *)bci_note },
		{ "markRoot", "(I)V", (void *)bci_mark_root },
		{ "pending", "()V", (void *)bci_pending },
		{ "retransform", "([Ljava/lang/String;)V", (void *)bci_retransform_natives },
		{ "downcalls", "()[J", (void *)bci_downcalls },
	};
	bci.root_nbits = jp.max_methods;
	bci.root_bits = calloc(jp.max_methods / 8 + 1, 1);
	bci.run_bits = calloc(jp.max_methods / 8 + 1, 1);
	bci_busy = 1;
	jclass p = (*jni)->FindClass(jni, "libjprof/bci/Probe");
	jclass t = p ? (*jni)->FindClass(jni, "libjprof/bci/Transformer") : NULL;
	if (p == NULL || t == NULL ||
	    (*jni)->RegisterNatives(jni, p, natives, sizeof natives / sizeof natives[0]) != 0) {
		(*jni)->ExceptionDescribe(jni);
		(*jni)->ExceptionClear(jni);
		bci_busy = 0;
		jp_notef("say: BCI: the agent's Java classes could not be loaded: nothing is instrumented");
		return;
	}
	if (jp_jlm_vm_init(jni, p) != 0) {
		/* The transformer then adds no monitor probe (they would throw). */
		bci.flags &= ~JP_BCI_JLM;
		jp_notef("JLM: the agent's lock probes could not be registered (jprof-bci.jar from another build?): monitors are not counted");
	}
	bci_ffm_setup(jni);
	bci.transformer = (*jni)->NewGlobalRef(jni, t);
	bci.probe = (*jni)->NewGlobalRef(jni, p);
	bci.f_rooted = bci.probe ? (*jni)->GetStaticFieldID(jni, p, "rooted", "I") : NULL;
	if (bci.f_rooted == NULL) { /* a jar from another build */
		(*jni)->ExceptionClear(jni);
		jp_notef("BCI: Probe.rooted not found (jprof-bci.jar does not match libjprof.so): with ROOTS, only the roots are seen");
	}
	bci.f_lost = bci.probe ? (*jni)->GetStaticFieldID(jni, p, "unwindsLost", "I") : NULL;
	bci.f_lost_by = bci.f_lost ? (*jni)->GetStaticFieldID(jni, p, "unwindsLostBy", "Ljava/lang/Throwable;") : NULL;
	if (bci.f_lost_by == NULL) {
		bci.f_lost = NULL;
		(*jni)->ExceptionClear(jni);
	}
	bci.m_transform = (*jni)->GetStaticMethodID(jni, t, "transform", "(Ljava/lang/ClassLoader;Ljava/lang/String;Z[BILjava/lang/String;)[B");
	bci.m_sizes = (*jni)->GetStaticMethodID(jni, t, "sizes", "()[J");
	(*jni)->ExceptionClear(jni);
	bci.m_wanted = (*jni)->GetStaticMethodID(jni, t, "wanted", "(Ljava/lang/String;Z)Z");
	bci.m_init = (*jni)->GetStaticMethodID(jni, t, "init", "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;I)V");
	bci.m_roots = (*jni)->GetStaticMethodID(jni, t, "setRoots", "(Ljava/lang/String;)V");
	bci.m_expand = (*jni)->GetStaticMethodID(jni, t, "expand", "(I)V");
	if (bci.m_transform && bci.m_wanted && bci.m_init && bci.m_roots && bci.m_expand) {
		jstring inc = (*jni)->NewStringUTF(jni, bci.include);
		jstring exc = (*jni)->NewStringUTF(jni, bci.exclude);
		jstring roots = (*jni)->NewStringUTF(jni, bci.roots);
		(*jni)->CallStaticVoidMethod(jni, t, bci.m_init, inc, exc, roots, (jint)bci.flags);
		bci.selective = bci.roots[0] != 0 && strcmp(bci.roots, "all") != 0;
		jp.roots = bci.selective;
	}
	if ((*jni)->ExceptionCheck(jni) || !bci.m_transform || !bci.m_wanted || !bci.m_init || !bci.m_roots || !bci.m_expand) {
		(*jni)->ExceptionDescribe(jni);
		(*jni)->ExceptionClear(jni);
		bci_busy = 0;
		jp_notef("BCI: the transformer could not be set up: nothing is instrumented");
		return;
	}
	/* The flags are final now (FFM set up or not). */
	if (bci.cache_fd >= 0 && !bci.selective)
		jp_bci_cache_setup(jvmti);
	bci_busy = 0;
	jint nrun = 0;
	jclass *running = bci.instrumenting ? bci_loops_first(jni, &nrun, NULL, NULL) : NULL;
	pthread_mutex_lock(&bci_lock);
	bci.ready = 1;
	if (bci.instrumenting) {
		jp_jlm_events(1);
		bci_retransform(jni, running, nrun);
		running = NULL;
	}
	pthread_mutex_unlock(&bci_lock);
	bci_running_free(jni, running, nrun);
	/* After the retransformation, and busy: the management classes it
	 * loads are the agent's business, not rewritten as they load, nor
	 * retransformed here (a VM-wide stop for a dozen classes). */
	bci_busy = 1;
	bci_keep_out_of_c2(jni);
	bci_busy = 0;
}

/* jp_bci_set turns collection on (instrumenting first: classes loaded
 * later as they load, those loaded before by retransformation, and only
 * then collecting) or off.
 * Instrumented code stays: off, its calls return at once. -1 once the
 * VM is dying. */
int jp_bci_set(int on)
{
	/* The loops are looked for first, outside the lock (the look
	 * waits), and before collection starts, so that a profile's time
	 * is all instrumented. */
	JNIEnv *jni = on && !bci.instrumenting && bci.ready ? jp_env() : NULL;
	jint nrun = 0;
	jclass *running = jni != NULL ? bci_loops_first(jni, &nrun, NULL, NULL) : NULL;
	pthread_mutex_lock(&bci_lock);
	int rc = 0;
	if (on && jp.dead) {
		rc = -1;
	} else if (on) {
		/* Instrumented code may be on the threads' stacks already, its
		 * frames entered while collection was off: code instrumented
		 * all along, kept instrumented at a detach (a loop ran in it),
		 * or entered while the retransformation below went on. Each
		 * thread's first event seeds its stack with them (bci_seed);
		 * frames of the code as it was before are obsolete, and left
		 * out (bci_frame_key). */
		bci.seed = 1;
		bci.started = 1;
		if (!bci.instrumenting) {
			bci.instrumenting = 1;
			if (jni == NULL && bci.ready)
				jni = jp_env();
			if (jni != NULL) {
				jp_jlm_events(1);
				bci_retransform(jni, running, nrun);
				running = NULL;
			}
		}
		/* Collection starts once every class is rewritten: the
		 * retransformation goes in batches, and a call chain collected
		 * between two would skip the methods of the later ones
		 * (TestAttachCollectsAfterRewrite). The frames entered meanwhile
		 * are seeded (above). */
		jp_collect(1);
	} else {
		jp_collect(0);
	}
	pthread_mutex_unlock(&bci_lock);
	if (running != NULL)
		bci_running_free(jni, running, nrun);
	return rc;
}

static void bci_die(void)
{
	if (bci.cache_fd >= 0)
		jp_bci_cache_flush(1);
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
	out[4] = __atomic_load_n(&bci.retransforms, __ATOMIC_RELAXED);
	out[5] = __atomic_load_n(&bci.retransform_ns, __ATOMIC_RELAXED);
	out[6] = __atomic_load_n(&bci.expands, __ATOMIC_RELAXED);
	out[7] = __atomic_load_n(&bci.expand_ns, __ATOMIC_RELAXED);
	out[8] = __atomic_load_n(&bci.nroots, __ATOMIC_RELAXED);
	out[9] = __atomic_load_n(&bci.idle_calls, __ATOMIC_RELAXED);
	out[10] = __atomic_load_n(&bci.kept_running, __ATOMIC_RELAXED);
	out[11] = __atomic_load_n(&bci.kept_detach, __ATOMIC_RELAXED);
}

static int bci_setup(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
		     int errlen)
{
	(void)jvmti;
	(void)live;
	(void)err;
	(void)errlen;
	cb->ClassFileLoadHook = jp_bci_class_file_load;
	jp_jlm_setup(caps, cb);
	return 0;
}

const jp_source_ops jp_bci_ops = {
	.engine = &jp_bci,
	.setup = bci_setup,
	.enable = bci_enable,
	.vm_init = bci_vm_init,
	.set = jp_bci_set,
	.detach = bci_detach,
	.thread_start = jp_thread_start_record,
	.die = bci_die,
};
