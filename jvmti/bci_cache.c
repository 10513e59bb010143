/*
 * bci_cache.c: BCICACHE, classes rewritten in earlier runs read back in
 * the class file hook without calling the transformer. Rewriting runs
 * ASM on the class-loading thread, still cold in a short run, and hands
 * every class to Java and back; a hit here is a hash of the bytes, a
 * table lookup and a copy.
 *
 * The agent (Go) opened and checked BCICACHE's directory; everything
 * here works from that descriptor, so the path cannot be swapped after
 * the check. Under it, a context directory, named after what decides the
 * transformer's output (its jar, the flags, the filters, the JVM, this
 * file's format), holds a secret key and pack files. An entry (made by
 * TransformCache.java after a rewrite) is named by the class, its length
 * and a 128-bit hash of its bytes seeded with the key, so that bytes
 * crafted to collide with another class's entry would need the key. A
 * run maps every pack at VM init and indexes it; the entries it makes go
 * to a buffer written as one new pack, whole (a temporary file, synced,
 * renamed), when it reaches JP_PACK_FLUSH and at VM death. A file per
 * class would cost a run some five system calls per class, more than the
 * rest of a hit. Past JP_PACK_MERGE packs, a run merges them into one.
 *
 * The probes' method handles differ from run to run: an entry lists
 * where each handle's CONSTANT_Integer is, with its method's name; a hit
 * registers the names and stores this run's handles there (marked
 * JP_BCI_CACHED_ID). An entry with no class marks one the transformer
 * leaves as it is. Each record carries a check of its entry, verified at
 * its first hit: a damaged record is a miss, a bad pack is skipped from
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
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bci.h"

/* The format of entries and packs, and what a handle's mark means: a
 * change to either must change the context (bci_cache_context). */
#define JP_CACHE_FORMAT "libjprof-bcicache-2"
#define JP_CACHE_MAGIC 0x4a504331u /* an entry: "JPC1" (TransformCache.MAGIC) */
#define JP_PACK_MAGIC 0x4a504b31u  /* a pack: "JPK1" */
/* An entry larger than this is not a class file of ours. */
#define JP_CACHE_MAX (64u << 20)
#define JP_PACK_FLUSH (16u << 20) /* a run's new entries, written as a pack at this */
#define JP_PACK_MERGE 8
#define JP_PACK_REC 14 /* a record's bytes besides its name and entry */

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* bci_hash2 is two 64-bit multiply-xor hashes of data, a word at a time,
 * from two seeds: an entry's name (seeded with the directory's key), a
 * record's check and the context's name. */
static void bci_hash2(const unsigned char *data, size_t len, uint64_t sa, uint64_t sb, uint64_t *ha, uint64_t *hb)
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

/* A record in a mapped pack. */
struct jp_pack_ref {
	const unsigned char *name, *entry;
	uint32_t name_len, entry_len;
	uint64_t check;
	int state; /* 0: not verified yet, 1: verified, 2: damaged */
};

