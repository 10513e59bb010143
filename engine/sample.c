/*
 * sample.c: the sampled tree (PCCT). A sample is a stack, top first; it
 * adds one to the calls of every context on it, from the root down, and
 * its weight to the top context's base. It runs in a signal handler
 * that may have interrupted malloc itself: what it touches was made by
 * jp_pcct_init, or by jp_pcct_grow with mmap.
 *
 * The child map is sized for the node capacity at half load, so a probe
 * always ends; it grows with the capacity, by whole copies. Consecutive
 * samples of one thread mostly share their outer frames: the path of the
 * previous sample is kept, and the common prefix reuses its nodes
 * without a map probe (what is left of Whaley's "stop at the first
 * visited frame" when the walker cannot mark frames: it saves the tree
 * update, not the walk).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "store.h"

static uint32_t jp_pow2_at_least(uint64_t n)
{
	uint32_t c = 8;
	while (c < n && c < (1u << 31))
		c <<= 1;
	return c;
}

/* jp_pcct_node fills in node n, pushed into t's arena and not yet
 * published. */
static void jp_pcct_fill(jp_thread *t, uint32_t n, uint32_t parent, uint32_t h)
{
	jp_node *nd = jp_node_at(t, n);
	nd->parent = parent;
	const jp_method *m = jp_method_at(h);
	nd->type = m->type;
	if (!m->used) /* tells a lazily named method's source to name it */
		__atomic_store_n(&((jp_method *)m)->used, 1, __ATOMIC_RELAXED);
	nd->seqkey = JP_NOKEY;
	nd->method = h;
	jp_arena_publish(&t->nodes, n);
}

int jp_pcct_init(jp_thread *t, jp_pcct *p, uint32_t max_nodes, uint32_t depth, uint32_t limit_method)
{
	memset(p, 0, sizeof *p);
	if (max_nodes < 2 || depth < 1)
		return -1;
	uint32_t cap = max_nodes < JP_PCCT_FIRST ? max_nodes : JP_PCCT_FIRST;
	if (jp_arena_reserve(&t->nodes, cap) != 0)
		return -1;
	/* Whatever the whole chunks hold beyond cap stays unused until the
	 * tree grows: the capacity is the one asked for. */
	p->cap = cap;
	p->max_nodes = max_nodes;
	uint32_t slots = jp_pow2_at_least((uint64_t)cap * 2);
	p->mask = slots - 1; /* before any allocation: jp_pcct_free sizes slots by it */
	p->slots = jp_zalloc((size_t)slots * sizeof(jp_slot));
	p->prev_h = calloc(depth, sizeof(uint32_t));
	p->prev_node = calloc(depth, sizeof(uint32_t));
	if (p->slots == NULL || p->prev_h == NULL || p->prev_node == NULL) {
		jp_pcct_free(p);
		return -1;
	}
	p->depth = depth;
	uint32_t n = jp_arena_push_ready(&t->nodes);
	if (n == UINT32_MAX) {
		jp_pcct_free(p);
		return -1;
	}
	jp_pcct_fill(t, n, 0, limit_method);
	p->limit_node = n;
	return 0;
}

/* jp_pcct_grow doubles p's room, up to max_nodes, until it holds need
 * nodes: the arena's next chunks, and a map twice as large with the
 * entries moved over. It runs in the signal handler, so only mmap and
 * munmap: the arena's chunks past JP_PCCT_FIRST nodes are that large
 * (jp_zalloc maps them), and so is a map for JP_PCCT_FIRST nodes (a
 * smaller one was calloc's, and is not grown). The map is the owner's
 * alone: no reader to wait for. 0 when p has room for need. */
static int jp_pcct_grow(jp_thread *t, jp_pcct *p, uint64_t need)
{
	while (p->cap < need && p->cap < p->max_nodes) {
		size_t old_bytes = ((size_t)p->mask + 1) * sizeof(jp_slot);
		if (p->cap < JP_PCCT_FIRST || old_bytes < JP_ZALLOC_MAP)
			return -1;
		uint32_t cap = p->cap > p->max_nodes / 2 ? p->max_nodes : p->cap * 2;
		if (jp_arena_reserve(&t->nodes, cap) != 0)
			return -1;
		uint32_t slots = jp_pow2_at_least((uint64_t)cap * 2);
		if (slots - 1 > p->mask) {
			/* No huge pages: the map is touched at random and
			 * mostly never (store.h). */
			jp_slot *ns = jp_map_block((size_t)slots * sizeof(jp_slot), 0);
			if (ns == NULL)
				return -1;
			for (uint32_t i = 0; i <= p->mask; i++) {
				const jp_slot *o = &p->slots[i];
				if (o->k1 == 0)
					continue;
				uint32_t j = jp_map_hash(o->k1, o->k2) & (slots - 1);
				while (ns[j].k1 != 0)
					j = (j + 1) & (slots - 1);
				ns[j] = *o;
			}
			jp_slot *old = p->slots;
			p->slots = ns;
			p->mask = slots - 1;
			munmap(old, old_bytes);
		}
		p->cap = cap;
	}
	return p->cap >= need ? 0 : -1;
}

