/*
 * hotpath.c: the per-event path of libjprof, in C.
 *
 * Every MethodEntry/MethodExit lands here and never calls Go: a C->Go
 * transition alone costs more than the whole event budget. Per-thread
 * state is reached through one initial-exec __thread pointer; the event
 * path takes no lock. The only shared structure it touches is the method
 * table, and only when a call path is seen for the first time.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "jp.h"

jp_state jp;

/* The calling thread's record. initial-exec: one pointer of static TLS,
 * so a read is a single %fs-relative load instead of __tls_get_addr. */
static __thread jp_thread *jp_self __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------------
 * Method table: jmethodID -> jp_method, shared by all threads.
 * Lookups are lock-free (acquire loads of published pointers); inserts,
 * once per method for the life of the VM, take a mutex.
 */
#define JP_MTAB_BITS 20
static jp_method **jp_mtab;
static pthread_mutex_t jp_mtab_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t jp_mtab_used;

static inline uint64_t jp_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static jp_method *jp_mtab_find(jmethodID mid)
{
	uint32_t mask = (1u << JP_MTAB_BITS) - 1;
	uint32_t i = (uint32_t)jp_mix((uint64_t)(uintptr_t)mid) & mask;
	for (;;) {
		jp_method *m = __atomic_load_n(&jp_mtab[i], __ATOMIC_ACQUIRE);
		if (m == NULL || m->mid == mid)
			return m;
		i = (i + 1) & mask;
	}
}

/* jp_class_name turns a class signature "Ljava/lang/String;" into
 * "java/lang/String"; array and primitive signatures stay as they are. */
static void jp_class_name(const char *sig, char *out, size_t n)
{
	size_t len = strlen(sig);
	if (len >= 2 && sig[0] == 'L' && sig[len - 1] == ';')
		snprintf(out, n, "%.*s", (int)(len - 2), sig + 1);
	else
		snprintf(out, n, "%s", sig);
}

static jp_method *jp_method_resolve(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID mid)
{
	jp_method *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->mid = mid;

	char *mname = NULL, *msig = NULL, *csig = NULL;
	jclass klass = NULL;
	jint mods = 0;
	jboolean native = JNI_FALSE;
	char cname[512];
	cname[0] = 0;

	if ((*jvmti)->GetMethodName(jvmti, mid, &mname, &msig, NULL) != JVMTI_ERROR_NONE)
		mname = msig = NULL;
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, mid, &klass) == JVMTI_ERROR_NONE &&
	    (*jvmti)->GetClassSignature(jvmti, klass, &csig, NULL) == JVMTI_ERROR_NONE)
		jp_class_name(csig, cname, sizeof cname);
	(*jvmti)->GetMethodModifiers(jvmti, mid, &mods);
	(*jvmti)->IsMethodNative(jvmti, mid, &native);

	int is_static = (mods & 0x0008) != 0; /* ACC_STATIC */
	if (native)
		m->type = is_static ? JP_T_NATIVE_STATIC : JP_T_NATIVE;
	else
		m->type = is_static ? JP_T_INTERP_STATIC : JP_T_INTERP;

	size_t n = strlen(cname) + (mname ? strlen(mname) : 1) + (msig ? strlen(msig) : 0) + 3;
	m->name = malloc(n);
	if (m->name != NULL)
		snprintf(m->name, n, "%s.%s%s", cname[0] ? cname : "?", mname ? mname : "?", msig ? msig : "");

	if (mname)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)mname);
	if (msig)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)msig);
	if (csig)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
	if (klass && jni)
		(*jni)->DeleteLocalRef(jni, klass);
	if (m->name == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

/* A method that could not be resolved or cached still needs a node:
 * they all share this one (counted in jp.method_overflow). */
static jp_method jp_unknown_method = { NULL, JP_T_OTHER, "?unknown" };

static jp_method *jp_method_get(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID mid)
{
	jp_method *m = jp_mtab_find(mid);
	if (m != NULL)
		return m;
	/* Resolve outside the lock: JVMTI calls can take microseconds. */
	jp_method *fresh = jp_method_resolve(jvmti, jni, mid);
	if (fresh == NULL) {
		__atomic_fetch_add(&jp.method_overflow, 1, __ATOMIC_RELAXED);
		return &jp_unknown_method;
	}
	pthread_mutex_lock(&jp_mtab_lock);
	uint32_t mask = (1u << JP_MTAB_BITS) - 1;
	uint32_t i = (uint32_t)jp_mix((uint64_t)(uintptr_t)mid) & mask;
	while (jp_mtab[i] != NULL && jp_mtab[i]->mid != mid)
		i = (i + 1) & mask;
	if (jp_mtab[i] != NULL) {
		m = jp_mtab[i]; /* another thread won the race */
	} else if (jp_mtab_used >= (mask / 4) * 3) {
		m = NULL; /* keep probes short: never fill past 3/4 */
	} else {
		__atomic_store_n(&jp_mtab[i], fresh, __ATOMIC_RELEASE);
		jp_mtab_used++;
		m = fresh;
		fresh = NULL;
	}
	pthread_mutex_unlock(&jp_mtab_lock);
	if (fresh != NULL) {
		free(fresh->name);
		free(fresh);
	}
	if (m == NULL) {
		__atomic_fetch_add(&jp.method_overflow, 1, __ATOMIC_RELAXED);
		return &jp_unknown_method;
	}
	return m;
}

/* ---------------------------------------------------------------------
 * Per-thread call tree.
 */

/* jp_node_new appends a node and publishes it; returns its index, or
 * UINT32_MAX when memory runs out. */
static uint32_t jp_node_new(jp_thread *t, uint32_t parent, jp_method *m, int type)
{
	uint32_t i = t->nnodes;
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j) - JP_CHUNK0_SHIFT;
	if (k >= JP_NCHUNKS)
		return UINT32_MAX;
	if (t->chunks[k] == NULL) {
		size_t n = ((size_t)1 << (k + JP_CHUNK0_SHIFT)) * jp.node_stride;
		char *c = calloc(1, n);
		if (c == NULL)
			return UINT32_MAX;
		t->chunks[k] = c;
	}
	jp_node *nd = jp_node_at(t, i);
	nd->parent = parent;
	nd->type = (uint8_t)type;
	nd->m = m;
	__atomic_store_n(&t->nnodes, i + 1, __ATOMIC_RELEASE);
	return i;
}

