/*
 * bci_cache.c: BCICACHE, classes rewritten in earlier runs read back in
 * the class file hook without calling the transformer. Rewriting runs
 * ASM on the class-loading thread, still cold in a short run, and hands
 * every class to Java and back; a hit here is a hash of the bytes, a
 * table lookup and a copy.
 *
 * An entry (made by TransformCache.java after a rewrite) is named by the
 * class, its length and a 128-bit hash of its bytes. Entries live in
 * pack files, in a directory the transformer names after what decides
 * its output (its own jar, the flags, the filters, the JVM): a run maps
 * every pack there at VM init and indexes it, and writes the entries it
 * made as one new pack, whole (a temporary file renamed), when they
 * reach JP_PACK_FLUSH and at VM death. A file per class would cost a
 * run some five system calls per class, more than the rest of a hit.
 * Past JP_PACK_MERGE packs, a run that may write merges them into one.
 *
 * The probes' method handles differ from run to run: an entry lists
 * where each handle's CONSTANT_Integer is, with its method's name; a hit
 * registers the names and stores this run's handles there (marked
 * JP_BCI_CACHED_ID). An entry with no class marks one the transformer
 * leaves as it is. A bad entry is a miss; a bad pack is skipped from
 * there on; either is said once in log-msg.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bci.h"

#define JP_CACHE_MAGIC 0x4a504331u /* "JPC1" */
/* An entry larger than this is not a class file of ours. */
#define JP_CACHE_MAX (64u << 20)

/* bci_hash2 is two 64-bit multiply-xor hashes of data, a word at a
 * time: an entry's key, and a pack record's check. */
static void bci_hash2(const unsigned char *data, size_t len, uint64_t *ha, uint64_t *hb)
{
	uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)len, b = 0xc2b2ae3d27d4eb4full + (uint64_t)len;
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

/* jp_bci_cache_name writes the entry's name for a class into out (at
 * least JP_BCI_CACHE_NAME bytes): the class name made safe for a file
 * name and cut at 120 characters, the length, and a 128-bit hash of the
 * bytes. */
