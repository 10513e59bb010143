/*
 * threads.c: thread records. A record is made at a thread's first event
 * (threads that never run a collected method cost nothing), loses what
 * only its owner used when the thread ends, and stays in the list for the
 * reports until Go retires it: an ended thread's tree is first packed
 * into exact blocks, then freed once no report needs it any more.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <time.h>

#include "engine.h"
#include "store.h"
#include "thread_priv.h"

jp_state jp;

static pthread_mutex_t jp_list_mu = PTHREAD_MUTEX_INITIALIZER;

__thread jp_thread *jp_self __attribute__((tls_model("initial-exec")));

uint64_t jp_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void jp_list_push(void *head, void *node)
{
	void **h = head;
	void *old = __atomic_load_n(h, __ATOMIC_RELAXED);
	do {
		*(void **)node = old;
	} while (!__atomic_compare_exchange_n(h, &old, node, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* jp_list_take empties the list and returns it oldest first. */
void *jp_list_take(void *head)
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

/* jp_thread_owned frees what only the owner uses. */
static void jp_thread_owned_free(jp_thread *t)
{
	free(t->stack);
	t->stack = NULL;
	jp_map_free(&t->children);
	jp_zfree(t->edges, JP_EDGES * sizeof(jp_slot));
	t->edges = NULL;
	jp_map_free(&t->seqmap);
	if (t->src_state != NULL && jp.src_state_free != NULL)
		jp.src_state_free(t->src_state);
	t->src_state = NULL;
}

static void jp_thread_free(jp_thread *t)
{
	jp_thread_owned_free(t);
	jp_arena_free(&t->nodes);
	jp_arena_free(&t->seqs);
	free(t->name);
	free(t->name_old);
	free(t);
}

/* jp_thread_new makes a record with its root, not yet listed nor
 * anyone's (thread_priv.h). */
jp_thread *jp_thread_new(const char *name)
{
	jp_thread *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->nodes.stride = jp.node_stride;
	t->seqs.stride = sizeof(jp_seqcount);
	t->stack_cap = 64;
	t->stack = calloc(t->stack_cap, sizeof(jp_frame));
	t->name = strdup(name != NULL ? name : "unknown");
	int ok = t->stack != NULL && t->name != NULL && jp_map_init(&t->children, 64) == 0 &&
		 jp_map_init(&t->seqmap, jp.calibrate ? 64 : 2) == 0;
	uint32_t root = ok ? jp_arena_push(&t->nodes) : UINT32_MAX;
	if (root != 0) {
		jp_thread_free(t);
		return NULL;
	}
	jp_node *r = jp_node_at(t, 0);
	r->type = JP_T_OTHER; /* the root is its own parent */
	r->seqkey = JP_NOKEY;
	jp_arena_publish(&t->nodes, 0);
	jp_frame_set(&t->stack[0], 0, 0, r);
	t->prev_running = JP_T_OTHER;
	t->prev_tr = JP_TR_ENTRY;
	t->epoch = __atomic_load_n(&jp.epoch, __ATOMIC_ACQUIRE);
	t->start_ns = jp_mono_ns();
	t->minima = jp.minima;
	return t;
}

/* jp_thread_list gives the record its id and makes it visible to Go. */
void jp_thread_list(jp_thread *t)
{
	t->id = __atomic_fetch_add(&jp.nthreads, 1, __ATOMIC_RELAXED);
	jp_list_push(&jp.threads, t);
}

jp_thread *jp_thread_attach(const char *name)
{
	jp_thread *t = jp_thread_new(name);
	if (t == NULL)
		return NULL;
	t->tid = (int)syscall(SYS_gettid);
	jp_ptt_thread_init(&t->ptt);
	t->minima = jp.minima_fb != NULL && t->ptt.backend != jp_ptt.backend ? jp.minima_fb : jp.minima;
	t->ptt_used = t->ptt.backend;
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);

	jp_thread_list(t);
	jp_self = t;
	return t;
}

jp_thread *jp_thread_foreign(const char *name, int tid)
{
	jp_thread *t = jp_thread_new(name);
	if (t == NULL)
		return NULL;
	t->tid = tid;
	jp_thread_list(t);
	return t;
}

void jp_thread_foreign_end(jp_thread *t)
{
	jp_thread_end(t);
}