static inline uint32_t jp_hash(jmethodID mid, uint32_t parent)
{
	return (uint32_t)jp_mix((uint64_t)(uintptr_t)mid ^ ((uint64_t)parent << 43));
}

static int jp_hash_grow(jp_thread *t)
{
	uint32_t ncap = (t->hash_mask + 1) * 2;
	jp_slot *nh = calloc(ncap, sizeof(jp_slot));
	if (nh == NULL)
		return -1;
	for (uint32_t i = 0; i <= t->hash_mask; i++) {
		jp_slot *s = &t->hash[i];
		if (s->mid == NULL)
			continue;
		uint32_t h = jp_hash(s->mid, s->parent) & (ncap - 1);
		while (nh[h].mid != NULL)
			h = (h + 1) & (ncap - 1);
		nh[h] = *s;
	}
	free(t->hash);
	t->hash = nh;
	t->hash_mask = ncap - 1;
	return 0;
}

/* jp_child finds or creates the node for key (parent, mid). The Other-type
 * context of a method is keyed with the id's low bit set: jmethodIDs are
 * pointers, so the bit is free, and the two contexts stay distinct. */
static uint32_t jp_child(jp_thread *t, JNIEnv *jni, uint32_t parent, jmethodID mid, int other)
{
	jmethodID key = other ? (jmethodID)((uintptr_t)mid | 1) : mid;
	uint32_t h = jp_hash(key, parent) & t->hash_mask;
	for (;;) {
		jp_slot *s = &t->hash[h];
		if (s->mid == key && s->parent == parent)
			return s->node;
		if (s->mid == NULL)
			break;
		h = (h + 1) & t->hash_mask;
	}
	/* First time on this path: the slow part. */
	jp_method *m = jp_method_get(jp.jvmti, jni, mid);
	uint32_t n = jp_node_new(t, parent, m, other ? JP_T_OTHER : m->type);
	if (n == UINT32_MAX) {
		t->alloc_failures++;
		return parent;
	}
	if ((t->hash_used + 1) * 2 > t->hash_mask + 1) {
		if (jp_hash_grow(t) != 0) {
			t->alloc_failures++;
			return n; /* usable now, found again never: counts split */
		}
		h = jp_hash(key, parent) & t->hash_mask;
		while (t->hash[h].mid != NULL)
			h = (h + 1) & t->hash_mask;
	}
	t->hash[h].mid = key;
	t->hash[h].parent = parent;
	t->hash[h].node = n;
	t->hash_used++;
	return n;
}

static int jp_push(jp_thread *t, jmethodID mid, uint32_t node)
{
	if (t->depth + 1 >= t->stack_cap) {
		uint32_t ncap = t->stack_cap * 2;
		jp_frame *ns = realloc(t->stack, ncap * sizeof(jp_frame));
		if (ns == NULL) {
			t->alloc_failures++;
			return -1;
		}
		t->stack = ns;
		t->stack_cap = ncap;
	}
	t->depth++;
	t->stack[t->depth].mid = mid;
	t->stack[t->depth].node = node;
	return 0;
}

