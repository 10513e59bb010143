/*
 * bci_cache.c: BCICACHE, classes rewritten in earlier runs read back in
 * the class file hook without calling the transformer. Rewriting runs
 * ASM on the class-loading thread, still cold in a short run, and hands
 * every class to Java and back; a hit here is a hash of the bytes, a
 * table lookup and a copy. The entries are kept by bci_packs.c.
 *
 * An entry (made by TransformCache.java after a rewrite) is named by the
 * class, its length and a hash of its bytes. The probes' method handles
 * differ from run to run: an entry lists where each handle's
 * CONSTANT_Integer is, with its method's name; a hit registers the names
 * and stores this run's handles there (marked JP_BCI_CACHED_ID). An
 * entry with no class marks one the transformer leaves as it is. A
 * damaged or bad entry is a miss, rewritten again, and said once.
 */
#include <stdlib.h>
#include <string.h>

#include "bci_cache.h"

#define JP_CACHE_MAGIC 0x4a504331u /* an entry: "JPC1" (TransformCache.MAGIC) */
/* An entry larger than this is not a class file of ours. */
#define JP_CACHE_MAX (64u << 20)

static int said_entry;

/*
 * bci_cache_apply takes the class out of an entry f of n bytes for a
 * class file of len bytes: *new_data gets a copy with this run's
 * handles in place (nothing for an entry of a class left as it was).
 * NULL, or why the entry is not one.
 */
static const char *bci_cache_apply(jvmtiEnv *jvmti, const char *cls, const unsigned char *f, size_t n, jint len,
				   jint *new_len, unsigned char **new_data)
{
	if (n < 24 || jp_be32(f) != JP_CACHE_MAGIC || jp_be32(f + 4) != (uint32_t)len || jp_be32(f + 16) > 65535)
		return "not an entry for these bytes";
	uint32_t nh = jp_be32(f + 16);
	size_t at = 20;
	/* First pass: where the class starts, and that the table holds. */
	for (uint32_t i = 0; i < nh; i++) {
		if (at + 10 > n || at + 10 + ((size_t)f[at + 8] << 8 | f[at + 9]) > n)
			return "truncated";
		at += 10 + ((size_t)f[at + 8] << 8 | f[at + 9]);
	}
	uint32_t olen;
	if (at + 4 > n || (olen = jp_be32(f + at)) != n - at - 4)
		return "bad length";
	if (olen == 0)
		return NULL;
	unsigned char *out = NULL;
	if ((*jvmti)->Allocate(jvmti, olen, &out) != JVMTI_ERROR_NONE)
		return "no memory";
	memcpy(out, f + at + 4, olen);
	size_t cl = strlen(cls);
	at = 20;
	for (uint32_t i = 0; i < nh; i++) {
		uint32_t off = jp_be32(f + at), type = jp_be32(f + at + 4);
		size_t nl = (size_t)f[at + 8] << 8 | f[at + 9];
		const char *paren = memchr(f + at + 10, '(', nl);
		char *full = malloc(cl + 1 + nl + 1);
		if (off < 1 || (uint64_t)off + 4 > olen || out[off - 1] != 3 || paren == NULL || full == NULL ||
		    memchr(f + at + 10, 0, nl) != NULL) {
			free(full);
			(*jvmti)->Deallocate(jvmti, out);
			return "bad handle";
		}
		/* Transformer.id's name, class.name(descriptor), in the
		 * modified UTF-8 JNI gives it. */
		memcpy(full, cls, cl);
		full[cl] = '.';
		memcpy(full + cl + 1, f + at + 10, nl);
		full[cl + 1 + nl] = 0;
		uint32_t h = jp_bci_register_name(full, (int)type);
		free(full);
		if (!JP_IS_OVERFLOW(h))
			h |= JP_BCI_CACHED_ID;
		out[off] = (unsigned char)(h >> 24);
		out[off + 1] = (unsigned char)(h >> 16);
		out[off + 2] = (unsigned char)(h >> 8);
		out[off + 3] = (unsigned char)h;
		at += 10 + nl;
	}
	*new_data = out;
	*new_len = (jint)olen;
	__atomic_add_fetch(&bci.transformed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * jp_bci_cache_hit looks a class up. 1: answered, *new_data set to the
 * class rewritten with this run's handles, or left alone for a class
 * the transformer keeps as it is; 0: not held, rewrite it. names are
 * the entry's two possible names, tried in turn: its own
 * (jp_bci_cache_name) and with the class path's stamp
 * (jp_bci_cache_name_cp).
 */
int jp_bci_cache_hit(jvmtiEnv *jvmti, const char *cls, const char *const names[2], jint len, jint *new_len,
		     unsigned char **new_data)
{
	const unsigned char *e = NULL;
	const char *why = "";
	for (int i = 0; i < 2 && why != NULL; i++) {
		size_t n = 0;
		int damaged = 0;
		e = jp_pack_find(names[i], &n, &damaged);
		why = e != NULL ? bci_cache_apply(jvmti, cls, e, n, len, new_len, new_data)
				: damaged ? "damaged: its check does not match" : "";
		if (why != NULL && *why)
			jp_cache_say(&said_entry, "BCI: BCICACHE entry %s not used (%s); such entries are rewritten again", names[i], why);
	}
	if (why != NULL) {
		__atomic_add_fetch(&bci.cache_misses, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_add_fetch(&bci.cache_trivial, jp_be32(e + 8), __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.cache_wrapped, jp_be32(e + 12), __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.cache_hits, 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * jp_bci_cache_add keeps an entry the transformer made for a class (it
 * starts with the entry's magic; the transformer returns a class file
 * instead when the class cannot be kept) for this run's pack, and takes
 * the class out of it as from a hit. 1: done; 0: not an entry.
 */
int jp_bci_cache_add(jvmtiEnv *jvmti, const char *cls, const char *name, const unsigned char *e, size_t n, jint len,
		     jint *new_len, unsigned char **new_data)
{
	if (n < 24 || jp_be32(e) != JP_CACHE_MAGIC)
		return 0;
	const char *why = bci_cache_apply(jvmti, cls, e, n, len, new_len, new_data);
	if (why != NULL) /* the transformer's own entry: not expected */
		jp_cache_say(&said_entry, "BCI: BCICACHE entry %s not kept (%s)", name, why);
	else if (n <= JP_CACHE_MAX)
		jp_pack_add(name, e, n);
	return 1;
}
