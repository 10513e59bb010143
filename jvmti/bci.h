/*
 * bci.h: what the bytecode-instrumentation source's files share: bci.c
 * (the events and their control), bci_classes.c (rewriting and
 * retransforming classes), bci_cache.c and bci_packs.c (BCICACHE: its
 * classes and its files), bci_ffm.c (the FFMPROBES downcalls), and,
 * attached, bci_loops.c (the classes of running loops to leave alone)
 * and bci_kept.c (what a retransformation left: loops in replaced code,
 * classes kept until their loops return).
 */
#ifndef JP_BCI_H
#define JP_BCI_H

#include <pthread.h>
#include "jvmtiagent.h"

struct jp_bci_state {
	char *jar;     /* jprof-bci.jar (with ASM inside), for the boot class path */
	char *include; /* package prefixes, may be "" */
	char *exclude;
	char *roots;   /* ROOTS patterns, "" for every method */
	/* BCICACHE (bci_cache.c): its directory, opened and checked by the
	 * agent (-1: none), its name, the bytes this run may add; whether
	 * lookups are on, and entries added (under bci_cache.c's lock). */
	int cache_fd;
	char *cache_name;
	int64_t cache_budget;
	int cache_on, cache_writable;
	uint64_t cache_hits, cache_misses, cache_added; /* classes answered from it, not held, added */
	uint64_t cache_trivial, cache_wrapped; /* the counts of the classes it answered */
	int flags;     /* JP_BCI_ALL_METHODS, JP_BCI_NATIVES */
	int natives_refused; /* the JVMTI error that kept natives unwrapped, 0 */
	volatile int ready;         /* Java side set up (after VM init) */
	volatile int instrumenting; /* rewrite classes as they load */
	jclass transformer;         /* global ref */
	jmethodID m_transform, m_wanted, m_init, m_roots, m_expand, m_sizes;
	/* Selective instrumentation: root methods (bit per handle) and
	 * whether events outside them are dropped. */
	volatile int selective;
	/* Collection restarted over instrumented code: a thread's first
	 * event in the new epoch seeds its stack (bci_seed). */
	volatile int seed;
	int started; /* collection started before */
	uint8_t *root_bits;
	uint32_t root_nbits;
	uint64_t nroots; /* bits set in root_bits */
	/* Methods that ran inside a root (bit per handle), whose calls the
	 * transformer has followed. */
	uint8_t *run_bits;
	/* Root frames running in all threads, mirrored (0 or not) into
	 * Probe.rooted, which gates the other probes. */
	int64_t rooted;
	jclass probe;         /* global ref */
	jfieldID f_rooted;
	jfieldID f_lost, f_lost_by; /* Probe.unwindsLost, unwindsLostBy */
	uint64_t lost_notes;        /* notes said of lost unwinds */
	/* Classes became active as a subclass of theirs loaded: the
	 * transformer retransforms them at the next entry inside a root. */
	volatile int pending;
	uint64_t transformed, failed; /* classes rewritten / retransform failures */
	uint64_t hook_calls, hook_ns; /* class file hooks that ran the transformer, and their time */
	uint64_t retransforms, retransform_ns; /* RetransformClasses calls, and their time */
	uint64_t expands, expand_ns; /* selective: first runs inside a root followed, and their time */
	/* Probe calls while not collecting, in steps of JP_BCI_IDLE_STEP per
	 * thread: instrumented code still running after a stop (none after
	 * a detach). */
	uint64_t idle_calls;
	/* Classes a retransformation left as they were because a method of
	 * theirs was running a loop (bci_loops.c). */
	uint64_t kept_running;
	/* Classes the last detach left instrumented for the same reason: the
	 * restored version would run that loop interpreted, the instrumented
	 * one runs it compiled, its probes returning at once. */
	uint64_t kept_detach;
	/* The classes the last start left alone (global refs), under
	 * bci_lock. */
	jclass *start_kept;
	jint nstart_kept;
	/* The classes the last detach left instrumented, until their loops
	 * return (jp_bci_restore_kept), and the virtual threads those loops
	 * ran on (global refs), under bci_lock. */
	jclass *detach_kept;
	jint ndetach_kept;
	jthread *detach_vthreads;
	jint ndetach_vthreads;
};
extern struct jp_bci_state bci;