void jp_thread_rename(jp_thread *t, const char *name)
{
	char *n = strdup(name);
	if (n == NULL)
		return;
	/* Readers copy the name under Go's list lock, at any time: the old
	 * one is kept (one earlier name; older ones are freed here, which
	 * only a second rename could reach, and nothing renames twice) and
	 * freed with the record, never while a reader may hold it. */
	char *old = __atomic_exchange_n(&t->name, n, __ATOMIC_ACQ_REL);
	free(t->name_old);
	t->name_old = old;
}


/* jp_thread_end ends a record that no thread runs on any more. */
void jp_thread_end(jp_thread *t)
{
	/* The final log-gen drain at VM death may run now, on another
	 * thread, and take the partial buffer itself (a ThreadEnd callback
	 * still in flight while VMDeath runs): whoever swaps it out owns it,
	 * never both. */
	jp_genbuf *g = __atomic_exchange_n(&t->gen, NULL, __ATOMIC_ACQ_REL);
	if (g != NULL) {
		if (g->used > 0)
			jp_gen_handover(g);
		else
			free(g);
	}
	jp_thread_owned_free(t);
	t->end_ns = jp_mono_ns();
	/* Once ended is set, the record is Go's: its periodic pass (Retire)
	 * may pack or free it at once, so this thread must not touch it
	 * after the store. Packing it here (threads end by the thousands:
	 * waiting for Go's next pass holds their live-sized records) is done
	 * with the list lock taken before the store, never after. Not for a
	 * large tree: that is often the main thread at the very end, and the
	 * final report would unpack it again at once; Go's pass takes it a
	 * second later if the VM lives on. Not when a report is being read
	 * either (the lock is busy): Go's pass does it then. */
	if (t->nodes.n <= JP_PACK_AT_END_NODES && pthread_mutex_trylock(&jp_list_mu) == 0) {
		__atomic_store_n(&t->ended, 1, __ATOMIC_RELEASE);
		jp_thread *prev = NULL;
		for (jp_thread *p = jp_threads(); p != NULL && p != t; p = p->next)
			prev = p;
		jp_thread_pack(t, prev);
		pthread_mutex_unlock(&jp_list_mu);
		return;
	}
	__atomic_store_n(&t->ended, 1, __ATOMIC_RELEASE);
}

void jp_charge(jp_thread *t, const jp_ptt_reading *r)
{
	if (!jp_ptt_metrics() || !jp_busy_enter(t))
		return;
	if (t->epoch != __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED)) {
		jp_busy_leave(t);
		return;
	}
	jp_node *nd = t->stack[t->depth].np;
	for (int m = 0; m < jp.nmetrics; m++)
		if ((int64_t)(r->v[m] - t->last.v[m]) > 0)
			nd->base[m] += r->v[m] - t->last.v[m];
	if (r->dispatches >= t->last.dispatches)
		jp_count32(&nd->ds, r->dispatches - t->last.dispatches);
	if (r->interrupts >= t->last.interrupts)
		jp_count32(&nd->in, r->interrupts - t->last.interrupts);
	jp_busy_leave(t);
}

void jp_thread_detach(void)
{
	jp_thread *t = jp_self;
	if (t != NULL && t->virt) {
		/* A carrier ending with a virtual thread still mounted: its
		 * own record is the one to end. */
		jp_vthread_unmount(t);
		t = jp_self;
	}
	if (t == NULL)
		return;
	/* The record no longer belongs to this OS thread: the thread may be
	 * attached again (the launcher's main thread comes back as
	 * DestroyJavaVM to run the shutdown hooks), and that is a new Java
	 * thread with a tree and a PTT registration of its own. Readings
	 * across fini would mix two clocks. */
	jp_self = NULL;
	/* What it ran after its last event (code outside every method
	 * collected: with INCLUDE, often most of it) is charged to its
	 * running frame, its root when none is open, as an event then would
	 * have: else a thread's total would stop at its last event. Not
	 * after its last root exit with ROOTS, where the root counts only
	 * between roots; nor with a log-gen, which holds events only, and
	 * whose tree must be the log-rt's. */
	if (jp_ptt_metrics() && !jp.loggen && (t->depth > 0 || !jp.roots)) {
		jp_ptt_reading r;
		jp_ptt_read(&t->ptt, &r);
		jp_charge(t, &r);
	}
	jp_ptt_thread_fini(&t->ptt);
	jp_thread_end(t);
}

