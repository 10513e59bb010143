/*
 * bci_ffm.c: BCI's probes as FFM critical downcalls (option FFMPROBES,
 * JDK 22 and later): the C entry points, and making Probe's method
 * handles for them at VM init. Apart from bci.c because they are another
 * way into the same events, with rules of their own (a thread "in Java"
 * must not block or call the VM).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "bci.h"

/*
 * FFM critical downcalls (FFMPROBES, JDK 22 and later): the probes of
 * every method call these through java.lang.foreign instead of the JNI
 * natives. A critical downcall passes no JNIEnv and makes no thread-state
 * transition, which are most of a JNI call's cost, and the JIT compiles
 * it as a plain C call. Not the default: a method handle call in every
 * instrumented method is more work for the JIT (C1 most, which inlines
 * it through its lambda forms everywhere until the directive of
 * bci_keep_out_of_c2 stops it), and on javac and groovy that took back
 * the ten percent or so an event costs less once compiled (BENCHMARKS.md).
 * (Measured before the same directive stopped keeping Probe's fenter and
 * the others out of C2 too, which made C2's code call them. Measured
 * again since, on JDK 25: no consistent gain. H2 ran 14% faster with them
 * in 3 interleaved rounds, but slower in the bench's two runs, 3.6-3.8x
 * the no-agent time against 3.3x; groovy and javac no faster.)
 * The thread stays "in Java" while it runs, so the VM's safepoints wait
 * for it: these take no lock, never block, never call the VM, allocate
 * nothing and do nothing long. What
 * might (a thread's first event, which makes its record through JVMTI;
 * one that must grow a hash map, the shadow stack or an arena: see
 * jp_event_grows; ROOTS, whose first runs retransform; log-gen, whose
 * writer can make it wait) returns 1 without recording anything, and
 * Probe.fenter and the others then make the same event through JNI.
 */
static inline jint bci_fast(jint id, int tr)
{
	id = bci_id(id);
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED)) {
		if (__builtin_expect(++bci_idle == JP_BCI_IDLE_STEP, 0)) {
			bci_idle = 0;
			__atomic_add_fetch(&bci.idle_calls, JP_BCI_IDLE_STEP, __ATOMIC_RELAXED);
		}
		return 0;
	}
	jp_thread *t = jp_thread_self();
	if (__builtin_expect(t == NULL || bci.selective || jp.loggen || jp_event_grows(t) ||
			     (bci.seed && jp_thread_stale(t)), 0))
		return 1; /* a restart's first event seeds the stack through JVMTI (bci_seed) */
	jp_event(t, bci_key(id), tr);
	return 0;
}

static jint bci_fast_enter(jint id)
{
	return bci_fast(id, JP_TR_ENTRY);
}

static jint bci_fast_exit(jint id)
{
	return bci_fast(id, JP_TR_EXIT);
}

static jint bci_fast_unwind(jint id)
{
	return bci_fast(id, JP_TR_EXCEPTION);
}

/* Probe.downcalls: the entry points for Probe's FFM handles, or null for
 * JNI probes (no FFMPROBES). */
jlongArray JNICALL bci_downcalls(JNIEnv *env, jclass c)
{
	(void)c;
	if (!(bci.flags & JP_BCI_FFM))
		return NULL;
	jlong a[3] = { (jlong)(uintptr_t)bci_fast_enter, (jlong)(uintptr_t)bci_fast_exit,
		       (jlong)(uintptr_t)bci_fast_unwind };
	jlongArray r = (*env)->NewLongArray(env, 3);
	if (r != NULL)
		(*env)->SetLongArrayRegion(env, r, 0, 3, a);
	return r;
}

/* What the probes are, for the header: set at VM init. */
static char bci_probes[256] = "JNI natives";

const char *jp_bci_probes(void)
{
	return bci_probes;
}

/*
 * bci_ffm_setup initializes Probe.Fast, whose static initializer makes
 * the handles of the FFM downcalls (Downcall.java), and keeps JP_BCI_FFM
 * only if it did. Not with ROOTS or log-gen, whose events always take
 * the JNI path (bci_fast): a downcall would only add to them.
 *
 * Linker.downcallHandle is a restricted method: the JDK warns on stderr
 * the first time code in a module without native access calls it, and
 * the agent's classes, on the boot class path, are in an unnamed module.
 * The JDK keeps one native-access flag for every unnamed module, the one
 * --enable-native-access=ALL-UNNAMED sets; FFMPROBES sets it, for the
 * rest of the run (it is a @Stable field: compiled code may keep a value
 * once set, so it is not put back), and the header says so.
 */
