/*
 * arena.h: the layout of the engine's storage: append-only arenas, which
 * Go reads while their owner appends, and the owner-only map. Apart
 * because the registry, thread records and sampled trees are all built
 * on it, and Go reads arenas itself (engine/arena.go); the inline
 * operations that write them are in store.h.
 */
#ifndef JP_ARENA_H
#define JP_ARENA_H

#include <stdint.h>

/* ---------------------------------------------------------------------
 * Append-only storage: elements never move, so Go can read element
 * i < n (n loaded with acquire) while the owner appends. Chunk k holds
 * 8<<k elements: small threads stay small.
 */
#define JP_CHUNK0_SHIFT 3
#define JP_NCHUNKS 29 /* up to 2^32 elements */
typedef struct jp_arena {
	uint32_t n;      /* published with release ordering */
	uint32_t stride; /* element size in bytes */
	char *chunks[JP_NCHUNKS];
} jp_arena;

static inline void *jp_arena_at(const jp_arena *a, uint32_t i)
{
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j); /* j in [2^k, 2^(k+1)) */
	uint64_t off = j - (1ull << k);
	return a->chunks[k - JP_CHUNK0_SHIFT] + off * a->stride;
}

static inline uint32_t jp_arena_len(const jp_arena *a)
{
	return __atomic_load_n(&a->n, __ATOMIC_ACQUIRE);
}

/* Owner-only hash map (k1, k2) -> val, open addressing; k1 == 0 marks
 * an empty slot. */
typedef struct jp_slot {
	uintptr_t k1;
	uint32_t k2;
	uint32_t val;
} jp_slot;

typedef struct jp_map {
	jp_slot *slots;
	uint32_t mask;
	uint32_t used;
} jp_map;

/* jp_map_due says whether m's next entry makes it grow: at 3/4 load. A
 * fuller map costs a longer probe (two and a half slots for a key that
 * is there, against one and a half at half load; four slots share a
 * cache line, so mostly the same line), and saves a third of the map's
 * memory on average: on a VM, memory a tree touches for the first time
 * costs more than the probes (page clearing and the hypervisor's faults,
 * milliseconds a MiB). */
static inline int jp_map_due(const jp_map *m)
{
	return (uint64_t)(m->used + 1) * 4 > ((uint64_t)m->mask + 1) * 3;
}

/* A thread's edge cache (jp_thread.edges): JP_EDGES slots (64 KiB), made
 * once its child map holds JP_EDGES_FROM edges (a tree of megabytes). */
#define JP_EDGES (1u << 12)
#define JP_EDGES_FROM (1u << 14)

#endif /* JP_ARENA_H */