void jp_bci_cache_name(const char *cls, const unsigned char *data, jint len, char *out)
{
	uint64_t a, b;
	bci_hash2(data, (size_t)len, &a, &b);
	int n = 0;
	for (const char *c = cls; *c && n < 120; c++) {
		char ch = *c;
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '$' ||
			 ch == '_' || ch == '-';
		out[n++] = ch == '/' ? '.' : ok ? ch : '_';
	}
	snprintf(out + n, JP_BCI_CACHE_NAME - n, "-%d-%016llx%016llx.jpc", (int)len, (unsigned long long)a,
		 (unsigned long long)b);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void bci_cache_bad(const char *path, const char *why)
{
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		jp_notef("BCI: BCICACHE entry %s not used (%s); such entries are misses, rewritten again", path, why);
}

/* A pack: records of (u16 name length, name, u32 entry length, u64 check
 * of the entry, entry), big-endian, after its magic. The check is
 * bci_hash2's first half: a damaged record is a miss, not a class that
 * fails to load. */
#define JP_PACK_MAGIC 0x4a504b31u /* "JPK1" */
#define JP_PACK_FLUSH (16u << 20) /* a run's new entries, written as a pack past this */
#define JP_PACK_MERGE 8
#define JP_PACK_REC 14 /* a record's bytes besides its name and entry */

/* pk_record writes a record at p: JP_PACK_REC + nl + el bytes. */
static void pk_record(unsigned char *p, const char *name, size_t nl, const unsigned char *e, size_t el)
{
	uint64_t a, b;
	bci_hash2(e, el, &a, &b);
	p[0] = (unsigned char)(nl >> 8);
	p[1] = (unsigned char)nl;
	memcpy(p + 2, name, nl);
	p += 2 + nl;
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(el >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		p[4 + i] = (unsigned char)(a >> (56 - 8 * i));
	memcpy(p + 12, e, el);
}

struct jp_pack_ref {
	const unsigned char *name, *entry; /* in a mapped pack */
	uint32_t name_len, entry_len;
};

static struct {
	struct jp_pack_ref *tab; /* open addressing, by name hash */
	uint32_t cap, n;
	/* This run's new entries, a pack's records, not yet written. */
	pthread_mutex_t mu;
	unsigned char *buf;
	size_t len, size;
	uint32_t packs; /* pack files mapped */
} pk = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t pk_hash(const unsigned char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

static struct jp_pack_ref *pk_slot(const unsigned char *name, size_t n)
{
	for (uint64_t i = pk_hash(name, n);; i++) {
		struct jp_pack_ref *r = &pk.tab[i & (pk.cap - 1)];
		if (r->name == NULL || (r->name_len == n && memcmp(r->name, name, n) == 0))
			return r;
	}
}

static void pk_grow(void)
{
	uint32_t cap = pk.cap ? pk.cap * 2 : 4096;
	struct jp_pack_ref *old = pk.tab, *tab = calloc(cap, sizeof *tab);
	if (tab == NULL)
		return;
	uint32_t oc = pk.cap;
	pk.tab = tab;
	pk.cap = cap;
	for (uint32_t i = 0; i < oc; i++)
		if (old[i].name != NULL)
			*pk_slot(old[i].name, old[i].name_len) = old[i];
	free(old);
}

/* pk_index adds a mapped pack's records (the first of a name wins);
 * -1 if it ends in a bad record (those before it count). */
static int pk_index(const unsigned char *p, size_t n)
{
	if (n < 4 || be32(p) != JP_PACK_MAGIC)
		return -1;
	size_t at = 4;
	while (at < n) {
		if (at + 2 > n)
			return -1;
		size_t nl = (size_t)p[at] << 8 | p[at + 1];
		if (nl == 0 || at + JP_PACK_REC + nl > n)
			return -1;
		size_t el = be32(p + at + 2 + nl);
		if (el < 24 || at + JP_PACK_REC + nl + el > n)
			return -1;
		const unsigned char *e = p + at + JP_PACK_REC + nl;
		uint64_t a, b;
		bci_hash2(e, el, &a, &b);
		if (a != ((uint64_t)be32(p + at + 6 + nl) << 32 | be32(p + at + 10 + nl)))
			return -1;
		if ((pk.n + 1) * 2 > pk.cap)
			pk_grow();
		if ((pk.n + 1) * 2 > pk.cap)
			return 0; /* no memory: the rest is not indexed */
		struct jp_pack_ref *r = pk_slot(p + at + 2, nl);
		if (r->name == NULL) {
			*r = (struct jp_pack_ref){ p + at + 2, e, (uint32_t)nl, (uint32_t)el };
			pk.n++;
		}
		at += JP_PACK_REC + nl + el;
	}
	return 0;
}

/* pk_write writes records (with the magic first) as a new pack, whole. */
static int pk_write(const char *dir, const unsigned char *recs, size_t n, char *path, size_t pathlen)
{
	char tmp[4096];
	static uint64_t seq;
	uint64_t k = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
	if (snprintf(tmp, sizeof tmp, "%s/.new-%d-%llu.tmp", dir, (int)getpid(), (unsigned long long)k) >= (int)sizeof tmp ||
	    snprintf(path, pathlen, "%s/p-%d-%llu-%llu.jpk", dir, (int)getpid(), (unsigned long long)jp_mono_ns(),
		     (unsigned long long)k) >= (int)pathlen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	unsigned char magic[4] = { 0x4a, 0x50, 0x4b, 0x31 };
	int ok = write(fd, magic, 4) == 4;
	for (size_t put = 0; ok && put < n;) {
		ssize_t w = write(fd, recs + put, n - put);
		if (w <= 0)
			ok = 0;
		else
			put += (size_t)w;
	}
	int err = errno;
	if (close(fd) != 0 && ok)
		ok = 0, err = errno;
	if (ok && rename(tmp, path) == 0)
		return 0;
	err = ok ? errno : err;
	unlink(tmp);
	errno = err;
	return -1;
}

/*
 * jp_bci_cache_open maps and indexes the packs of the cache's directory
 * dir, merging them into one first when there are many and the run may
 * write. Called once, at VM init, before bci.cache_dir is set (which
 * turns lookups on).
 */
void jp_bci_cache_open(const char *dir, int writable)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *de;
	char path[4096];
	char **names = NULL;
	size_t nn = 0, cap = 0;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".jpk") != 0 || de->d_name[0] != 'p')
			continue;
		if (nn == cap) {
			char **nv = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *names);
			if (nv == NULL)
				break;
			names = nv;
		}
		if ((names[nn] = strdup(de->d_name)) != NULL)
			nn++;
	}
	closedir(d);
	for (size_t i = 0; i < nn; i++) {
		if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path)
			continue;
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 4) {
			/* Kept mapped for the run: entries are read from it. */
			/* Faulted in at once (a page fault apiece costs more), if
			 * small: a large pack's pages come as its classes load. */
			int pop = (uint64_t)st.st_size <= (32u << 20) ? MAP_POPULATE : 0;
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | pop, fd, 0);
			if (m != MAP_FAILED) {
				pk.packs++;
				if (pk_index(m, (size_t)st.st_size) != 0)
					bci_cache_bad(path, "a bad record; the entries after it are not used");
			}
		}
		close(fd);
	}
	/* Many packs: one run writes them all as one, and removes them (runs
	 * that mapped them keep their mappings). */
	if (nn > JP_PACK_MERGE && writable && pk.n > 0) {
		size_t total = 0;
		for (uint32_t i = 0; i < pk.cap; i++)
			if (pk.tab[i].name != NULL)
				total += JP_PACK_REC + pk.tab[i].name_len + pk.tab[i].entry_len;
		unsigned char *all = malloc(total);
		if (all != NULL) {
			size_t at = 0;
			for (uint32_t i = 0; i < pk.cap; i++) {
				struct jp_pack_ref *r = &pk.tab[i];
				if (r->name == NULL)
					continue;
				pk_record(all + at, (const char *)r->name, r->name_len, r->entry, r->entry_len);
				at += JP_PACK_REC + r->name_len + r->entry_len;
			}
			char merged[4096];
			if (pk_write(dir, all, at, merged, sizeof merged) == 0) {
				for (size_t i = 0; i < nn; i++)
					if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path)
						unlink(path);
			}
			free(all);
		}
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
}

