/*
 * store.h: the engine's owner-only storage, inlined into the event path:
 * append-only arenas and open-addressing maps.
 */
#ifndef JP_STORE_H
#define JP_STORE_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "engine.h"

/* Zeroed storage of n bytes. Large blocks are mapped, not calloc'd: a
 * thread's arenas and sampled-tree map are reserved whole at its start
 * (up to megabytes) and mostly never touched, and glibc serves a large
 * calloc from its heap, zeroing all of it, once a freed mapping has
 * raised its mmap threshold. Threads come and go by the thousands.
 *
 * Arena chunks (jp_zalloc_lines) and maps (jp_walloc) of a huge page
 * or more ask for transparent huge pages: a big tree's arenas and child map
 * grow by tens of thousands of 4 KiB pages, and each first touch is a
 * page fault, which a virtual machine pays dearly for (on javac the
 * faults were a fifth of the agent's time on the program's thread).
 * Arenas fill in order and those maps are faulted in whole, so RSS grows
 * by at most one huge page per block more than it would. Not for
 * jp_zalloc's blocks, such as a sampled tree's map, which is
 * touched at random and mostly never. With THP off (or "never") the
 * advice is ignored. */
#define JP_ZALLOC_MAP (64u << 10)
#define JP_HUGE_PAGE (2u << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static inline void *jp_map_block(size_t n, int huge)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (huge && n >= JP_HUGE_PAGE)
		(void)madvise(p, n, MADV_HUGEPAGE);
	return p;
}

static inline void *jp_zalloc(size_t n)
{
	if (n < JP_ZALLOC_MAP)
		return calloc(1, n);
	return jp_map_block(n, 0);
}

/* jp_zalloc_lines is jp_zalloc asking for huge pages, aligned to a
 * cache line also when it is small (calloc aligns to 16 bytes): an
 * arena's records of 64 bytes then each take one line, the first
 * chunks' too, which hold a tree's hottest nodes. Freed with jp_zfree. */
static inline void *jp_zalloc_lines(size_t n)
{
	if (n >= JP_ZALLOC_MAP)
		return jp_map_block(n, 1);
	void *p = NULL;
	if (posix_memalign(&p, 64, n) != 0)
		return NULL;
	return memset(p, 0, n);
}

static inline void jp_zfree(void *p, size_t n)
{
	if (p == NULL)
		return;
	if (n < JP_ZALLOC_MAP)
		free(p);
	else
		munmap(p, n);
}

/* jp_walloc is jp_zalloc for storage that is read before it is written
 * (hash maps): a read of an untouched page of a fresh mapping maps the
 * shared zero page, so the write after it is a copy-on-write fault that
 * flushes the TLB of every CPU the process runs on (an IPI each). The
 * pages are faulted in for writing at once instead: by the kernel in one
 * call (MADV_POPULATE_WRITE, Linux 5.14), else by zeroing them here
 * (through a volatile pointer: compilers turn malloc+memset into
 * calloc). Freed with jp_zfree. */
static inline void *jp_walloc(size_t n)
{
	static void *(*volatile const zero)(void *, int, size_t) = memset;
	void *p;
	if (n < JP_ZALLOC_MAP) {
		if ((p = malloc(n)) != NULL)
			zero(p, 0, n);
		return p;
	}
	if ((p = jp_map_block(n, 1)) != NULL && madvise(p, n, MADV_POPULATE_WRITE) != 0)
		zero(p, 0, n);
	return p;
}

/* jp_arena_chunk_bytes is the size of chunk k. */
static inline size_t jp_arena_chunk_bytes(const jp_arena *a, int k)
{
	return ((size_t)1 << (k + JP_CHUNK0_SHIFT)) * a->stride;
}

static inline uint64_t jp_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* jp_arena_chunk_of is the chunk holding element i. */
static inline int jp_arena_chunk_of(uint32_t i)
{
	return 63 - __builtin_clzll((uint64_t)i + (1u << JP_CHUNK0_SHIFT)) - JP_CHUNK0_SHIFT;
}

/* jp_arena_push makes room for one more zeroed element and returns its
 * index without publishing it (jp_arena_publish does, once it is filled
 * in), or UINT32_MAX when memory runs out. */
static inline uint32_t jp_arena_push(jp_arena *a)
{
	uint32_t i = a->n;
	int k = jp_arena_chunk_of(i);
	if (k >= JP_NCHUNKS)
		return UINT32_MAX;
	if (a->chunks[k] == NULL) {
		char *c = jp_zalloc_lines(jp_arena_chunk_bytes(a, k));
		if (c == NULL)
			return UINT32_MAX;
		a->chunks[k] = c;
	}
	return i;
}

/* jp_arena_prefault faults in, for writing, the pages that elements
 * [i, i + n) of one chunk are the first to touch (an arena fills in
 * order), and says whether there were any. A chunk's pages would
 * otherwise fault as the elements are written, each fault (a huge page's
 * is milliseconds' worth of zeroing in a VM) charged to whatever method
 * the thread ran next; the caller makes its event read the metrics again
 * instead (jp_thread's grew). Chunks small enough to be calloc'd are
 * already touched. */
