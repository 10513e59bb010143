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
#include <time.h>

#include "jp.h"
#include <jvmticmlr.h> /* needs jni.h's types first */

jp_state jp;

static uint64_t jp_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lock-free lists of records whose first member is their next pointer
 * (jp_thread, jp_genbuf, jp_jitrec): any thread pushes, one consumer
 * takes the whole list at once. */
static void jp_list_push(void *head, void *node)
{
	void **h = head;
	void *old = __atomic_load_n(h, __ATOMIC_RELAXED);
	do {
		*(void **)node = old;
	} while (!__atomic_compare_exchange_n(h, &old, node, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* jp_list_take empties the list and returns it oldest first. */
static void *jp_list_take(void *head)
{
	void *l = __atomic_exchange_n((void **)head, NULL, __ATOMIC_ACQUIRE);
	void *rev = NULL;
	while (l != NULL) {
		void *next = *(void **)l;
		*(void **)l = rev;
		rev = l;
		l = next;
	}
	return rev;
}

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
 * Owner-only storage: arenas (append-only, never moved) and maps.
 */

/* jp_arena_push appends a zeroed element and returns its index without
 * publishing it (jp_arena_publish does, once it is filled in), or
 * UINT32_MAX when memory runs out. */
static uint32_t jp_arena_push(jp_arena *a)
{
	uint32_t i = a->n;
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j) - JP_CHUNK0_SHIFT;
	if (k >= JP_NCHUNKS)
		return UINT32_MAX;
	if (a->chunks[k] == NULL) {
		char *c = calloc((size_t)1 << (k + JP_CHUNK0_SHIFT), a->stride);
		if (c == NULL)
			return UINT32_MAX;
		a->chunks[k] = c;
	}
	return i;
}

static inline void jp_arena_publish(jp_arena *a, uint32_t i)
{
	__atomic_store_n(&a->n, i + 1, __ATOMIC_RELEASE);
}

static inline uint32_t jp_map_hash(uintptr_t k1, uint32_t k2)
{
	return (uint32_t)jp_mix((uint64_t)k1 ^ ((uint64_t)k2 << 43));
}

/* jp_map_find returns the slot of (k1, k2): either the one holding it or
 * the empty slot where it belongs. */
static inline jp_slot *jp_map_find(const jp_map *m, uintptr_t k1, uint32_t k2)
{
	uint32_t h = jp_map_hash(k1, k2) & m->mask;
	for (;;) {
		jp_slot *s = &m->slots[h];
		if ((s->k1 == k1 && s->k2 == k2) || s->k1 == 0)
			return s;
		h = (h + 1) & m->mask;
	}
}

static int jp_map_init(jp_map *m, uint32_t cap)
{
	m->slots = calloc(cap, sizeof(jp_slot));
	m->mask = cap - 1;
	m->used = 0;
	return m->slots ? 0 : -1;
}

/* jp_map_put stores (k1, k2) -> val in the empty slot s found by
 * jp_map_find, growing the map at half load. */
static int jp_map_put(jp_map *m, jp_slot *s, uintptr_t k1, uint32_t k2, uint32_t val)
{
	s->k1 = k1;
	s->k2 = k2;
	s->val = val;
	m->used++;
	if (m->used * 2 <= m->mask + 1)
		return 0;
	jp_map bigger;
	if (jp_map_init(&bigger, (m->mask + 1) * 2) != 0)
		return -1; /* still correct, only slower as it fills */
	for (uint32_t i = 0; i <= m->mask; i++) {
		jp_slot *o = &m->slots[i];
		if (o->k1 != 0)
			*jp_map_find(&bigger, o->k1, o->k2) = *o;
	}
	bigger.used = m->used;
	free(m->slots);
	*m = bigger;
	return 0;
}

/* ---------------------------------------------------------------------
 * Per-thread call tree.
 */

/* jp_child finds or creates the node for (parent, mid). The Other-type
 * context of a method is keyed with the id's low bit set: jmethodIDs are
 * pointers, so the bit is free, and the two contexts stay distinct. */
static uint32_t jp_child(jp_thread *t, JNIEnv *jni, uint32_t parent, jmethodID mid, int other)
{
	uintptr_t k1 = (uintptr_t)mid | (other ? 1 : 0);
	jp_slot *s = jp_map_find(&t->children, k1, parent);
	if (__builtin_expect(s->k1 != 0, 1))
		return s->val;
	/* First time on this path: the slow part. */
	jp_method *m = jp_method_get(jp.jvmti, jni, mid);
	uint32_t n = jp_arena_push(&t->nodes);
	if (n == UINT32_MAX) {
		t->alloc_failures++;
		return parent;
	}
	jp_node *nd = jp_node_at(t, n);
	nd->parent = parent;
	nd->type = (uint8_t)(other ? JP_T_OTHER : m->type);
	nd->seqkey = JP_NOKEY;
	nd->m = m;
	jp_arena_publish(&t->nodes, n);
	if (jp_map_put(&t->children, s, k1, parent, n) != 0)
		t->alloc_failures++;
	return n;
}

/* jp_seq_count counts one event of key attributed to node. */
static inline void jp_seq_count(jp_thread *t, jp_node *np, uint32_t node, uint32_t key)
{
	if (__builtin_expect(np->seqkey == key, 1)) {
		np->seq->count++;
		return;
	}
	jp_seqcount *sc;
	jp_slot *s = jp_map_find(&t->seqmap, (uintptr_t)key + 1, node);
	if (s->k1 != 0) {
		sc = jp_seq_at(t, s->val);
		sc->count++;
	} else {
		uint32_t i = jp_arena_push(&t->seqs);
		if (i == UINT32_MAX) {
			t->alloc_failures++;
			return;
		}
		sc = jp_seq_at(t, i);
		sc->node = node;
		sc->key = key;
		sc->count = 1;
		jp_arena_publish(&t->seqs, i);
		if (jp_map_put(&t->seqmap, s, (uintptr_t)key + 1, node, i) != 0)
			t->alloc_failures++;
	}
	np->seqkey = (uint16_t)key;
	np->seq = sc;
}

static int jp_push(jp_thread *t, jmethodID mid, uint32_t node, jp_node *np)
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
	t->stack[t->depth].np = np;
	t->stack[t->depth].type = np->type;
	return 0;
}

static void jp_thread_free(jp_thread *t)
{
	free(t->stack);
	free(t->children.slots);
	free(t->seqmap.slots);
	for (int k = 0; k < JP_NCHUNKS; k++) {
		free(t->nodes.chunks[k]);
		free(t->seqs.chunks[k]);
	}
	free(t->name);
	free(t);
}

/* jp_thread_new creates the calling thread's record. Called at
 * ThreadStart, or at the first event of a thread that started earlier. */
static jp_thread *jp_thread_new(jvmtiEnv *jvmti, jthread thread)
{
	jp_thread *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->nodes.stride = jp.node_stride;
	t->seqs.stride = sizeof(jp_seqcount);
	t->stack_cap = 256;
	t->stack = calloc(t->stack_cap, sizeof(jp_frame));
	int ok = t->stack != NULL && jp_map_init(&t->children, 1024) == 0 &&
		 jp_map_init(&t->seqmap, jp.calibrate ? 1024 : 2) == 0;
	uint32_t root = ok ? jp_arena_push(&t->nodes) : UINT32_MAX;
	if (root != 0) {
		jp_thread_free(t);
		return NULL;
	}
	jp_node_at(t, 0)->type = JP_T_OTHER; /* the root is its own parent */
	jp_node_at(t, 0)->seqkey = JP_NOKEY;
	jp_arena_publish(&t->nodes, 0);
	t->stack[0].type = JP_T_OTHER;
	t->stack[0].np = jp_node_at(t, 0);
	t->prev_running = JP_T_OTHER;
	t->prev_tr = JP_TR_ENTRY;
	t->tid = (int)syscall(SYS_gettid);
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
	t->start_ns = jp_mono_ns();
	jp_ptt_thread_init(&t->ptt);
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);

	jp_list_push(&jp.threads, t);
	jp_self = t;
	return t;
}

