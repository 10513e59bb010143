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
#include <unistd.h>
#include <sys/syscall.h>
#include <time.h>

#include "engine.h"
#include "store.h"

jp_state jp;

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
	free(t->children.slots);
	t->children.slots = NULL;
	free(t->seqmap.slots);
	t->seqmap.slots = NULL;
}

static void jp_thread_free(jp_thread *t)
{
	jp_thread_owned_free(t);
	jp_arena_free(&t->nodes);
	jp_arena_free(&t->seqs);
	free(t->name);
	free(t);
}

jp_thread *jp_thread_attach(const char *name)
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
	t->stack[0].type = JP_T_OTHER;
	t->stack[0].np = r;
	t->prev_running = JP_T_OTHER;
	t->prev_tr = JP_TR_ENTRY;
	t->tid = (int)syscall(SYS_gettid);
	t->epoch = __atomic_load_n(&jp.epoch, __ATOMIC_ACQUIRE);
	t->start_ns = jp_mono_ns();
	t->id = __atomic_fetch_add(&jp.nthreads, 1, __ATOMIC_RELAXED);
	jp_ptt_thread_init(&t->ptt);
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);

	jp_list_push(&jp.threads, t);
	jp_self = t;
	return t;
}

void jp_thread_rename(jp_thread *t, const char *name)
{
	char *n = strdup(name);
	if (n == NULL)
		return;
	/* Readers copy the name under Go's list lock; the old one is freed
	 * with the record, never while a reader may hold it. */
	__atomic_store_n(&t->name, n, __ATOMIC_RELEASE);
}

/* jp_gen_handover is in loggen.c. */
void jp_gen_handover(jp_genbuf *b);

void jp_thread_detach(void)
{
	jp_thread *t = jp_self;
	if (t == NULL)
		return;
	/* The record no longer belongs to this OS thread: the thread may be
	 * attached again (the launcher's main thread comes back as
	 * DestroyJavaVM to run the shutdown hooks), and that is a new Java
	 * thread with a tree and a PTT registration of its own. Readings
	 * across fini would mix two clocks. */
	jp_self = NULL;
	jp_ptt_thread_fini(&t->ptt);
	if (t->gen != NULL) {
		if (t->gen->used > 0)
			jp_gen_handover(t->gen);
		else
			free(t->gen);
		t->gen = NULL;
	}
	jp_thread_owned_free(t);
	t->end_ns = jp_mono_ns();
	__atomic_store_n(&t->ended, 1, __ATOMIC_RELEASE);
}

/* jp_arena_compact packs an arena into one block of exactly n elements. */
static void jp_arena_compact(jp_arena *a)
{
	if (a->flat != NULL || a->n == 0)
		return;
	char *flat = malloc((size_t)a->n * a->stride);
	if (flat == NULL)
		return; /* stays chunked: correct, only larger */
	for (uint32_t i = 0; i < a->n; i++)
		memcpy(flat + (size_t)i * a->stride, jp_arena_at(a, i), a->stride);
	uint32_t n = a->n;
	jp_arena_free(a);
	a->n = n;
	a->flat = flat;
}

void jp_thread_compact(jp_thread *t)
{
	if (!t->ended)
		return;
	jp_arena_compact(&t->nodes);
	jp_arena_compact(&t->seqs);
}

void jp_thread_retire(jp_thread *t, jp_thread *prev)
{
	if (prev == NULL) {
		/* t is the head unless a thread pushed since: then it is the
		 * next of someone, found by walking from the new head. */
		jp_thread *h = t;
		if (!__atomic_compare_exchange_n(&jp.threads, &h, t->next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			jp_thread *p = h;
			while (p != NULL && p->next != t)
				p = p->next;
			if (p == NULL)
				return;
			p->next = t->next;
		}
	} else {
		prev->next = t->next;
	}
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
		jp.env = calloc(n, sizeof(uint64_t));
		if (jp.minima == NULL || jp.env == NULL) {
			snprintf(err, errlen, "no memory for the calibration minima");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			jp.minima[i] = UINT64_MAX;
	}
	jp.loggen = loggen != 0;
	jp.genraw = loggen == 2;
	return 0;
}

/* jp_seed_child finds or makes the Other-type context of key under
 * parent, keyed as event.c keys it (low bit set), so that later events
 * of the same context find the same node. */
static uint32_t jp_seed_child(jp_thread *t, uint32_t parent, uintptr_t key)
{
	uintptr_t k1 = key | 1;
	jp_slot *s = jp_map_find(&t->children, k1, parent);
	if (s->k1 != 0)
		return s->val;
	uint32_t h = jp.source->resolve(key);
	uint32_t n = jp_arena_push(&t->nodes);
	if (n == UINT32_MAX) {
		t->alloc_failures++;
		return UINT32_MAX;
	}
	jp_node *nd = jp_node_at(t, n);
	nd->parent = parent;
	nd->type = JP_T_OTHER;
	nd->seqkey = JP_NOKEY;
	nd->method = h;
	jp_arena_publish(&t->nodes, n);
	if (jp_map_put(&t->children, s, k1, parent, n) != 0)
		t->alloc_failures++;
	return n;
}

void jp_thread_seed(jp_thread *t, const uintptr_t *keys, uint32_t n)
{
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
		uint32_t node = jp_seed_child(t, t->stack[t->depth].node, keys[i]);
		if (node == UINT32_MAX)
			break; /* the rest hang off the deepest seeded frame */
		jp_node *nd = jp_node_at(t, node);
		nd->calls++;
		t->depth++;
		t->stack[t->depth].key = keys[i];
		t->stack[t->depth].node = node;
		t->stack[t->depth].np = nd;
		t->stack[t->depth].type = JP_T_OTHER;
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
}

void jp_collect(int on)
{
	if (on)
		__atomic_add_fetch(&jp.epoch, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&jp.collecting, on, __ATOMIC_RELEASE);
}