/* jp_bci_cache_flush writes the run's new entries as a pack (and, at VM
 * death, no more after them). */
void jp_bci_cache_flush(int last)
{
	pthread_mutex_lock(&pk.mu);
	if (pk.len > 0 && __atomic_load_n(&bci.cache_writable, __ATOMIC_RELAXED)) {
		char path[4096];
		if (pk_write(bci.cache_dir, pk.buf, pk.len, path, sizeof path) == 0) {
			__atomic_add_fetch(&bci.cache_added, bci.cache_pending, __ATOMIC_RELAXED);
		} else {
			int err = errno;
			__atomic_store_n(&bci.cache_writable, 0, __ATOMIC_RELAXED);
			jp_notef("BCI: BCICACHE: cannot write a pack in %s (%s): no more classes are added to it this run",
				  bci.cache_dir, strerror(err));
		}
	}
	bci.cache_pending = 0;
	pk.len = 0;
	if (last) {
		__atomic_store_n(&bci.cache_writable, 0, __ATOMIC_RELAXED);
		free(pk.buf);
		pk.buf = NULL;
		pk.size = 0;
	}
	pthread_mutex_unlock(&pk.mu);
}

/*
 * bci_cache_apply takes the class out of an entry f of n bytes for a
 * class file of len bytes: *new_data gets a copy with this run's
 * handles in place (nothing for an entry of a class left as it was).
 * NULL, or why the entry is not one.
 */