/* jp_exit applies an exit (normal or by exception) to the shadow stack
 * and returns the node that exited. */
static inline uint32_t jp_exit(jp_thread *t, JNIEnv *jni, jmethodID mid, int exc)
{
	if (__builtin_expect(t->depth > 0 && t->stack[t->depth].mid == mid, 1)) {
		uint32_t n = t->stack[t->depth].node;
		if (exc)
			jp_node_at(t, n)->excs++;
		t->depth--;
		return n;
	}
	/* The exiting frame is not on top. If it is deeper, the frames above
	 * it lost their exits (cannot happen with JVMTI, but costs nothing to
	 * survive); if it is nowhere, its entry was never seen: profiling
	 * started inside it. Record it as an Other-type context under the
	 * current top and leave the stack as it is. */
	for (uint32_t d = t->depth; d > 0; d--) {
		if (t->stack[d].mid == mid) {
			uint32_t n = t->stack[d].node;
			t->missed_exits += t->depth - d;
			t->depth = d - 1;
			return n;
		}
	}
	t->unmatched_exits++;
	uint32_t n = jp_child(t, jni, t->stack[t->depth].node, mid, 1);
	jp_node *nd = jp_node_at(t, n);
	nd->calls++;
	if (exc)
		nd->excs++;
	return n;
}

