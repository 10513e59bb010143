/*
 * jvmtiagent.h: libjprof's JVMTI binding, shared by its C files: the
 * environment, the lifecycle callbacks, the method-event source and the
 * JIT code records.
 */
#ifndef JP_JVMTIAGENT_H
#define JP_JVMTIAGENT_H

#include <jvmti.h>
#include "engine.h"

/* One event source's lifecycle as binding.c drives it. Each source
 * (methodevents.c, bci.c, sampling.c) fills one table, mirrored in Go by
 * the agent's source interface; the JVMTI callbacks call through it
 * instead of asking which source runs. live: the agent was loaded into a
 * running VM (Agent_OnAttach), where HotSpot refuses some capabilities.
 * Entries may be NULL where a source has nothing to do. */
typedef struct jp_source_ops {
	const jp_source *engine; /* its name and key resolver, for the engine */
	/* Capabilities it needs (added by the caller) and its callbacks. */
	int (*setup)(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
		     int errlen);
	/* After SetEventCallbacks: its own capabilities and events. */
	int (*enable)(jvmtiEnv *jvmti, int live, char *err, int errlen);
	/* The VM is initialised: VMInit, or at once when attached (thread
	 * NULL: the attaching thread runs no program code). */
	void (*vm_init)(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);
	/* Collection on or off; -1 once the VM is dying. */
	int (*set)(int on);
	/* With collection off: take out of the program what the source put
	 * in (instrumented classes, timers), so that it runs as before. */
	int (*detach)(char *err, int errlen);
	void (*thread_start)(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);
	void (*thread_end)(void);
	/* VM death: off for good. */
	void (*die)(void);
} jp_source_ops;

extern const jp_source_ops jp_methodevents_ops, jp_bci_ops, jp_sampling_ops, jp_alloc_ops, jp_lock_ops;

typedef struct jp_vm {
	JavaVM *vm;
	jvmtiEnv *jvmti;
	uintptr_t go_handle; /* cgo.Handle of the Go agent */
	int start_at_load;   /* method events from Agent_OnLoad on */
	int jit;             /* JIT records wanted */
	int sample;          /* the sampling source feeds the engine (sampling.c) */
	int bci;             /* the bytecode-instrumentation source (bci.c) instead of method events */
	int live;            /* loaded into a running VM (Agent_OnAttach) */
	int alloc;           /* the allocation source (alloc.c) */
	int lock;            /* the lock source (lock.c) */
	const jp_source_ops *src; /* the source feeding the engine */
} jp_vm;

extern jp_vm jpvm;

/* Setup and control, called from Go. */
int jp_vm_setup(JavaVM *vm, uintptr_t go_handle, int live, int start, int calibrate, int loggen, int jit,
		uint32_t max_methods, int eager_threads, char *err, int errlen);
/* jp_vm_live_init does, for an agent loaded into a running VM, what VM
 * init does for one loaded at start; on the attaching thread. */
int jp_vm_live_init(char *err, int errlen);
/* jp_vm_detach: collection off, then the source's detach. */
int jp_vm_detach(char *err, int errlen);
/* jp_methodevents_set turns the method-event source on or off; refused
 * (-1) once the VM is dying. */
int jp_methodevents_set(int on);
int jp_attach_current(char *name);
/* jp_vm_set_bool_flag sets a HotSpot -XX flag of type bool through the
 * VM's exported structure table (vmflags.c): 0; 1 or 2 when the user set
 * the flag (command line, JAVA_TOOL_OPTIONS, a flags file), left as it is,
 * already at value (1) or not (2); -1 if the table cannot be read, -2 if
 * there is no such flag. */
int jp_vm_set_bool_flag(const char *name, int value);
/* jp_vm_static is the address of a HotSpot static field named in the
 * same table (e.g. CodeCache::_low_bound), or NULL. */
void *jp_vm_static(const char *type, const char *field);
/* jp_vm_offset is the offset of a HotSpot instance field named there, or
 * -1. */
long jp_vm_offset(const char *type, const char *field);
/* The allocation source (alloc.c): jp_alloc_configure before
 * jp_vm_setup; counters since the start. */
