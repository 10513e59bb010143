/*
 * seqcount.h: a node's counts of calibration keys (how many events of
 * each key were charged to it), which calibration multiplies by each
 * key's overhead. Apart from event.c, their one writer, so that the
 * engine's tests can drive them (engine/internal/ctest).
 */
#ifndef JP_SEQCOUNT_H
#define JP_SEQCOUNT_H

#include "engine.h"
#include "store.h"

/* jp_seq_inc adds one to a count. The store is a release (a plain store
 * on x86-64): a live reader, which reads the counts before the nodes'
 * values, never sees a count whose event's value is not yet visible
 * (which arm64 could otherwise reorder), so calibration never removes
 * more than the values read account for. */
static inline void jp_seq_inc(uint64_t *c)
{
	__atomic_store_n(c, *c + 1, __ATOMIC_RELEASE);
}

/* jp_seq_new appends a count of 1 of key for node and returns its index
 * (no memory: UINT32_MAX, and nothing is counted). */
static inline uint32_t jp_seq_new(jp_thread *t, uint32_t node, uint32_t key)
{
	uint32_t i = jp_arena_push(&t->seqs);
	if (i == UINT32_MAX) {
		t->alloc_failures++;
		return i;
	}
	t->grew |= jp_arena_prefault(&t->seqs, i, 1);
	jp_seqcount *sc = jp_seq_at(t, i);
	sc->node = node;
	sc->key = key;
	sc->count = 1;
	jp_arena_publish(&t->seqs, i);
	return i;
}

/* jp_seq_group finds key in the node's group of counts, claiming a free
 * place for it, and makes the group the first time. NULL when the group
 * is full or there is no memory for one: the caller uses the map. */
static inline jp_seqcount *jp_seq_group(jp_thread *t, jp_node *np, uint32_t node, uint32_t key)
{
	if (np->seqs == 0) {
		/* The group must not straddle two arena chunks: pad to the
		 * next chunk when it would (at most JP_NCHUNKS times). */
		uint32_t i = t->seqs.n;
		while (jp_arena_chunk_of(i) != jp_arena_chunk_of(i + JP_SEQ_GROUP - 1)) {
			if (jp_arena_push(&t->seqs) != i)
				return NULL;
			jp_seq_at(t, i)->node = node;
			jp_arena_publish(&t->seqs, i);
			i++;
		}
		if (jp_arena_push(&t->seqs) != i) /* the chunk holding the whole group */
			return NULL;
		t->grew |= jp_arena_prefault(&t->seqs, i, JP_SEQ_GROUP);
		for (uint32_t j = 0; j < JP_SEQ_GROUP; j++)
			jp_seq_at(t, i + j)->node = node;
		jp_arena_publish(&t->seqs, i + JP_SEQ_GROUP - 1);
		np->seqs = i + 1;
	}
	jp_seqcount *c = jp_seq_at(t, np->seqs - 1);
	for (int j = 0; j < JP_SEQ_GROUP; j++) {
		if (c[j].count == 0) {
			c[j].key = key;
			/* A live reader must not see the count before the key. */
			__atomic_thread_fence(__ATOMIC_RELEASE);
			return &c[j];
		}
		if (c[j].key == key)
			return &c[j];
	}
	return NULL;
}

/* jp_seq_count counts one event of key attributed to node. A node's
 * first key is counted in the node itself (seqkey, seqn); its next keys
 * share a group, where the first key also gets a count once seqn is full
 * (readers add them); past the group, the thread's map of counts. */
static inline void jp_seq_count(jp_thread *t, jp_node *np, uint32_t node, uint32_t key)
{
	if (__builtin_expect(np->seqkey == key && np->seqn != UINT32_MAX, 1)) {
		__atomic_store_n(&np->seqn, np->seqn + 1, __ATOMIC_RELEASE); /* as jp_seq_inc */
		return;
	}
	if (np->seqkey == JP_NOKEY) {
		np->seqkey = (uint16_t)key;
		/* A live reader must not see the count before the key. */
		__atomic_store_n(&np->seqn, 1, __ATOMIC_RELEASE);
		return;
	}
	if (np->seqlast != 0) {
		jp_seqcount *c = jp_seq_at(t, np->seqlast - 1);
		if (c->key == key) {
			jp_seq_inc(&c->count);
			return;
		}
	}
	jp_seqcount *sc;
	uint32_t ix;
	if ((sc = jp_seq_group(t, np, node, key)) != NULL) {
		jp_seq_inc(&sc->count);
		ix = np->seqs - 1 + (uint32_t)(sc - jp_seq_at(t, np->seqs - 1));
	} else {
		jp_slot *s = jp_map_find(&t->seqmap, (uintptr_t)key + 1, node);
		if (s->k1 != 0) {
			ix = s->val;
			jp_seq_inc(&jp_seq_at(t, ix)->count);
		} else {
			ix = jp_seq_new(t, node, key);
			if (ix == UINT32_MAX)
				return;
			uint32_t mask = t->seqmap.mask;
			int put = jp_map_put(&t->seqmap, s, (uintptr_t)key + 1, node, ix);
			t->grew |= t->seqmap.mask != mask;
			if (put != 0) {
				t->alloc_failures++;
				return; /* counted, but not cached either */
			}
		}
	}
	np->seqlast = ix + 1;
}

#endif /* JP_SEQCOUNT_H */
