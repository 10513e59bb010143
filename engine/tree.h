/*
 * tree.h: the nodes of a thread's calling context tree and the shadow
 * stack's frames, the layout the event path and the reports walk. Apart
 * from the thread record (thread.h), which holds them.
 */
#ifndef JP_TREE_H
#define JP_TREE_H

#include <stdint.h>

/* ---------------------------------------------------------------------
 * Per-thread call tree.
 */

/* One calling context. The metric arrays follow the fixed part; a node's
 * size (jp.node_stride) depends on how many metrics are collected: 64
 * bytes with one, a cache line, which the event path touches once per
 * event (a tree of millions of nodes misses the cache on most). The
 * counts other than calls are 32 bits and stop at UINT32_MAX
 * (jp_count32): a context left by exception, or switched out, four
 * billion times. */
typedef struct jp_node {
	uint32_t parent; /* index of the caller's node; the root is its own parent */
	uint8_t type;    /* enum jp_type as seen in this context */
	uint8_t pad;
	/* The node's first calibration key and its count, kept here: most
	 * nodes are leaves with one key (entry to exit), and this line is
	 * the one the event writes anyway, where a count of its own would
	 * cost another line (a cache miss on a large tree) and 16 bytes.
	 * Past UINT32_MAX the key's events go on in the group (readers add
	 * its counts). seqkey is JP_NOKEY while seqn is 0. */
	uint16_t seqkey;
	uint32_t method; /* registry handle; unused for the root */
	uint32_t seqs;   /* 1 + index of the node's own group of JP_SEQ_GROUP counts, 0 if none yet */
	uint32_t seqn;
	uint32_t seqlast; /* owner-only: 1 + index in seqs of the other key counted last, 0 if none */
	/* Owner-only cache: the child last found in the thread's child map
	 * from this context (ckey 0: none). Most activations of a context
	 * call what the last one called, and the node is in the cache when
	 * its method calls, while the map's slot is a cache miss. */
	uintptr_t ckey;
	uint32_t cnode;
	uint32_t excs;   /* exits from it by exception */
	uint64_t calls;  /* entries into this context */
	uint32_t ds;     /* dispatches while this was the running method */
	uint32_t in;     /* interrupts while this was the running method */
	uint64_t base[]; /* [nmetrics]: metric spent running this method */
} jp_node;

_Static_assert(sizeof(jp_node) == 56, "jp_node: 64 bytes with one metric");

/* jp_count32 adds d to a 32-bit count, stopping at UINT32_MAX. */
static inline void jp_count32(uint32_t *c, uint64_t d)
{
	uint64_t v = (uint64_t)*c + d;
	*c = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Shadow-stack frame. The node's address is kept here so that the event
 * path needs no arena lookup for the method that was running (its type
 * is the node's). 32 bytes. */
typedef struct jp_frame {
	uintptr_t key;   /* the source's key of the method */
	struct jp_node *np;
	/* The child this activation entered last, by source key (0: none):
	 * a method calling the same one again, as loops do, finds its node
	 * here instead of in the thread's child map, a cache miss on large
	 * trees. */
	uintptr_t ckey;
	uint32_t node;
	uint32_t cnode;
} jp_frame;

/* jp_frame_set fills a frame for an activation of node (key's method),
 * with no child entered yet. */
static inline void jp_frame_set(jp_frame *f, uintptr_t key, uint32_t node, struct jp_node *np)
{
	f->key = key;
	f->np = np;
	f->ckey = 0;
	f->node = node;
}

#endif /* JP_TREE_H */