/* jp_thread_new creates the calling thread's record. Called at
 * ThreadStart, or at the first event of a thread that started earlier. */
static jp_thread *jp_thread_new(jvmtiEnv *jvmti, jthread thread)
{
	jp_thread *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->stack_cap = 256;
	t->stack = calloc(t->stack_cap, sizeof(jp_frame));
	t->hash_mask = 1024 - 1;
	t->hash = calloc(t->hash_mask + 1, sizeof(jp_slot));
	if (t->stack == NULL || t->hash == NULL || jp_node_new(t, 0, NULL, JP_T_OTHER) != 0) {
		free(t->stack);
		free(t->hash);
		free(t->chunks[0]);
		free(t);
		return NULL;
	}
	t->tid = (int)syscall(SYS_gettid);
	t->name = NULL;
	if (thread != NULL) {
		jvmtiThreadInfo info;
		memset(&info, 0, sizeof info);
		if ((*jvmti)->GetThreadInfo(jvmti, thread, &info) == JVMTI_ERROR_NONE && info.name) {
			t->name = strdup(info.name);
			(*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
		}
	}
	if (t->name == NULL)
		t->name = strdup("unknown");
	t->epoch = __atomic_load_n(&jp.epoch, __ATOMIC_ACQUIRE);
	jp_ptt_thread_init(&t->ptt);
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);

	jp_thread *head = __atomic_load_n(&jp.threads, __ATOMIC_RELAXED);
	do {
		t->next = head;
	} while (!__atomic_compare_exchange_n(&jp.threads, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	jp_self = t;
	return t;
}

/* jp_exit applies an exit (normal or by exception) to the shadow stack. */
static inline void jp_exit(jp_thread *t, JNIEnv *jni, jmethodID mid, int exc)
{
	if (__builtin_expect(t->depth > 0 && t->stack[t->depth].mid == mid, 1)) {
		if (exc)
			jp_node_at(t, t->stack[t->depth].node)->excs++;
		t->depth--;
		return;
	}
	/* The exiting frame is not on top. If it is deeper, the frames above
	 * it lost their exits (cannot happen with JVMTI, but costs nothing to
	 * survive); if it is nowhere, its entry was never seen: profiling
	 * started inside it. Record it as an Other-type context under the
	 * current top and leave the stack as it is. */
	for (uint32_t d = t->depth; d > 0; d--) {
		if (t->stack[d].mid == mid) {
			t->missed_exits += t->depth - d;
			t->depth = d - 1;
			return;
		}
	}
	t->unmatched_exits++;
	uint32_t n = jp_child(t, jni, t->stack[t->depth].node, mid, 1);
	jp_node *nd = jp_node_at(t, n);
	nd->calls++;
	if (exc)
		nd->excs++;
}

static inline void jp_event_inline(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid, int tr)
{
	jp_ptt_reading early;
	jp_thread *t = jp_self;
	/* The one branch before the Early Read: a thread's first event. */
	if (__builtin_expect(t == NULL, 0)) {
		t = jp_thread_new(jvmti, thread);
		if (t == NULL)
			return;
	}
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &early); /* Early Read */

	uint32_t epoch = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (__builtin_expect(t->epoch != epoch, 0)) {
		/* Collection restarted: frames pushed before the stop have
		 * lost their exits. Start again from the root. */
		t->epoch = epoch;
		t->depth = 0;
		if (jp.nmetrics)
			t->last = early;
	}

	if (jp.nmetrics) {
		jp_node *cur = jp_node_at(t, t->stack[t->depth].node);
		for (int k = 0; k < jp.nmetrics; k++) {
			uint64_t d = early.v[k] - t->last.v[k];
			/* A reading never goes back; if a backend ever did,
			 * attribute nothing rather than 2^64. */
			if ((int64_t)d > 0)
				cur->base[k] += d;
		}
		cur->ds += early.dispatches - t->last.dispatches;
		cur->in += early.interrupts - t->last.interrupts;
	}

	if (tr == JP_TR_ENTRY) {
		uint32_t n = jp_child(t, jni, t->stack[t->depth].node, mid, 0);
		jp_node_at(t, n)->calls++;
		/* If the stack cannot grow (no memory), this frame's exit
		 * will be recorded as unmatched: counted, never a crash. */
		(void)jp_push(t, mid, n);
	} else {
		jp_exit(t, jni, mid, tr == JP_TR_EXCEPTION);
	}
	t->events++;

	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last); /* Late Read */
}