/* ---------------------------------------------------------------------
 * log-gen buffers.
 */

/* jp_gen_handover puts a buffer on the writer's list. If the writer is far
 * behind, the thread waits for it rather than drop events. */
static void jp_gen_handover(jp_genbuf *b)
{
	jp_list_push(&jp.gen_full, b);
	uint32_t pending = __atomic_add_fetch(&jp.gen_pending, 1, __ATOMIC_RELAXED);
	if (pending > 4096 && !jp.dead) { /* 256 MiB waiting to be written */
		__atomic_fetch_add(&jp.gen_waits, 1, __ATOMIC_RELAXED);
		while (__atomic_load_n(&jp.gen_pending, __ATOMIC_RELAXED) > 2048 && !jp.dead)
			usleep(1000);
	}
}

static jp_genbuf *jp_gen_newbuf(jp_thread *t)
{
	jp_genbuf *b = malloc(sizeof(jp_genbuf) + JP_GENBUF_BYTES);
	if (b == NULL)
		return NULL;
	b->next = NULL;
	b->thread = t;
	b->used = 0;
	b->seq = t->gen_seq++;
	return b;
}

/* jp_gen_record appends one event to the thread's log-gen buffer. */
static void jp_gen_record(jp_thread *t, uint32_t node, int tr, uint32_t key, const uint64_t *v)
{
	jp_genbuf *b = t->gen;
	if (b == NULL || b->used + jp.genrec_size > JP_GENBUF_BYTES) {
		if (b != NULL)
			jp_gen_handover(b);
		b = t->gen = jp_gen_newbuf(t);
		if (b == NULL) {
			t->alloc_failures++;
			return;
		}
	}
	jp_genrec *r = (jp_genrec *)(b->data + b->used);
	jp_node *nd = jp_node_at(t, node);
	r->m = nd->m;
	r->kind = (uint8_t)tr;
	r->type = nd->type;
	r->key = (uint16_t)key;
	for (int k = 0; k < jp.nmetrics; k++)
		r->v[k] = v[k];
	__atomic_store_n(&b->used, b->used + jp.genrec_size, __ATOMIC_RELEASE);
}

jp_genbuf *jp_gen_take(void)
{
	return jp_list_take(&jp.gen_full);
}

void jp_gen_done(jp_genbuf *b)
{
	free(b);
	__atomic_fetch_sub(&jp.gen_pending, 1, __ATOMIC_RELAXED);
}

/* jp_lower_min lowers a shared minimum; a CAS only when d is a new low,
 * which after warm-up is almost never. */