static struct {
	int dirfd;       /* the context's directory */
	uint64_t key[2]; /* its secret */
	struct jp_pack_ref *tab; /* open addressing, by name; read-only once published */
	uint32_t cap, n;
	/* This run's new entries, a pack's records, not yet written. */
	pthread_mutex_t mu;
	unsigned char *buf;
	size_t len, size;
	uint64_t pending;
	int64_t budget; /* bytes this run may still add */
	int said_pack, said_entry, said_write;
} pk = { .dirfd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

/* jp_bci_cache_name writes the entry's name for a class into out (at
 * least JP_BCI_CACHE_NAME bytes): the class name made safe for a file
 * name and cut at 120 characters, the length, and the keyed hash. */
void jp_bci_cache_name(const char *cls, const unsigned char *data, jint len, char *out)
{
	uint64_t a, b;
	bci_hash2(data, (size_t)len, pk.key[0], pk.key[1], &a, &b);
	int n = 0;
	for (const char *c = cls; *c && n < 120; c++) {
		char ch = *c;
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '$' ||
			 ch == '_' || ch == '-';
		out[n++] = ch == '/' ? '.' : ok ? ch : '_';
	}
	snprintf(out + n, JP_BCI_CACHE_NAME - n, "-%d-%016llx%016llx", (int)len, (unsigned long long)a,
		 (unsigned long long)b);
}

static void bci_cache_say(int *said, const char *fmt, const char *what, const char *why)
{
	if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
		jp_notef(fmt, what, why);
}

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

static int pk_grow(void)
{
	uint32_t cap = pk.cap ? pk.cap * 2 : 4096, oc = pk.cap;
	struct jp_pack_ref *old = pk.tab, *tab = calloc(cap, sizeof *tab);
	if (tab == NULL)
		return -1;
	pk.tab = tab;
	pk.cap = cap;
	for (uint32_t i = 0; i < oc; i++)
		if (old[i].name != NULL)
			*pk_slot(old[i].name, old[i].name_len) = old[i];
	free(old);
	return 0;
}

/* pk_index adds a mapped pack's records (the first of a name wins), their
 * headers only: an entry's check is verified at its first hit. It
 * returns how many it added, or -1 if the pack ends in a bad record
 * (those before it count). */
static long pk_index(const unsigned char *p, size_t n)
{
	if (n < 4 || be32(p) != JP_PACK_MAGIC)
		return -1;
	long added = 0;
	for (size_t at = 4; at < n;) {
		if (at + 2 > n)
			return -1;
		size_t nl = (size_t)p[at] << 8 | p[at + 1];
		if (nl == 0 || at + JP_PACK_REC + nl > n)
			return -1;
		size_t el = be32(p + at + 2 + nl);
		if (el < 24 || at + JP_PACK_REC + nl + el > n)
			return -1;
		if ((pk.n + 1) * 2 > pk.cap && pk_grow() != 0)
			return added; /* no memory: the rest is not indexed */
		struct jp_pack_ref *r = pk_slot(p + at + 2, nl);
		if (r->name == NULL) {
			*r = (struct jp_pack_ref){ p + at + 2, p + at + JP_PACK_REC + nl, (uint32_t)nl, (uint32_t)el,
						   (uint64_t)be32(p + at + 6 + nl) << 32 | be32(p + at + 10 + nl), 0 };
			pk.n++;
			added++;
		}
		at += JP_PACK_REC + nl + el;
	}
	return added;
}

/* pk_record writes a record at p: JP_PACK_REC + nl + el bytes. */
static void pk_record(unsigned char *p, const unsigned char *name, size_t nl, const unsigned char *e, size_t el)
{
	uint64_t a, b;
	bci_hash2(e, el, 0, 0, &a, &b);
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

/* A pack being written: a temporary file of this run's, renamed at the
 * end. */
struct jp_pack_out {
	int fd;
	char tmp[64];
};

static int pk_create(struct jp_pack_out *o)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
		r = (uint64_t)jp_mono_ns() ^ ((uint64_t)getpid() << 32);
	snprintf(o->tmp, sizeof o->tmp, ".new-%016llx.tmp", (unsigned long long)r);
	o->fd = openat(pk.dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	static const unsigned char magic[4] = { 0x4a, 0x50, 0x4b, 0x31 };
	if (o->fd < 0)
		return -1;
	if (write(o->fd, magic, 4) != 4) {
		int err = errno;
		close(o->fd);
		unlinkat(pk.dirfd, o->tmp, 0);
		errno = err;
		return -1;
	}
	return 0;
}

static int pk_put(struct jp_pack_out *o, const unsigned char *b, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t w = write(o->fd, b + put, n - put);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		put += (size_t)w;
	}
	return 0;
}

/* pk_finish syncs the pack and renames it into place (ok), or removes
 * it; -1 with errno if it is not in place. */
static int pk_finish(struct jp_pack_out *o, int ok)
{
	int err = ok ? 0 : errno;
	if (ok && fsync(o->fd) != 0)
		ok = 0, err = errno;
	if (close(o->fd) != 0 && ok)
		ok = 0, err = errno;
	char name[64];
	snprintf(name, sizeof name, "p-%s", o->tmp + 5); /* .new-X.tmp -> p-X.tmp */
	memcpy(name + strlen(name) - 4, ".jpk", 4);
	if (ok && renameat(pk.dirfd, o->tmp, pk.dirfd, name) == 0)
		return 0;
	if (ok)
		err = errno;
	unlinkat(pk.dirfd, o->tmp, 0);
	errno = err;
	return -1;
}

/* bci_cache_context names the context directory: a hash of what decides
 * the transformer's output. -1 if the jar cannot be read. */
static int bci_cache_context(jvmtiEnv *jvmti, char *out, size_t outlen)
{
	int fd = open(bci.jar, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *jar = NULL;
	size_t got = 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && (jar = malloc((size_t)st.st_size)) != NULL) {
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, jar + got, (size_t)st.st_size - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	if (fd >= 0)
		close(fd);
	if (jar == NULL || got != (size_t)st.st_size) {
		free(jar);
		return -1;
	}
	uint64_t ja, jb, da, db;
	bci_hash2(jar, got, 0, 0, &ja, &jb);
	free(jar);
	static const char *const props[] = { "java.vm.version", "java.home", "libjprof.bci.base" };
	char desc[4096];
	int n = snprintf(desc, sizeof desc, "%s %x %d %s|%s", JP_CACHE_FORMAT, JP_BCI_CACHED_ID, bci.flags, bci.include, bci.exclude);
	for (size_t i = 0; i < sizeof props / sizeof props[0] && n > 0 && (size_t)n < sizeof desc; i++) {
		char *v = NULL;
		(*jvmti)->GetSystemProperty(jvmti, props[i], &v);
		n += snprintf(desc + n, sizeof desc - (size_t)n, "|%s", v ? v : "");
		if (v != NULL)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)v);
	}
	bci_hash2((const unsigned char *)desc, strlen(desc), ja, jb, &da, &db);
	snprintf(out, outlen, "ctx-%016llx%016llx", (unsigned long long)da, (unsigned long long)db);
	return 0;
}

