/*
 * pcct.h: sampled trees (sample.c), built from stack samples in a
 * thread's own node arena. Apart because only the sampling source uses
 * them; the exact sources never do.
 */
#ifndef JP_PCCT_H
#define JP_PCCT_H

#include <stdint.h>
#include "arena.h"
#include "thread.h"

/* ---------------------------------------------------------------------
 * Sampled trees (sample.c): a partial calling context tree (Whaley's
 * PCCT) built from stack samples in a thread's own node arena, so the
 * reports read it as they read an exact tree. jp_pcct_add runs in a
 * signal handler: it never calls malloc nor takes a lock. Its storage
 * (the nodes in the thread's arena, the child map, the previous sample's
 * path) is made by jp_pcct_init for the first JP_PCCT_FIRST nodes; past
 * them a sample grows the arena and the map itself, with mmap and munmap
 * only (system calls, which a signal handler may make, where malloc may
 * have been interrupted holding its lock), doubling, up to max_nodes; a
 * sample whose path needs a node past max_nodes is counted, and charged
 * to the limit node under the root.
 *
 * Node values: calls = samples with this context on the stack (Whaley's
 * edge weight); base[0] (when there is a metric) = the metric the
 * samples with this context on top stand for (his node time).
 */
typedef struct jp_pcct {
	jp_slot *slots;      /* (handle+1, parent) -> node; the owner's alone */
	uint32_t mask;
	uint32_t cap;        /* nodes the arena and the map hold now */
	uint32_t max_nodes;  /* nodes they may grow to */
	uint32_t limit_node; /* where samples past the capacity go */
	uint32_t depth;      /* room in the path buffers */
	uint32_t prev_n;     /* length of the previous sample's path */
	uint32_t *prev_h;    /* its handles, root first */
	uint32_t *prev_node; /* its nodes */
	uint64_t samples;    /* samples recorded */
	uint64_t limited;    /* samples charged to the limit node */
} jp_pcct;

/* JP_PCCT_FIRST: the nodes a sampled tree has storage for from its start
 * (a thread's first samples must not fault in much memory). */
#define JP_PCCT_FIRST 16384u

/* jp_pcct_init makes p's storage for thread t (owner thread, or before
 * any sample of t can run): the arena reserved for the first
 * min(max_nodes, JP_PCCT_FIRST) nodes, a child map that holds them, path
 * buffers for depth frames, and the limit node (method limit_method)
 * under the root. 0, or -1 without memory. */
int jp_pcct_init(jp_thread *t, jp_pcct *p, uint32_t max_nodes, uint32_t depth, uint32_t limit_method);
/* jp_pcct_free frees the storage jp_pcct_init made beside the arena. */
void jp_pcct_free(jp_pcct *p);
/* jp_pcct_add records one sample of thread t: leaf[0] is the handle of
 * the method on top of the stack, leaf[n-1] the outermost one (the order
 * stack walkers give). weight goes to the top context's base[0].
 * Async-signal-safe; runs on t's own thread (or with t stopped).
 * Returns 1 when the sample went to the limit node, else 0. */
int jp_pcct_add(jp_thread *t, jp_pcct *p, const uint32_t *leaf, uint32_t n, uint64_t weight);
/* jp_pcct_add_w is jp_pcct_add with a weight per metric: w[k] goes to
 * base[k] (k < nw and the engine's metrics). */
int jp_pcct_add_w(jp_thread *t, jp_pcct *p, const uint32_t *leaf, uint32_t n, const uint64_t *w, int nw);

#endif /* JP_PCCT_H */