/* ffm_not_used says, where a user looks (stderr) and in log-msg, that
 * FFMPROBES was asked for and the probes stay JNI calls (bci_probes
 * says why; the log-rt header says it too). */
static void ffm_not_used(void)
{
	jp_notef("say: warning: FFMPROBES not used: the probes are %s", bci_probes);
}

void bci_ffm_setup(JNIEnv *jni)
{
	if (!(bci.flags & JP_BCI_FFM)) {
		snprintf(bci_probes, sizeof bci_probes, "JNI natives (FFMPROBES: FFM critical downcalls on JDK 22 and later)");
		return;
	}
	if ((bci.roots[0] != 0 && strcmp(bci.roots, "all") != 0) || jp.loggen) {
		bci.flags &= ~JP_BCI_FFM;
		snprintf(bci_probes, sizeof bci_probes, "JNI natives (FFMPROBES is not used with %s, whose events need JNI)",
			 jp.loggen ? "log-gen" : "ROOTS");
		ffm_not_used();
		return;
	}
	jclass m = (*jni)->FindClass(jni, "java/lang/Module");
	jfieldID all = m ? (*jni)->GetStaticFieldID(jni, m, "ALL_UNNAMED_MODULE", "Ljava/lang/Module;") : NULL;
	jfieldID en = all ? (*jni)->GetFieldID(jni, m, "enableNativeAccess", "Z") : NULL;
	jobject unnamed = en ? (*jni)->GetStaticObjectField(jni, m, all) : NULL;
	(*jni)->ExceptionClear(jni);
	/* Critical downcalls came with JDK 22's final FFM API. */
	jclass opt = (*jni)->FindClass(jni, "java/lang/foreign/Linker$Option");
	jmethodID crit = opt ? (*jni)->GetStaticMethodID(jni, opt, "critical", "(Z)Ljava/lang/foreign/Linker$Option;") : NULL;
	(*jni)->ExceptionClear(jni);
	if (unnamed == NULL || crit == NULL) {
		bci.flags &= ~JP_BCI_FFM; /* Probe.downcalls says no */
		snprintf(bci_probes, sizeof bci_probes, "JNI natives (this JDK has no FFM critical downcalls, which JDK 22 and later have)");
		ffm_not_used();
		return;
	}
	int was = (*jni)->GetBooleanField(jni, unnamed, en);
	(*jni)->SetBooleanField(jni, unnamed, en, JNI_TRUE);
	/* Initializes Probe.Fast (FindClass does), which makes the handles. */
	jclass fast = (*jni)->FindClass(jni, "libjprof/bci/Probe$Fast");
	jfieldID f = fast ? (*jni)->GetStaticFieldID(jni, fast, "ENTER", "Ljava/lang/invoke/MethodHandle;") : NULL;
	jobject h = f ? (*jni)->GetStaticObjectField(jni, fast, f) : NULL;
	(*jni)->ExceptionClear(jni);
	if (h != NULL) {
		snprintf(bci_probes, sizeof bci_probes, "FFM critical downcalls (FFMPROBES)%s",
			 was ? "" : "; native access is on for every unnamed module from then on, as with --enable-native-access=ALL-UNNAMED");
		jp_notef("info: BCI: probes: %s", bci_probes);
		return;
	}
	bci.flags &= ~JP_BCI_FFM;
	jclass d = (*jni)->FindClass(jni, "libjprof/bci/Downcall");
	jfieldID wf = d ? (*jni)->GetStaticFieldID(jni, d, "why", "Ljava/lang/String;") : NULL;
	jstring why = wf ? (*jni)->GetStaticObjectField(jni, d, wf) : NULL;
	(*jni)->ExceptionClear(jni);
	const char *w = why ? (*jni)->GetStringUTFChars(jni, why, NULL) : NULL;
	snprintf(bci_probes, sizeof bci_probes, "JNI natives (%s)", w ? w : "Probe's downcall handles were not made");
	if (w != NULL)
		(*jni)->ReleaseStringUTFChars(jni, why, w);
	ffm_not_used();
}