/* bci_cache_key reads the context's key, making it if it is missing and
 * the run may write. */
static int bci_cache_key(int writable)
{
	unsigned char k[16];
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = openat(pk.dirfd, "key", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
				 (st.st_mode & 022) == 0 && read(fd, k, sizeof k) == (ssize_t)sizeof k;
			close(fd);
			if (!ok)
				return -1;
			memcpy(&pk.key[0], k, 8);
			memcpy(&pk.key[1], k + 8, 8);
			return 0;
		}
		if (errno != ENOENT || !writable || getrandom(k, sizeof k, 0) != (ssize_t)sizeof k)
			return -1;
		fd = openat(pk.dirfd, "key", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			int ok = write(fd, k, sizeof k) == (ssize_t)sizeof k && fsync(fd) == 0;
			close(fd);
			if (!ok) {
				unlinkat(pk.dirfd, "key", 0);
				return -1;
			}
		} else if (errno != EEXIST) {
			return -1;
		}
		/* Written, or another run's came first: read what is there. */
	}
	return -1;
}

/* bci_cache_merge writes every indexed record as one pack and removes
 * the packs they came from (runs that mapped them keep their mappings). */
static void bci_cache_merge(char **names, size_t nn)
{
	struct jp_pack_out o;
	if (pk_create(&o) != 0)
		return;
	size_t cap = 1u << 20, len = 0;
	unsigned char *stage = malloc(cap);
	int ok = stage != NULL;
	for (uint32_t i = 0; ok && i < pk.cap; i++) {
		struct jp_pack_ref *r = &pk.tab[i];
		if (r->name == NULL)
			continue;
		size_t need = JP_PACK_REC + r->name_len + r->entry_len;
		if (len + need > cap) {
			ok = pk_put(&o, stage, len) == 0;
			len = 0;
		}
		if (ok && need > cap) { /* a record larger than the stage: header, then the entry as it is */
			unsigned char h[JP_PACK_REC + 65536];
			pk_record(h, r->name, r->name_len, r->entry, 0);
			for (int k = 0; k < 4; k++)
				h[2 + r->name_len + k] = (unsigned char)(r->entry_len >> (24 - 8 * k));
			for (int k = 0; k < 8; k++)
				h[6 + r->name_len + k] = (unsigned char)(r->check >> (56 - 8 * k));
			ok = pk_put(&o, h, JP_PACK_REC + r->name_len) == 0 && pk_put(&o, r->entry, r->entry_len) == 0;
		} else if (ok) {
			pk_record(stage + len, r->name, r->name_len, r->entry, r->entry_len);
			len += need;
		}
	}
	if (ok && len > 0)
		ok = pk_put(&o, stage, len) == 0;
	free(stage);
	if (pk_finish(&o, ok) == 0)
		for (size_t i = 0; i < nn; i++)
			unlinkat(pk.dirfd, names[i], 0);
}