typedef struct jp_alloc_stats {
	uint64_t samples, sampled_bytes, weight_bytes, threads, lost;
	uint64_t callback_ns; /* CPU time in the sampling callback: the agent's own cost */
} jp_alloc_stats;
extern const jp_source jp_alloc;
int jp_alloc_configure(uint64_t interval, uint32_t max_nodes, uint32_t depth, char *err, int errlen);
void jp_alloc_stats_read(jp_alloc_stats *out);
/* jp_alloc_set turns the sampled allocation events on or off; -1 once
 * the VM is dying, else a JVMTI error or 0. */
int jp_alloc_set(int on);

/* The lock source (lock.c, park.c): [0] entering contended monitors, [1]
 * Object.wait, [2] LockSupport.park; events seen, recorded (at or above
 * the threshold) and their delays. */
typedef struct jp_lock_stats {
	uint64_t events[3], recorded[3], delay_ns[3];
	int park; /* 1: LockSupport is rewritten; 0 not (yet); < 0 it cannot be */
} jp_lock_stats;
extern const jp_source jp_lock;
int jp_lock_configure(uint64_t threshold_ns, uint32_t max_nodes, uint32_t depth, char *err, int errlen);
int jp_lock_set(int on);
void jp_lock_stats_read(jp_lock_stats *out);

/* jp_dcmd runs one of the JVM's diagnostic commands, as jcmd names them
 * ("GC.class_histogram"), and returns its output (malloc'd), or NULL with
 * why set (dcmd.c); jp_dcmd_current on the calling thread, which must be
 * attached to the VM. */
char *jp_dcmd(JNIEnv *jni, const char *cmd, const char **why);
char *jp_dcmd_current(const char *cmd, const char **why);
/* jp_heap_dump writes an HPROF dump (of the live objects, after a full
 * GC, when live) to path, which must end in .hprof; 0, or -1 with why. */
int jp_heap_dump(const char *path, int live, const char **why);
int jp_enable_events(jvmtiEnv *jvmti, const jvmtiEvent *evs, size_t n, char *err, int errlen);
void jp_thread_start_record(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);
int jp_force_gc(void);
char *jp_sysprop(const char *name);
void jp_dealloc(char *p);

/* Method ids -> registry handles (methodids.c). */
uint32_t jp_mid_resolve(uintptr_t mid);
/* jp_mid_find returns the handle of a method seen before, or UINT32_MAX. */
uint32_t jp_mid_find(jmethodID mid);
int jp_mid_init(void);
/* jp_mid_insert caches mid -> fresh (a handle just registered for it)
 * unless mid is cached already; returns the cached handle. */
uint32_t jp_mid_insert(jmethodID mid, uint32_t fresh);
/* jp_mid_register_class makes the jmethodIDs of a prepared class and
 * reserves registry handles for its methods not seen yet, without names;
 * returns how many it reserved. jp_mid_resolve names such a method at its
 * first use; jp_mid_name_used names those a sampled tree uses (on a
 * thread attached to the VM: -1 otherwise), and returns how many. */
int jp_mid_register_class(jvmtiEnv *jvmti, jclass klass);
int jp_mid_name_used(void);
/* jp_class_name: "Ljava/lang/String;" -> "java/lang/String" (malloc'd). */
char *jp_class_name(const char *sig);

/* The calling Java thread's engine record, made on its first event
 * (threadrecord.c). */
jp_thread *jp_vm_thread(jvmtiEnv *jvmti, jthread thread);
/* jp_vm_seed is the calling thread's first event in a collection epoch
 * (t its record, NULL to make it): the frames already open on its Java
 * stack, each the source's key (key_of; 0 leaves a frame out), seed its
 * shadow stack (jp_thread_seed), but for the innermost when it is the
 * method being entered (entered, its key; 0 for an exit). Returns t. */
jp_thread *jp_vm_seed(jvmtiEnv *jvmti, jp_thread *t, uintptr_t (*key_of)(jvmtiEnv *, jmethodID), uintptr_t entered);
/* jp_vm_thread_name is the VM's name of a thread (NULL: the calling
 * thread), malloc'd, whole; NULL if it has none or without memory. */
char *jp_vm_thread_name(jvmtiEnv *jvmti, jthread thread);

/* JIT code records (jit.c): made by the compiler threads' callbacks,
 * handed to Go through a lock-free list, freed by Go. */