static inline void jp_lower_min(uint64_t *p, uint64_t d)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (d < cur && !__atomic_compare_exchange_n(p, &cur, d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
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

	/* Whether this event is calibrated: not when its delta has no real
	 * previous Late Read (a restart), went backwards or did not move, or
	 * spans a dispatch or an interrupt (it then holds kernel work or an
	 * interrupt-time correction that is no part of the agent's constant
	 * overhead). Such an event neither lowers a minimum nor has one
	 * removed; they are a tiny fraction of events, and the agent, log-gen
	 * and jprof calibrate all treat them the same way. */
	int clean = 1;
	uint32_t epoch = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (__builtin_expect(t->epoch != epoch, 0)) {
		/* Collection restarted: frames pushed before the stop have
		 * lost their exits. Start again from the root, and do not
		 * charge the time collection was off to anything. */
		t->epoch = epoch;
		t->depth = 0;
		t->prev_running = JP_T_OTHER;
		t->prev_tr = JP_TR_ENTRY;
		if (jp.nmetrics)
			t->last = early;
		clean = 0;
	}

	/* The method that ran since the previous event. */
	uint32_t cur = t->stack[t->depth].node;
	jp_node *curp = t->stack[t->depth].np;
	uint32_t running = t->stack[t->depth].type;

	uint32_t evnode; /* the node entered or exited */
	if (tr == JP_TR_ENTRY) {
		evnode = jp_child(t, jni, cur, mid, 0);
		jp_node *nd = jp_node_at(t, evnode);
		nd->calls++;
		/* If the stack cannot grow (no memory), this frame's exit
		 * will be recorded as unmatched: counted, never a crash. */
		(void)jp_push(t, mid, evnode, nd);
	} else {
		evnode = jp_exit(t, jni, mid, tr == JP_TR_EXCEPTION);
	}
	t->events++;

	if (!jp.nmetrics) {
		if (jp.loggen)
			jp_gen_record(t, evnode, tr, 0, NULL);
		return;
	}
	{
		jp_node *nd = curp;
		uint32_t key = jp_key(t->prev_running, t->prev_tr, running, (uint32_t)tr,
				      t->stack[t->depth].type);
		size_t kb = (size_t)key * (size_t)jp.nmetrics;
		uint64_t d[JP_PTT_MAX_METRICS];
		clean &= early.dispatches == t->last.dispatches && early.interrupts == t->last.interrupts;
		for (int k = 0; k < jp.nmetrics; k++) {
			d[k] = early.v[k] - t->last.v[k];
			/* A reading never goes back; if a backend ever did,
			 * count 0 rather than 2^64, and learn nothing from it.
			 * Nor from a delta of 0: the glue between two events
			 * always runs, so 0 is a clock that did not tick (the
			 * thread CPU clock does that, rarely, across a switch
			 * the clock backend cannot see). */
			if ((int64_t)d[k] <= 0) {
				d[k] = 0;
				clean = 0;
			}
			nd->base[k] += d[k];
		}
		uint64_t *gen = d;
		uint64_t cal[JP_PTT_MAX_METRICS];
		if (jp.calibrate && clean) {
			for (int k = 0; k < jp.nmetrics; k++)
				jp_lower_min(&jp.minima[kb + k], d[k]);
			if (!jp.genraw) {
				/* log-gen gets the value calibrated with the
				 * minimum current now (d >= it: it includes d). */
				for (int k = 0; k < jp.nmetrics; k++) {
					uint64_t mn = jp.minima[kb + k], env = jp.env[kb + k];
					uint64_t over = mn > env ? mn - env : 0;
					cal[k] = d[k] > over ? d[k] - over : 0;
				}
				gen = cal;
			}
		}
		if (jp.loggen)
			jp_gen_record(t, evnode, tr, clean ? key : key | JP_KEY_UNCLEAN, gen);
		/* clean implies the counts did not move; otherwise they only
		 * ever grow within one registration. */
		if (early.dispatches >= t->last.dispatches)
			nd->ds += early.dispatches - t->last.dispatches;
		if (early.interrupts >= t->last.interrupts)
			nd->in += early.interrupts - t->last.interrupts;
		if (jp.calibrate && clean)
			jp_seq_count(t, nd, cur, key);
		t->prev_running = running;
		t->prev_tr = (uint32_t)tr;
		jp_ptt_read(&t->ptt, &t->last); /* Late Read */
	}
}

void jp_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid, int transition)
{
	jp_event_inline(jvmti, jni, thread, mid, transition);
}

/* ---------------------------------------------------------------------
 * JIT code records.
 */

static void jp_jit_push(jp_jitrec *r)
{
	jp_list_push(&jp.jit_recs, r);
}

jp_jitrec *jp_jit_take(void)
{
	return jp_list_take(&jp.jit_recs);
}

void jp_jit_free(jp_jitrec *r)
{
	for (int i = 0; i < r->ninlined; i++)
		free(r->inlined[i]);
	free(r->inlined);
	free(r->name);
	free(r);
}