void jp_pcct_free(jp_pcct *p)
{
	jp_zfree(p->slots, ((size_t)p->mask + 1) * sizeof(jp_slot));
	free(p->prev_h);
	free(p->prev_node);
	p->slots = NULL;
	p->prev_h = p->prev_node = NULL;
}

/* jp_pcct_child finds or makes the node of method h under parent;
 * UINT32_MAX when the capacity is reached. */
static uint32_t jp_pcct_child(jp_thread *t, jp_pcct *p, uint32_t parent, uint32_t h)
{
	uintptr_t k1 = (uintptr_t)h + 1;
	uint32_t i = jp_map_hash(k1, parent) & p->mask;
	for (;;) {
		jp_slot *s = &p->slots[i];
		if (s->k1 == k1 && s->k2 == parent)
			return s->val;
		if (s->k1 == 0) {
			if (t->nodes.n >= p->cap)
				return UINT32_MAX;
			uint32_t n = jp_arena_push_ready(&t->nodes);
			if (n == UINT32_MAX)
				return UINT32_MAX;
			jp_pcct_fill(t, n, parent, h);
			s->k2 = parent;
			s->val = n;
			s->k1 = k1;
			return n;
		}
		i = (i + 1) & p->mask;
	}
}

/* jp_pcct_weigh adds a sample's weights to a node's base values. */
static inline void jp_pcct_weigh(jp_node *nd, const uint64_t *w, int nw)
{
	for (int k = 0; k < nw && k < jp.nmetrics; k++)
		nd->base[k] += w[k];
}

/* jp_pcct_limit charges a sample to the limit node. */
static int jp_pcct_limit(jp_thread *t, jp_pcct *p, const uint64_t *w, int nw)
{
	jp_node *ln = jp_node_at(t, p->limit_node);
	ln->calls++;
	jp_pcct_weigh(ln, w, nw);
	p->limited++;
	p->samples++;
	t->events++;
	return 1;
}

int jp_pcct_add(jp_thread *t, jp_pcct *p, const uint32_t *leaf, uint32_t n, uint64_t weight)
{
	return jp_pcct_add_w(t, p, leaf, n, &weight, 1);
}

int jp_pcct_add_w(jp_thread *t, jp_pcct *p, const uint32_t *leaf, uint32_t n, const uint64_t *w, int nw)
{
	if (n > p->depth)
		n = p->depth; /* the caller's buffers are p->depth long */
	/* Room for a whole new path before the first probe (growing moves
	 * the map's slots). */
	if ((uint64_t)t->nodes.n + n >= p->cap && p->cap < p->max_nodes)
		(void)jp_pcct_grow(t, p, (uint64_t)t->nodes.n + n + 1);
	uint32_t node = 0, d = 0;
	if (n == 1 && p->prev_n > 0 && p->prev_h[0] != leaf[0]) {
		/* A lone frame (a pseudo-frame for a stack the walker could
		 * not walk) keeps the previous path for the next sample,
		 * which most likely shares it. */
		node = jp_pcct_child(t, p, 0, leaf[0]);
		if (node == UINT32_MAX)
			return jp_pcct_limit(t, p, w, nw);
		jp_node *nd = jp_node_at(t, node);
		nd->calls++;
		jp_pcct_weigh(nd, w, nw);
		p->samples++;
		t->events++;
		return 0;
	}
	/* The prefix shared with the previous sample: known nodes. */
	while (d < n && d < p->prev_n && p->prev_h[d] == leaf[n - 1 - d]) {
		node = p->prev_node[d];
		d++;
	}
	for (; d < n; d++) {
		uint32_t h = leaf[n - 1 - d];
		uint32_t c = jp_pcct_child(t, p, node, h);
		if (c == UINT32_MAX) {
			/* No room for this path: the whole sample goes to the
			 * limit node, so that no context shows samples that
			 * were not all its own. Nodes made for the path so far
			 * keep zero calls, which the reports leave out. */
			p->prev_n = d;
			return jp_pcct_limit(t, p, w, nw);
		}
		p->prev_h[d] = h;
		p->prev_node[d] = c;
		node = c;
	}
	p->prev_n = n;
	for (d = 0; d < n; d++)
		jp_node_at(t, p->prev_node[d])->calls++;
	if (n > 0)
		jp_pcct_weigh(jp_node_at(t, node), w, nw);
	p->samples++;
	t->events++;
	return 0;
}