enum jp_jit_kind {
	JP_JIT_LOAD = 0,   /* CompiledMethodLoad */
	JP_JIT_UNLOAD = 1, /* CompiledMethodUnload */
	JP_JIT_DYNAMIC = 2 /* DynamicCodeGenerated (stubs, interpreter) */
};
typedef struct jp_jitrec {
	struct jp_jitrec *next;   /* first member (jp_list_push) */
	int kind;
	uint64_t ts;      /* CLOCK_MONOTONIC ns */
	uint64_t addr;
	uint64_t size;
	char *name;       /* class.method(sig) or the stub's name; malloc'd */
	int ninlined;
	char **inlined;   /* distinct methods inlined into this code */
} jp_jitrec;

jp_jitrec *jp_jit_take(void);
void jp_jit_free(jp_jitrec *r);
void JNICALL jp_cb_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
					const void *code_addr, jint map_length,
					const jvmtiAddrLocationMap *map, const void *compile_info);
void JNICALL jp_cb_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method, const void *code_addr);
void JNICALL jp_cb_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address, jint length);
/* jp_stub_add records generated code's name and range for the sampler
 * (sampling_stubs.c). */
void jp_stub_add(const char *name, const void *address, int length);

/* The method-event source's callbacks (methodevents.c). */
void JNICALL jp_cb_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid);
void JNICALL jp_cb_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
			       jboolean by_exception, jvalue rv);
extern const jp_source jp_methodevents;

/* Virtual threads (vthreads.c). */
enum jp_vt_mode {
	JP_VT_NONE = 0,     /* the JVM has no virtual threads (JDK < 21) */
	JP_VT_DETECTED = 1, /* it has, without mount/unmount events: counted only */
	JP_VT_TRACKED = 2,  /* each virtual thread has a record of its own */
	JP_VT_SAMPLED = 3,  /* sampling: counted, samples land on their carriers */
};
extern int jp_vt_mode;
extern int jp_vt_track;
int jp_vt_caps(jvmtiEnv *jvmti);
int jp_vt_setup(jvmtiEnv *jvmti, const jvmtiEventCallbacks *cb, char *err, int errlen);
uint64_t jp_vt_started(void);
jp_thread *jp_vt_first_event(jvmtiEnv *jvmti, jthread thread);
/* jp_all_threads lists the VM's threads (allthreads.c), platform ones
 * first (*nplatform of them, if not NULL), then with with_virtual the
 * virtual ones, as *n global refs that jp_all_threads_free releases;
 * NULL with *n = 0 when JVMTI cannot list them. From a thread attached to
 * the VM; with_virtual, outside JVMTI callbacks and agent locks: it calls
 * Java. */
jthread *jp_all_threads(jvmtiEnv *jvmti, JNIEnv *jni, jint *n, jint *nplatform, int with_virtual);
void jp_all_threads_free(JNIEnv *jni, jthread *ths, jint n);

/* The sampling source (sampling.c). jp_sampling_configure, before
 * jp_vm_setup, selects it (jpvm.sample); the lifecycle callbacks call
 * the others when it is selected. */
extern const jp_source jp_sampling;
int jp_sampling_configure(int kind, uint64_t period_ns, uint32_t max_nodes, uint32_t depth, char *err, int errlen);
/* jp_sampling_set starts or stops sampling; -1 once the VM is dying. */
int jp_sampling_set(int on);

/* ROOTS for the method-event source (rootevents.c): method events on a
 * thread only inside a root method. jp_roots_on: configured. */
extern int jp_roots_on;
int jp_roots_configure(const char *spec, char *err, int errlen);
int jp_roots_set(const char *spec, char *err, int errlen);
int jp_roots_count(void);
int jp_roots_match_loaded(const char *spec);
int jp_roots_class_findable(const char *dotted);
unsigned char *jp_roots_class_file(const char *dotted, int *len);
int jp_roots_glob(const char *pattern, const char *name);
int jp_bci_instrumenting(void);
uint64_t jp_roots_refused(void);
int jp_vt_is_virtual(JNIEnv *jni, jthread thread);
void jp_roots_vm_init(jvmtiEnv *jvmti, JNIEnv *jni);
void JNICALL jp_cb_roots_class_prepare(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jclass k);
void JNICALL jp_cb_roots_breakpoint(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
				    jlocation location);
void JNICALL jp_cb_roots_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid);
void JNICALL jp_cb_roots_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
				     jboolean by_exception, jvalue rv);

/* The bytecode-instrumentation source (bci.c). */
extern const jp_source jp_bci;
/* jp_bci_configure's flags (Transformer.init's): instrument trivial
 * methods too; wrap native methods. */