static inline int jp_arena_prefault(jp_arena *a, uint32_t i, uint32_t n)
{
	int k = jp_arena_chunk_of(i);
	size_t bytes = jp_arena_chunk_bytes(a, k);
	if (bytes < JP_ZALLOC_MAP || a->chunks[k] == NULL)
		return 0;
	size_t first = ((size_t)1 << (k + JP_CHUNK0_SHIFT)) - ((size_t)1 << JP_CHUNK0_SHIFT);
	size_t off = (i - first) * a->stride, end = off + (size_t)n * a->stride;
	size_t page = bytes >= JP_HUGE_PAGE ? JP_HUGE_PAGE : 4096;
	size_t from = off == 0 ? 0 : ((off - 1) / page + 1) * page; /* the first page not touched yet */
	if (from >= end)
		return 0;
	size_t to = ((end - 1) / page + 1) * page;
	if (to > bytes)
		to = bytes;
	(void)madvise((char *)a->chunks[k] + from, to - from, MADV_POPULATE_WRITE);
	return 1;
}

/* jp_arena_reserve gives elements [0, n) their storage now, so that
 * pushes up to at least n need no allocation (jp_arena_push_ready): for
 * writers that must not allocate, such as a signal handler. Whole chunks
 * are allocated, so the room may exceed n. Returns 0, or -1 without
 * memory (the chunks allocated stay). */
static inline int jp_arena_reserve(jp_arena *a, uint32_t n)
{
	for (int k = 0; k < JP_NCHUNKS; k++) {
		uint64_t first = ((uint64_t)1 << (k + JP_CHUNK0_SHIFT)) - (1u << JP_CHUNK0_SHIFT);
		if (first >= n)
			break;
		if (a->chunks[k] == NULL) {
			char *c = jp_zalloc(jp_arena_chunk_bytes(a, k));
			if (c == NULL)
				return -1;
			__atomic_store_n(&a->chunks[k], c, __ATOMIC_RELEASE);
		}
	}
	return 0;
}

/* jp_arena_push_ready is jp_arena_push that never allocates: UINT32_MAX
 * when the next element has no storage yet. Async-signal-safe. */
static inline uint32_t jp_arena_push_ready(jp_arena *a)
{
	uint32_t i = a->n;
	int k = jp_arena_chunk_of(i);
	if (k >= JP_NCHUNKS || __atomic_load_n(&a->chunks[k], __ATOMIC_ACQUIRE) == NULL)
		return UINT32_MAX;
	return i;
}

static inline void jp_arena_publish(jp_arena *a, uint32_t i)
{
	__atomic_store_n(&a->n, i + 1, __ATOMIC_RELEASE);
}

static inline void jp_arena_free(jp_arena *a)
{
	for (int k = 0; k < JP_NCHUNKS; k++) {
		jp_zfree(a->chunks[k], jp_arena_chunk_bytes(a, k));
		a->chunks[k] = NULL;
	}
}

static inline uint32_t jp_map_hash(uintptr_t k1, uint32_t k2)
{
	return (uint32_t)jp_mix((uint64_t)k1 ^ ((uint64_t)k2 << 43));
}

/* jp_map_find returns the slot of (k1, k2): either the one holding it or
 * the empty slot where it belongs. A map always keeps empty slots
 * (jp_map_put), so the probe ends. */
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

static inline int jp_map_init(jp_map *m, uint32_t cap)
{
	m->slots = jp_walloc((size_t)cap * sizeof(jp_slot));
	m->mask = cap - 1;
	m->used = 0;
	return m->slots ? 0 : -1;
}

static inline void jp_map_free(jp_map *m)
{
	jp_zfree(m->slots, ((size_t)m->mask + 1) * sizeof(jp_slot));
	m->slots = NULL;
}

/* jp_map_put stores (k1, k2) -> val in the empty slot s found by
 * jp_map_find, growing the map at 3/4 load (jp_map_due). If it cannot
 * grow (no memory) it still takes entries up to 7/8 load, then refuses
 * them (returns -1, nothing stored) so that probes always end. */
static inline int jp_map_put(jp_map *m, jp_slot *s, uintptr_t k1, uint32_t k2, uint32_t val)
{
	if (jp_map_due(m)) {
		jp_map bigger;
		if (jp_map_init(&bigger, (m->mask + 1) * 2) == 0) {
			for (uint32_t i = 0; i <= m->mask; i++) {
				jp_slot *o = &m->slots[i];
				if (o->k1 != 0)
					*jp_map_find(&bigger, o->k1, o->k2) = *o;
			}
			bigger.used = m->used;
			jp_map_free(m);
			*m = bigger;
			s = jp_map_find(m, k1, k2);
		} else if ((uint64_t)(m->used + 1) * 8 > ((uint64_t)m->mask + 1) * 7) {
			return -1;
		}
	}
	s->k1 = k1;
	s->k2 = k2;
	s->val = val;
	m->used++;
	return 0;
}

#endif /* JP_STORE_H */