static unsigned char *jp_put_uvarint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* jp_pack_tree encodes a thread's nodes and sequence counts: per node
 * (index i) i - parent, type, method, calls, excs, ds, in, its first
 * key's count (seqn) and, if not 0, the key, and its nmetrics base
 * values; then per sequence count node, key and count. Returns a
 * malloc'd buffer and its length, or NULL. */
static unsigned char *jp_pack_tree(const jp_thread *t, uint32_t nn, uint32_t ns, uint32_t *len)
{
	size_t max = (size_t)nn * (10 * (9 + (size_t)jp.nmetrics) + 1) + (size_t)ns * 30 + 1;
	unsigned char *buf = malloc(max), *p = buf;
	if (buf == NULL)
		return NULL;
	for (uint32_t i = 0; i < nn; i++) {
		const jp_node *nd = jp_node_at(t, i);
		p = jp_put_uvarint(p, i - nd->parent);
		*p++ = nd->type;
		p = jp_put_uvarint(p, i == 0 ? 0 : nd->method);
		p = jp_put_uvarint(p, nd->calls);
		p = jp_put_uvarint(p, nd->excs);
		p = jp_put_uvarint(p, nd->ds);
		p = jp_put_uvarint(p, nd->in);
		p = jp_put_uvarint(p, nd->seqn);
		if (nd->seqn != 0)
			p = jp_put_uvarint(p, nd->seqkey);
		for (int k = 0; k < jp.nmetrics; k++)
			p = jp_put_uvarint(p, nd->base[k]);
	}
	for (uint32_t i = 0; i < ns; i++) {
		const jp_seqcount *sc = jp_seq_at(t, i);
		p = jp_put_uvarint(p, sc->node);
		p = jp_put_uvarint(p, sc->key);
		p = jp_put_uvarint(p, sc->count);
	}
	*len = (uint32_t)(p - buf);
	unsigned char *exact = realloc(buf, *len ? *len : 1);
	return exact != NULL ? exact : buf;
}

/* jp_thread_unlink takes t out of jp.threads; prev is its predecessor or
 * NULL if it was the head when Go looked (C threads may have pushed
 * since). */