/* bci_cache_packs maps and indexes the context's packs, removes
 * temporary files an interrupted run left, and merges the packs when
 * there are many and the run may write. */
static void bci_cache_packs(int writable)
{
	int dfd = dup(pk.dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *de;
	char **names = NULL;
	size_t nn = 0, cap = 0;
	time_t now = time(NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		struct stat st;
		if (strncmp(de->d_name, ".new-", 5) == 0 && writable &&
		    fstatat(pk.dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime + 3600 < now) {
			unlinkat(pk.dirfd, de->d_name, 0);
			continue;
		}
		if (l < 7 || strncmp(de->d_name, "p-", 2) != 0 || strcmp(de->d_name + l - 4, ".jpk") != 0)
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
		int fd = openat(pk.dirfd, names[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 4) {
			/* Faulted in at once (a page fault apiece costs more), if
			 * small: a large pack's pages come as its classes load. */
			int pop = (uint64_t)st.st_size <= (32u << 20) ? MAP_POPULATE : 0;
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | pop, fd, 0);
			if (m != MAP_FAILED) {
				long added = pk_index(m, (size_t)st.st_size);
				if (added < 0)
					bci_cache_say(&pk.said_pack, "BCI: BCICACHE pack %s not used past a bad record (%s)", names[i],
						      "its later classes are rewritten again");
				if (added <= 0) /* nothing of it is used */
					munmap(m, (size_t)st.st_size);
			}
		}
		close(fd);
	}
	if (nn > JP_PACK_MERGE && writable && pk.n > 0)
		bci_cache_merge(names, nn);
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
}

/*
 * jp_bci_cache_setup turns BCICACHE on, at VM init, once the flags are
 * final: the context's directory (made if missing and the run may
 * write, checked as the agent checked BCICACHE's), its key and its packs.
 * Lookups start when it returns; a failure leaves them off and says why.
 */
void jp_bci_cache_setup(jvmtiEnv *jvmti)
{
	char ctx[64];
	int writable = bci.cache_budget > 0;
	const char *why = NULL;
	if (bci_cache_context(jvmti, ctx, sizeof ctx) != 0) {
		why = "cannot read the agent's jar";
	} else {
		int mkerr = 0;
		if (writable && mkdirat(bci.cache_fd, ctx, 0700) != 0 && errno != EEXIST)
			mkerr = errno, writable = 0;
		int fd = openat(bci.cache_fd, ctx, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (fd < 0) {
			/* None yet: with nothing to add (the cache is full), nothing
			 * to read either. */
			if (errno == ENOENT && mkerr == 0)
				return;
			why = strerror(mkerr ? mkerr : errno);
		} else if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
			why = "its context directory is not this user's alone";
			close(fd);
		} else {
			pk.dirfd = fd;
			if (bci_cache_key(writable) != 0) {
				why = "no key (the context's key file is missing, unreadable or not this user's alone)";
				close(fd);
				pk.dirfd = -1;
			}
		}
	}
	if (why != NULL) {
		jp_notef("BCI: BCICACHE %s not used: %s", bci.cache_name, why);
		return;
	}
	bci_cache_packs(writable);
	pk.budget = bci.cache_budget;
	bci.cache_writable = writable;
	__atomic_store_n(&bci.cache_on, 1, __ATOMIC_RELEASE);
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
 * the transformer keeps as it is; 0: not held, rewrite it. name is the
 * entry's name (jp_bci_cache_name).
 */
int jp_bci_cache_hit(jvmtiEnv *jvmti, const char *cls, const char *name, jint len, jint *new_len,
		     unsigned char **new_data)
{
	size_t nl = strlen(name);
	struct jp_pack_ref *r = pk.tab != NULL ? pk_slot((const unsigned char *)name, nl) : NULL;
	const char *why = r == NULL || r->name == NULL ? "" : NULL;
	if (why == NULL) {
		int state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
		if (state == 0) {
			uint64_t a, b;
			bci_hash2(r->entry, r->entry_len, 0, 0, &a, &b);
			state = a == r->check ? 1 : 2;
			__atomic_store_n(&r->state, state, __ATOMIC_RELEASE);
		}
		why = state == 1 ? bci_cache_apply(jvmti, cls, r->entry, r->entry_len, len, new_len, new_data)
				 : "damaged: its check does not match";
	}
	if (why != NULL) {
		if (*why)
			bci_cache_say(&pk.said_entry, "BCI: BCICACHE entry %s not used (%s); such entries are rewritten again",
				      name, why);
		__atomic_add_fetch(&bci.cache_misses, 1, __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_add_fetch(&bci.cache_trivial, be32(r->entry + 8), __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.cache_wrapped, be32(r->entry + 12), __ATOMIC_RELAXED);
	__atomic_add_fetch(&bci.cache_hits, 1, __ATOMIC_RELAXED);
	return 1;
}

/* pk_flush_locked writes the buffer as a pack; pk.mu held. */
static void pk_flush_locked(void)
{
	if (pk.len == 0 || !bci.cache_writable)
		return;
	struct jp_pack_out o;
	int ok = pk_create(&o) == 0;
	if (ok && pk_finish(&o, pk_put(&o, pk.buf, pk.len) == 0) == 0) {
		__atomic_add_fetch(&bci.cache_added, pk.pending, __ATOMIC_RELAXED);
	} else {
		bci.cache_writable = 0;
		bci_cache_say(&pk.said_write, "BCI: BCICACHE: cannot write a pack in %s (%s): no more classes are added to it this run",
			      bci.cache_name, strerror(errno));
	}
	pk.pending = 0;
	pk.len = 0;
}

/* jp_bci_cache_flush writes the run's new entries as a pack; at VM death
 * (last), no more are added after them. */
void jp_bci_cache_flush(int last)
{
	pthread_mutex_lock(&pk.mu);
	pk_flush_locked();
	if (last) {
		bci.cache_writable = 0;
		free(pk.buf);
		pk.buf = NULL;
		pk.size = 0;
	}
	pthread_mutex_unlock(&pk.mu);
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
		bci_cache_say(&pk.said_entry, "BCI: BCICACHE entry %s not kept (%s)", name, why);
		return 1;
	}
	size_t nl = strlen(name), rec = JP_PACK_REC + nl + n;
	if (n > JP_CACHE_MAX)
		return 1;
	pthread_mutex_lock(&pk.mu);
	if (bci.cache_writable && (int64_t)rec > pk.budget) {
		bci.cache_writable = 0;
		bci_cache_say(&pk.said_write, "BCI: BCICACHE %s: %s", bci.cache_name,
			      "its size limit is reached: no more classes are added to it this run");
	}
	/* At most JP_PACK_FLUSH (or one entry, if larger) held at once. */
	if (bci.cache_writable && pk.len > 0 && pk.len + rec > JP_PACK_FLUSH)
		pk_flush_locked();
	if (bci.cache_writable && pk.len + rec > pk.size) {
		size_t size = pk.size ? pk.size * 2 : 1u << 20;
		if (size > JP_PACK_FLUSH)
			size = JP_PACK_FLUSH;
		if (size < pk.len + rec)
			size = pk.len + rec;
		unsigned char *b = realloc(pk.buf, size);
		if (b != NULL)
			pk.buf = b, pk.size = size;
	}
	if (bci.cache_writable && pk.len + rec <= pk.size) {
		pk_record(pk.buf + pk.len, (const unsigned char *)name, nl, e, n);
		pk.len += rec;
		pk.budget -= (int64_t)rec;
		pk.pending++;
	}
	pthread_mutex_unlock(&pk.mu);
	return 1;
}