#define JP_BCI_ALL_METHODS 1
#define JP_BCI_NATIVES 2
#define JP_BCI_JLM 4
#define JP_BCI_FFM 8 /* the probes are FFM critical downcalls where the JDK has them (22+) */
#define JP_BCI_FOREIGN 16 /* the JVM's classes may not be their files (bci_context.c's jp_bci_foreign; set at VM init) */
#define JP_BCI_NO_ASSERTS 32 /* the command line turns no assertions on and names none: assert statements never run (bci.c; set at VM init) */
/* JLM (jlm.c), the exact lock monitor of BCI: jp_jlm_read calls f for
 * each row (site, class signature, v: gets, recursive, slow, wait ns,
 * hold ns, Object.waits, Object.wait ns); jp_jlm_reset zeroes them;
 * jp_jlm_overflow counts takes not counted (sites past the limit). */
void jp_jlm_read(void (*f)(void *arg, const char *site, const char *cls, const uint64_t *v), void *arg);
void jp_jlm_read_go(uintptr_t h);
void jp_jlm_reset(void);
uint64_t jp_jlm_overflow(void);

/* jp_env is the calling thread's JNIEnv, NULL if it is not attached. */
JNIEnv *jp_env(void);
/* jp_notef says something in log-msg: a warning, with the prefix
 * "info: " what was done, with "say: " a warning for the user's eyes too
 * (Config.Note). */
void jp_notef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* jp_agent_jar is jprof-bci.jar's path beside libjprof.so (malloc'd), or
 * NULL with err (who names the option that needs it). */
char *jp_agent_jar(const char *who, char *err, int errlen);
int jp_bci_configure(const char *include, const char *exclude, const char *roots, const char *cache_name, int cache_fd,
		     int64_t cache_budget, int flags, char *err, int errlen);
int jp_bci_roots(const char *roots, char *err, int errlen);
int jp_bci_set(int on);
/* jp_bci_stats fills out[11]: classes rewritten, retransformation
 * failures, hooks that ran the transformer, their total time (ns),
 * RetransformClasses calls and their total time (ns), and for
 * selective instrumentation the first runs inside a root followed,
 * their total time (ns, the retransformations they made included), and
 * the root methods instrumented since the roots were set; probe calls
 * while not collecting; classes left as they were for a running loop. */
void jp_bci_stats(uint64_t *out);
/* jp_bci_sizes fills out[JP_BCI_NSIZES]: Transformer.sizes. */
#define JP_BCI_NSIZES 10
int jp_bci_sizes(uint64_t *out);
/* jp_bci_natives_refused is the JVMTI error that kept native methods
 * from being wrapped (no native method prefix), 0 if none did. */
int jp_bci_natives_refused(void);
/* jp_mid_name_of is a method's name as the registry writes it,
 * "pkg/Class.name(desc)" (malloc'd; NULL without memory), asking the VM. */
char *jp_mid_name_of(jmethodID mid);
/* jp_bci_probes says what the injected probes call (FFM downcalls or
 * JNI natives, and why), once the VM is initialized. */
const char *jp_bci_probes(void);
/* jp_bci_no_asserts says whether VM init found every assertion off
 * (JP_BCI_NO_ASSERTS): the trivial rule skips assert statements' code. */
int jp_bci_no_asserts(void);
/* jp_bci_handle is the handle of the instrumented method of this name
 * ("pkg/Class.name(desc)"), UINT32_MAX if the transformer registered none. */
uint32_t jp_bci_handle(const char *name);
/* jp_bci_warn_obsolete says in log-msg which loops run in replaced
 * (interpreted) method versions, attached, and returns how many run now,
 * named in out; on a VM-attached thread. */
int jp_bci_warn_obsolete(char *out, int outlen);
/* jp_bci_start_kept_names names the classes the last start left as they
 * were (a loop of each running) in out, and returns how many there are. */
int jp_bci_start_kept_names(char *out, int outlen);
/* jp_bci_restore_kept gives the classes a detach left instrumented their
 * bytes back once their loops have returned; how many are still kept. */
int jp_bci_restore_kept(void);
void JNICALL jp_bci_class_file_load(jvmtiEnv *jvmti, JNIEnv *jni, jclass redefined, jobject loader,
				    const char *name, jobject pd, jint len, const unsigned char *data,
				    jint *new_len, unsigned char **new_data);

#endif /* JP_JVMTIAGENT_H */