static int jp_thread_unlink(jp_thread *t, jp_thread *prev)
{
	if (prev != NULL) {
		prev->next = t->next;
		return 0;
	}
	jp_thread *h = t;
	if (__atomic_compare_exchange_n(&jp.threads, &h, t->next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	jp_thread *p = h;
	while (p != NULL && p->next != t)
		p = p->next;
	if (p == NULL)
		return -1;
	p->next = t->next;
	return 0;
}

void jp_list_lock(void)
{
	pthread_mutex_lock(&jp_list_mu);
}

void jp_list_unlock(void)
{
	pthread_mutex_unlock(&jp_list_mu);
}

jp_ended *jp_thread_pack(jp_thread *t, jp_thread *prev)
{
	if (!t->ended)
		return NULL;
	jp_ended *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->id = t->id;
	e->tid = t->tid;
	e->start_ns = t->start_ns;
	e->end_ns = t->end_ns;
	e->events = t->events;
	e->unmatched_exits = t->unmatched_exits;
	e->missed_exits = t->missed_exits;
	e->alloc_failures = t->alloc_failures;
	e->nnodes = t->nodes.n;
	e->nseqs = t->seqs.n;
	e->fallback = t->virt ? (uint8_t)t->vt_fallback
			      : jp.minima_fb != NULL && t->minima == jp.minima_fb ? (uint8_t)t->ptt_used : 0;
	e->virt = t->virt != 0;
	e->packed = jp_pack_tree(t, e->nnodes, e->nseqs, &e->packed_len);
	if (e->packed == NULL || jp_thread_unlink(t, prev) != 0) {
		free(e->packed);
		free(e);
		return NULL;
	}
	e->name = t->name;
	t->name = NULL;
	jp_thread_free(t);
	e->next = jp.ended;
	jp.ended = e;
	return e;
}

void jp_ended_free(jp_ended *e, jp_ended *prev)
{
	if (prev != NULL)
		prev->next = e->next;
	else
		jp.ended = e->next;
	free(e->packed);
	free(e->name);
	free(e);
}

void jp_thread_retire(jp_thread *t, jp_thread *prev)
{
	if (jp_thread_unlink(t, prev) == 0)
		jp_thread_free(t);
}

int jp_engine_init(const jp_source *src, int calibrate, int loggen, uint32_t max_methods, char *err, int errlen)
{
	jp.source = src;
	jp.max_methods = max_methods;
	jp.calibrate = calibrate && jp_ptt.nmetrics > 0;
	jp.nmetrics = jp_ptt.nmetrics;
	jp.node_stride = (uint32_t)(sizeof(jp_node) + sizeof(uint64_t) * (size_t)jp.nmetrics);
	if (jp.nmetrics) {
		size_t n = (size_t)JP_NKEYS * (size_t)jp.nmetrics;
		jp.minima = malloc(sizeof(uint64_t) * n);
		jp.env = calloc(n, sizeof(int64_t));
		jp.tmin = malloc(sizeof(uint64_t) * n);
		if (jp.minima == NULL || jp.env == NULL || jp.tmin == NULL) {
			snprintf(err, errlen, "no memory for the calibration minima");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			jp.minima[i] = jp.tmin[i] = UINT64_MAX;
		/* Whatever the backend: it may be set up after the engine
		 * (announced, ptt.Announce), and the array is small. */
		if (jp.calibrate) {
			jp.minima_fb = malloc(sizeof(uint64_t) * n);
			if (jp.minima_fb == NULL) {
				snprintf(err, errlen, "no memory for the calibration minima");
				return -1;
			}
			for (size_t i = 0; i < n; i++)
				jp.minima_fb[i] = UINT64_MAX;
		}
	}
	jp.loggen = loggen != 0;
	jp.genraw = loggen == 2;
	return 0;
}

void jp_thread_seed(jp_thread *t, const uintptr_t *keys, uint32_t n)
{
	/* Not after a stop: the epoch stays old, so the next callback seeds
	 * again if collection is on by then. */
	if (!jp_busy_enter(t))
		return;
	/* What jp_event does at an epoch change, with the stack seeded. */
	t->epoch = __atomic_load_n(&jp.epoch, __ATOMIC_ACQUIRE);
	t->depth = 0;
	t->lost = 0;
	t->prev_running = JP_T_OTHER;
	t->prev_tr = JP_TR_ENTRY;
	if (n >= t->stack_cap) {
		jp_frame *ns = realloc(t->stack, ((size_t)n + 64) * sizeof(jp_frame));
		if (ns == NULL) {
			t->alloc_failures++;
			n = 0;
		} else {
			t->stack = ns;
			t->stack_cap = n + 64;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t node = jp_child(t, t->stack[t->depth].node, keys[i], 1);
		if (node == UINT32_MAX)
			break; /* the rest hang off the deepest seeded frame */
		jp_node *nd = jp_node_at(t, node);
		nd->calls++;
		t->depth++;
		jp_frame_set(&t->stack[t->depth], keys[i], node, nd);
	}
	if (jp.nmetrics) {
		/* jp_event discards the first delta of an epoch (0, unclean) by
		 * taking its Early Read as the previous Late Read; with the
		 * epoch already current it will not. A previous reading far in
		 * the future does the same: the delta goes negative, which
		 * jp_event counts as 0 and learns nothing from. Dispatches and
		 * interrupts count from here. */
		jp_ptt_read(&t->ptt, &t->last);
		for (int m = 0; m < jp.nmetrics; m++)
			t->last.v[m] += 1ull << 62;
	}
	jp_busy_leave(t);
}

void jp_collect(int on)
{
	if (on)
		__atomic_add_fetch(&jp.epoch, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&jp.collecting, on, __ATOMIC_RELEASE);
}

static int jp_fence_registered; /* 1 yes, -1 refused */

void jp_fence_register(void)
{
	if (__atomic_load_n(&jp_fence_registered, __ATOMIC_ACQUIRE) == 0)
		__atomic_store_n(&jp_fence_registered,
				 syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 1 : -1,
				 __ATOMIC_RELEASE);
}

int jp_fence(void)
{
	jp_fence_register();
	if (__atomic_load_n(&jp_fence_registered, __ATOMIC_ACQUIRE) == 1 &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
		return MEMBARRIER_CMD_PRIVATE_EXPEDITED;
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return MEMBARRIER_CMD_GLOBAL;
	return 0;
}