void jp_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid, int transition)
{
	jp_event_inline(jvmti, jni, thread, mid, transition);
}

/* ---------------------------------------------------------------------
 * JVMTI callbacks.
 */
extern void jpGoVMInit(uintptr_t h);
extern void jpGoVMDeath(uintptr_t h);

static void JNICALL cb_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid)
{
	jp_event_inline(jvmti, jni, thread, mid, JP_TR_ENTRY);
}

static void JNICALL cb_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid,
				   jboolean by_exception, jvalue rv)
{
	(void)rv;
	jp_event_inline(jvmti, jni, thread, mid, by_exception ? JP_TR_EXCEPTION : JP_TR_EXIT);
}

static void JNICALL cb_thread_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni;
	if (jp_self == NULL)
		jp_thread_new(jvmti, thread);
}

static void JNICALL cb_thread_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	jp_thread *t = jp_self;
	if (t == NULL)
		return;
	/* The record stays in the list for the reports and stays this
	 * thread's: a late event must not start a second tree for it. */
	jp_ptt_thread_fini(&t->ptt);
	t->ptt.fallback = 1;
	t->ended = 1;
}

static void JNICALL cb_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni;
	if (jp_self == NULL)
		jp_thread_new(jvmti, thread);
	if (jp.start_at_init)
		jp_set_method_events(1);
	jpGoVMInit(jp.go_handle);
}

static void JNICALL cb_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
	(void)jvmti;
	(void)jni;
	jp_set_method_events(0);
	jp.dead = 1;
	jpGoVMDeath(jp.go_handle);
}

/* jp_set_method_events turns MethodEntry/Exit on or off for all threads.
 * Turning them on starts a new epoch, so stacks left over from an earlier
 * collection period are discarded at each thread's next event. */
int jp_set_method_events(int on)
{
	jvmtiEnv *jvmti = jp.jvmti;
	jvmtiEventMode mode = on ? JVMTI_ENABLE : JVMTI_DISABLE;
	if (on)
		__atomic_add_fetch(&jp.epoch, 1, __ATOMIC_RELEASE);
	jvmtiError e1 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_ENTRY, NULL);
	jvmtiError e2 = (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_METHOD_EXIT, NULL);
	if (e1 == JVMTI_ERROR_NONE && e2 == JVMTI_ERROR_NONE)
		jp.collecting = on;
	return e1 != JVMTI_ERROR_NONE ? (int)e1 : (int)e2;
}

int jp_force_gc(void)
{
	return (int)(*jp.jvmti)->ForceGarbageCollection(jp.jvmti);
}

int jp_setup(JavaVM *vm, uintptr_t go_handle, int start_at_init, char *err, int errlen)
{
	jvmtiEnv *jvmti = NULL;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
		snprintf(err, errlen, "GetEnv(JVMTI 1.2) failed");
		return -1;
	}
	jp.jvmti = jvmti;
	jp.go_handle = go_handle;
	jp.start_at_init = start_at_init;
	jp.nmetrics = jp_ptt.nmetrics;
	jp.node_stride = (uint32_t)(sizeof(jp_node) + sizeof(uint64_t) * (size_t)jp.nmetrics);

	jp_mtab = calloc((size_t)1 << JP_MTAB_BITS, sizeof(jp_method *));
	if (jp_mtab == NULL) {
		snprintf(err, errlen, "no memory for the method table");
		return -1;
	}

	jvmtiCapabilities caps;
	memset(&caps, 0, sizeof caps);
	caps.can_generate_method_entry_events = 1;
	caps.can_generate_method_exit_events = 1;
	jvmtiError e = (*jvmti)->AddCapabilities(jvmti, &caps);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "AddCapabilities(method entry/exit events) failed: JVMTI error %d", (int)e);
		return -1;
	}

	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	cb.MethodEntry = cb_method_entry;
	cb.MethodExit = cb_method_exit;
	cb.ThreadStart = cb_thread_start;
	cb.ThreadEnd = cb_thread_end;
	cb.VMInit = cb_vm_init;
	cb.VMDeath = cb_vm_death;
	e = (*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "SetEventCallbacks failed: JVMTI error %d", (int)e);
		return -1;
	}
	jvmtiEvent evs[] = { JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
			     JVMTI_EVENT_THREAD_END };
	for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) {
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, evs[i], NULL);
		if (e != JVMTI_ERROR_NONE) {
			snprintf(err, errlen, "enabling event %d failed: JVMTI error %d", (int)evs[i], (int)e);
			return -1;
		}
	}
	return 0;
}
