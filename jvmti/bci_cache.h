/*
 * bci_cache.h: what BCICACHE's files share: bci_cache.c (classes in and
 * out of entries), bci_packs.c (the files that keep them) and
 * bci_context.c (what decides whether an entry holds).
 */
#ifndef JP_BCI_CACHE_H
#define JP_BCI_CACHE_H

#include <string.h>
#include "bci.h"

static inline uint32_t jp_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* jp_cache_hash2 is two 64-bit multiply-xor hashes of data, a word at a time,
 * from two seeds: an entry's name (seeded with the directory's key), a
 * record's check and the context's name. */
static inline void jp_cache_hash2(const unsigned char *data, size_t len, uint64_t sa, uint64_t sb, uint64_t *ha, uint64_t *hb)
{
	uint64_t a = (0x9e3779b97f4a7c15ull ^ sa) ^ (uint64_t)len, b = (0xc2b2ae3d27d4eb4full ^ sb) + (uint64_t)len;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, data + i, 8);
		a = (a ^ w) * 0xff51afd7ed558ccdull;
		a ^= a >> 29;
		b = (b + w) * 0x9fb21c651e98df25ull;
		b ^= b >> 32;
	}
	for (; i < len; i++) {
		a = (a ^ data[i]) * 0x100000001b3ull;
		b = (b + data[i]) * 0xc4ceb9fe1a85ec53ull;
	}
	a ^= a >> 33;
	a *= 0xc4ceb9fe1a85ec53ull;
	a ^= a >> 33;
	b ^= b >> 31;
	b *= 0xff51afd7ed558ccdull;
	b ^= b >> 29;
	*ha = a;
	*hb = b;
}


/* jp_cache_say notes fmt (what, why) in log-msg, once for each *said. */
void jp_cache_say(int *said, const char *fmt, const char *what, const char *why);

/* bci_packs.c: a verified entry by name, and keeping a new one. */
const unsigned char *jp_pack_find(const char *name, size_t *n, int *damaged);
void jp_pack_add(const char *name, const unsigned char *e, size_t n);

/* bci_context.c: the context's directory name (-1: the jar unread),
 * the stamps of a path list's files (how: JP_STAMP_*), chained into
 * (*a, *b). */
int jp_bci_cache_context(jvmtiEnv *jvmti, const char *format, char *out, size_t outlen);
#define JP_STAMP_ONE 1 /* list is one path */
#define JP_STAMP_CWD 2 /* an empty element is the working directory (java.class.path) */
void jp_bci_cache_stamp(const char *list, int how, uint64_t *a, uint64_t *b);

#endif /* JP_BCI_CACHE_H */