/* bci_class_wanted says whether the transformer instruments class c (a
 * JNI call into it); *sig gets the class's signature, its ';' cut, or
 * NULL (JVMTI's: the caller deallocates it). */
int bci_class_wanted(JNIEnv *jni, jclass c, char **sig);

/* bci_loops.c: bci_running_loops lists the classes with a method that
 * has a loop and is running on some thread, seen at three looks over
 * half a second (global refs, *n of them; NULL with *n = 0 when there are
 * none or they cannot be told; it waits only when some thread is in a
 * loop);
 * bci_running_free frees the list. bci_keep_running says whether class
 * c is on it. */
jclass *bci_running_loops(jvmtiEnv *jvmti, JNIEnv *jni, jint *n, jthread **vts, jint *nvts);
void bci_running_free(JNIEnv *jni, jclass *cs, jint n);
/* Frames the looks take per thread, from the bottom: a loop that lasts
 * is seldom deeper than this under a thread's start or a pool's worker. */
#define JP_LOOP_DEPTH 64
/* bci_loops.c's bytecode and stack helpers, for bci_kept.c:
 * bci_in_loop says whether a method's code at bytecode index at is
 * inside a loop; bci_frame_in_loop the same of method m's frame (unknown:
 * yes); bci_bottom_frames gets a thread's bottom JP_LOOP_DEPTH frames (a
 * virtual thread's, virt, walked from the top). */
int bci_in_loop(const unsigned char *code, jint n, jlocation at);
int bci_frame_in_loop(jvmtiEnv *jvmti, jmethodID m, jlocation at);
jint bci_bottom_frames(jvmtiEnv *jvmti, jthread th, int virt, jvmtiFrameInfo *fr);
/* bci_detach_kept_free forgets the classes the last detach left
 * instrumented, and their loops' virtual threads; under bci_lock. */
void bci_detach_kept_free(JNIEnv *jni);

int bci_keep_running(JNIEnv *jni, jclass *cs, jint n, jclass c);
/* bci_keep_class adds c (a ref the caller keeps) to the list *cs of *n
 * global refs, once. */
void bci_keep_class(JNIEnv *jni, jclass **cs, jint *n, jclass c);

#define JP_BCI_IDLE_STEP 1024

/* Transformer.transform's how: the class is being retransformed; its
 * native methods were wrapped at its first load. */
#define JP_BCI_RETRANSFORMING 1
#define JP_BCI_WRAPPED 2
/* Transformer.NATIVE_PREFIX */
#define JP_BCI_NATIVE_PREFIX "$$jprof$$"

/* A handle in a class kept in BCICACHE has this bit set
 * (TransformCache.CACHED_ID): its constant is then almost never one of the
 * class's own. Overflow handles (both top bits set) keep theirs. */
#define JP_BCI_CACHED_ID 0x40000000u /* a change here changes bci_cache.c's JP_CACHE_FORMAT */
static inline jint bci_id(jint id)
{
	uint32_t u = (uint32_t)id;
	return (jint)(u & ~(JP_BCI_CACHED_ID & ~(u >> 1)));
}

/* The engine's key of the method with registry handle id (bci.c): its
 * low bit free, never 0. */