static const char *bci_cache_apply(jvmtiEnv *jvmti, const char *cls, const unsigned char *f, size_t n, jint len,
				   jint *new_len, unsigned char **new_data)
{
	if (n < 24 || be32(f) != JP_CACHE_MAGIC || be32(f + 4) != (uint32_t)len || be32(f + 16) > 65535)
		return "not an entry for these bytes";
	uint32_t nh = be32(f + 16);
	size_t at = 20;
	/* First pass: where the class starts, and that the table holds. */
	for (uint32_t i = 0; i < nh; i++) {
		if (at + 10 > n || at + 10 + ((size_t)f[at + 8] << 8 | f[at + 9]) > n)
			return "truncated";
		at += 10 + ((size_t)f[at + 8] << 8 | f[at + 9]);
	}
	uint32_t olen;
	if (at + 4 > n || (olen = be32(f + at)) != n - at - 4)
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
		uint32_t off = be32(f + at), type = be32(f + at + 4);
		size_t nl = (size_t)f[at + 8] << 8 | f[at + 9];
		const char *paren = memchr(f + at + 10, '(', nl);
		char *full = malloc(cl + 1 + nl + 1);
		if (off < 1 || (uint64_t)off + 4 > olen || out[off - 1] != 3 || paren == NULL || full == NULL) {
			free(full);
			(*jvmti)->Deallocate(jvmti, out);
			return "bad handle";
		}
		/* Transformer.id's name: class.name(descriptor). */
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
 * the transformer keeps as it is; 0: not held, rewrite it. name is the
 * entry's file name (jp_bci_cache_name).
 */
int jp_bci_cache_hit(jvmtiEnv *jvmti, const char *cls, const char *name, jint len, jint *new_len,
		     unsigned char **new_data)
{
	size_t nl = strlen(name);
	struct jp_pack_ref *r = pk.tab != NULL ? pk_slot((const unsigned char *)name, nl) : NULL;
	if (r == NULL || r->name == NULL) {
		__atomic_add_fetch(&bci.cache_misses, 1, __ATOMIC_RELAXED);
		return 0;
	}
	const char *why = bci_cache_apply(jvmti, cls, r->entry, r->entry_len, len, new_len, new_data);
	if (why != NULL) {
		bci_cache_bad(name, why);
		__atomic_add_fetch(&bci.cache_misses, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_add_fetch(&bci.cache_trivial, be32(r->entry + 8), __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.cache_wrapped, be32(r->entry + 12), __ATOMIC_RELAXED);
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
	if (n < 24 || be32(e) != JP_CACHE_MAGIC)
		return 0;
	const char *why = bci_cache_apply(jvmti, cls, e, n, len, new_len, new_data);
	if (why != NULL) { /* the transformer's own entry: not expected */
		bci_cache_bad(name, why);
		return 1;
	}
	size_t nl = strlen(name);
	if (!__atomic_load_n(&bci.cache_writable, __ATOMIC_RELAXED) || nl > 0xffff || n > JP_CACHE_MAX)
		return 1;
	int flush = 0;
	pthread_mutex_lock(&pk.mu);
	size_t need = pk.len + JP_PACK_REC + nl + n;
	if (need > pk.size) {
		size_t size = pk.size ? pk.size : 1u << 20;
		while (size < need)
			size *= 2;
		unsigned char *b = realloc(pk.buf, size);
		if (b != NULL)
			pk.buf = b, pk.size = size;
	}
	if (need <= pk.size && __atomic_load_n(&bci.cache_writable, __ATOMIC_RELAXED)) {
		pk_record(pk.buf + pk.len, name, nl, e, n);
		pk.len = need;
		bci.cache_pending++;
		flush = pk.len >= JP_PACK_FLUSH;
	}
	pthread_mutex_unlock(&pk.mu);
	if (flush)
		jp_bci_cache_flush(0);
	return 1;
}