/* jp_method_name is the method's name for JIT records. Resolved through
 * the method table, so each method's JVMTI lookups happen once. */
static char *jp_method_name(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID mid)
{
	jp_method *m = jp_method_get(jvmti, jni, mid);
	return strdup(m->name);
}

/* jp_jit_inlined collects the distinct methods inlined into compiled code
 * from CompiledMethodLoad's compile_info (HotSpot's PC-stack records). */
static void jp_jit_inlined(jvmtiEnv *jvmti, jp_jitrec *r, jmethodID self, const void *compile_info)
{
	const jvmtiCompiledMethodLoadRecordHeader *h = compile_info;
	jmethodID seen[256];
	int nseen = 0;
	for (; h != NULL; h = h->next) {
		if (h->kind != JVMTI_CMLR_INLINE_INFO)
			continue;
		const jvmtiCompiledMethodLoadInlineRecord *ir = (const void *)h;
		for (jint p = 0; p < ir->numpcs; p++) {
			const PCStackInfo *pc = &ir->pcinfo[p];
			for (jint d = 0; d < pc->numstackframes; d++) {
				jmethodID m = pc->methods[d];
				if (m == self)
					continue;
				int dup = 0;
				for (int i = 0; i < nseen && !dup; i++)
					dup = seen[i] == m;
				if (dup || nseen == (int)(sizeof seen / sizeof seen[0]))
					continue;
				seen[nseen++] = m;
			}
		}
	}
	if (nseen == 0)
		return;
	r->inlined = calloc((size_t)nseen, sizeof(char *));
	if (r->inlined == NULL)
		return;
	for (int i = 0; i < nseen; i++) {
		char *n = jp_method_name(jvmti, NULL, seen[i]);
		if (n != NULL)
			r->inlined[r->ninlined++] = n;
	}
}

/* jp_jit_new makes a record of kind stamped now; name is taken over. */
static jp_jitrec *jp_jit_new(int kind, const void *addr, uint64_t size, char *name)
{
	jp_jitrec *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		free(name);
		return NULL;
	}
	r->kind = kind;
	r->ts = jp_mono_ns();
	r->addr = (uint64_t)(uintptr_t)addr;
	r->size = size;
	r->name = name;
	return r;
}

static void JNICALL cb_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
					    const void *code_addr, jint map_length,
					    const jvmtiAddrLocationMap *map, const void *compile_info)
{
	(void)map_length;
	(void)map;
	jp_jitrec *r = jp_jit_new(JP_JIT_LOAD, code_addr, (uint64_t)code_size, jp_method_name(jvmti, NULL, method));
	if (r == NULL)
		return;
	if (compile_info != NULL)
		jp_jit_inlined(jvmti, r, method, compile_info);
	jp_jit_push(r);
}

static void JNICALL cb_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method, const void *code_addr)
{
	(void)jvmti;
	/* The method may already be gone: use the table only if it is there. */
	jp_method *m = jp_mtab_find(method);
	jp_jitrec *r = jp_jit_new(JP_JIT_UNLOAD, code_addr, 0, strdup(m != NULL ? m->name : "?unloaded"));
	if (r != NULL)
		jp_jit_push(r);
}