static inline uintptr_t bci_key(jint id)
{
	return ((uintptr_t)(uint32_t)id + 1) << 1;
}
/* bci_is_root says whether handle id is a root of ROOTS (bci.c marks them). */
static inline int bci_is_root(jint id)
{
	uint32_t h = (uint32_t)id;
	return bci.root_bits != NULL && h < bci.root_nbits &&
	       (__atomic_load_n(&bci.root_bits[h >> 3], __ATOMIC_RELAXED) >> (h & 7) & 1);
}
/* bci_rooted counts a root frame in (+1) or out (-1) (bci.c). */
void bci_rooted(JNIEnv *env, int d);
/* Frames an exception left (bci_unwind.c): bci_unwinds_lost closes, before
 * the unwind of ex, those whose unwinds overflowed passing it on;
 * bci_dead_frames those above method id's innermost frame, returning how
 * many; bci_caught is Probe.caught. */
void bci_unwinds_lost(JNIEnv *env, jthrowable ex);
uint32_t bci_dead_frames(JNIEnv *env, jint id);
void JNICALL bci_caught(JNIEnv *env, jclass c, jint id);
/* Probe calls while not collecting, counted per thread (bci.c). */
extern __thread uint32_t bci_idle __attribute__((tls_model("initial-exec")));
/* FFMPROBES (bci_ffm.c): Probe.downcalls, and making Probe's handles at
 * VM init (clears JP_BCI_FFM when they are not made). */
jlongArray JNICALL bci_downcalls(JNIEnv *env, jclass c);
void bci_ffm_setup(JNIEnv *jni);
/* bci_keep_out_of_c2 keeps the agent's Java classes out of C2 (bci_c2.c). */
void bci_keep_out_of_c2(JNIEnv *jni);

/* BCICACHE (bci_cache.c): an entry's file name, and the lookup. */
#define JP_BCI_CACHE_NAME 192
void jp_bci_cache_name(const char *cls, const unsigned char *data, jint len, char *out);
void jp_bci_cache_name_cp(const char *plain, char *out);
int jp_bci_cache_hit(jvmtiEnv *jvmti, const char *cls, const char *const names[2], jint len, jint *new_len,
		     unsigned char **new_data);
void jp_bci_cache_setup(jvmtiEnv *jvmti);
int jp_bci_foreign(void);
void jp_bci_cache_flush(int last);
int jp_bci_cache_add(jvmtiEnv *jvmti, const char *cls, const char *name, const unsigned char *e, size_t n, jint len,
		     jint *new_len, unsigned char **new_data);
/* The handle of a method by its name (class.name(descriptor)), registered
 * once (bci.c). */
uint32_t jp_bci_register_name(const char *name, int type);
/* How many it holds (the transformer's and BCICACHE's). */
uint64_t jp_bci_names(void);

/* Inside the transformer: classes it loads itself are not rewritten. */
extern __thread int bci_busy;
/* Orders starting, retransformation and VM death. */
extern pthread_mutex_t bci_lock;

/* JLM's parts that BCI calls (jlm.c). */
int jp_jlm_configure(void);
void jp_jlm_setup(jvmtiCapabilities *caps, jvmtiEventCallbacks *cb);
int jp_jlm_vm_init(JNIEnv *jni, jclass probe);
void jp_jlm_events(int on);

/* bci_retransform retransforms every loaded class the transformer wants
 * but those of running (bci_loops_first's, looked for before bci_lock is
 * taken: it waits; taken over); bci_retransform_named those named (Java
 * strings). */
jclass *bci_loops_first(JNIEnv *jni, jint *n, jthread **vts, jint *nvts);
/* bci_retransform_list retransforms classes (local refs, deleted). */
void bci_retransform_list(JNIEnv *jni, jclass *want, jint nw);
void bci_retransform(JNIEnv *jni, jclass *running, jint nrun);
void bci_retransform_named(JNIEnv *jni, jobjectArray names);
/* The source's enable and detach (jp_bci_ops). */
int bci_enable(jvmtiEnv *jvmti, int live, char *err, int errlen);
int bci_detach(char *err, int errlen);
/* bci_runs_reset forgets which methods ran inside a root. */
void bci_runs_reset(void);

#endif /* JP_BCI_H */