static void JNICALL cb_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address, jint length)
{
	(void)jvmti;
	jp_jitrec *r = jp_jit_new(JP_JIT_DYNAMIC, address, (uint64_t)length, strdup(name != NULL ? name : "?"));
	if (r != NULL)
		jp_jit_push(r);
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
	/* The record stays in the list for the reports, but no longer
	 * belongs to this OS thread: the thread may be attached again (the
	 * launcher's main thread comes back as DestroyJavaVM to run the
	 * shutdown hooks), and that is a new Java thread with a tree and a
	 * PTT registration of its own. Readings across fini would mix two
	 * clocks. */
	jp_self = NULL;
	jp_ptt_thread_fini(&t->ptt);
	if (t->gen != NULL && t->gen->used > 0) {
		jp_gen_handover(t->gen);
		t->gen = NULL;
	}
	t->end_ns = jp_mono_ns();
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

int jp_attach_current(char *name)
{
	JNIEnv *env = NULL;
	JavaVMAttachArgs args = { JNI_VERSION_1_8, name, NULL };
	return (int)(*jp.vm)->AttachCurrentThreadAsDaemon(jp.vm, (void **)&env, &args);
}

char *jp_sysprop(const char *name)
{
	char *v = NULL;
	if ((*jp.jvmti)->GetSystemProperty(jp.jvmti, name, &v) != JVMTI_ERROR_NONE)
		return NULL;
	return v;
}

void jp_dealloc(char *p)
{
	(*jp.jvmti)->Deallocate(jp.jvmti, (unsigned char *)p);
}

int jp_force_gc(void)
{
	return (int)(*jp.jvmti)->ForceGarbageCollection(jp.jvmti);
}

int jp_setup(JavaVM *vm, uintptr_t go_handle, int start_at_init, int calibrate, int loggen, int jit, char *err, int errlen)
{
	jvmtiEnv *jvmti = NULL;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
		snprintf(err, errlen, "GetEnv(JVMTI 1.2) failed");
		return -1;
	}
	jp.vm = vm;
	jp.jvmti = jvmti;
	jp.go_handle = go_handle;
	jp.start_at_init = start_at_init;
	jp.calibrate = calibrate && jp_ptt.nmetrics > 0;
	jp.nmetrics = jp_ptt.nmetrics;
	jp.node_stride = (uint32_t)(sizeof(jp_node) + sizeof(uint64_t) * (size_t)jp.nmetrics);
	if (jp.nmetrics) {
		jp.minima = malloc(sizeof(uint64_t) * JP_NKEYS * (size_t)jp.nmetrics);
		if (jp.minima == NULL) {
			snprintf(err, errlen, "no memory for the calibration minima");
			return -1;
		}
		jp.env = calloc((size_t)JP_NKEYS * (size_t)jp.nmetrics, sizeof(uint64_t));
		if (jp.env == NULL) {
			snprintf(err, errlen, "no memory for the calibration minima");
			return -1;
		}
		for (size_t i = 0; i < (size_t)JP_NKEYS * (size_t)jp.nmetrics; i++)
			jp.minima[i] = UINT64_MAX;
	}
	jp.loggen = loggen != 0;
	jp.genraw = loggen == 2;
	jp.genrec_size = (uint32_t)(sizeof(jp_genrec) + sizeof(uint64_t) * (size_t)jp.nmetrics);

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
	jp.jit = jit;
	if (jit) {
		memset(&caps, 0, sizeof caps);
		caps.can_generate_compiled_method_load_events = 1;
		e = (*jvmti)->AddCapabilities(jvmti, &caps);
		if (e != JVMTI_ERROR_NONE) {
			snprintf(err, errlen, "AddCapabilities(compiled method load events) failed: JVMTI error %d", (int)e);
			return -1;
		}
	}

	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	cb.MethodEntry = cb_method_entry;
	cb.MethodExit = cb_method_exit;
	cb.ThreadStart = cb_thread_start;
	cb.ThreadEnd = cb_thread_end;
	cb.VMInit = cb_vm_init;
	cb.VMDeath = cb_vm_death;
	cb.CompiledMethodLoad = cb_compiled_method_load;
	cb.CompiledMethodUnload = cb_compiled_method_unload;
	cb.DynamicCodeGenerated = cb_dynamic_code;
	e = (*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "SetEventCallbacks failed: JVMTI error %d", (int)e);
		return -1;
	}
	jvmtiEvent evs[] = { JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START,
			     JVMTI_EVENT_THREAD_END };
	size_t nevs = sizeof evs / sizeof evs[0];
	for (size_t i = 0; i < nevs; i++) {
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, evs[i], NULL);
		if (e != JVMTI_ERROR_NONE) {
			snprintf(err, errlen, "enabling event %d failed: JVMTI error %d", (int)evs[i], (int)e);
			return -1;
		}
	}
	if (jit) {
		jvmtiEvent jevs[] = { JVMTI_EVENT_COMPILED_METHOD_LOAD, JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
				      JVMTI_EVENT_DYNAMIC_CODE_GENERATED };
		for (size_t i = 0; i < sizeof jevs / sizeof jevs[0]; i++) {
			e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, jevs[i], NULL);
			if (e != JVMTI_ERROR_NONE) {
				snprintf(err, errlen, "enabling JIT event %d failed: JVMTI error %d", (int)jevs[i], (int)e);
				return -1;
			}
		}
	}
	return 0;
}
