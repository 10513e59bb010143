/*
 * bci_packs.c: BCICACHE's store, the files behind bci_cache.c. The agent
 * (Go) opened and checked BCICACHE's directory; everything here works
 * from that descriptor, so the path cannot be swapped after the check.
 * Under it, a context directory, named after what decides the
 * transformer's output (its jar, the flags, the filters, the JVM, the
 * format), holds a secret key and pack files. Entries are named with a
 * hash seeded with the key, so that bytes crafted to collide with
 * another class's entry would need it.
 *
 * A run maps every pack at VM init and indexes the records' headers; a
 * record's check is verified at its first lookup. The entries a run makes
 * go to a buffer written as one new pack, whole (a temporary file,
 * synced, renamed), when it reaches JP_PACK_FLUSH and at VM death: a
 * file per class would cost a run some five system calls per class, more
 * than the rest of a hit. Past JP_PACK_MERGE packs, a run merges them
 * into one. A bad pack is used up to its bad record, and said once.
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

#include "bci_cache.h"

/* The format of packs and entries, and what a handle's mark means: a
 * change to either must change the context (bci_context.c). */
#define JP_CACHE_FORMAT "libjprof-bcicache-3"
#define JP_PACK_MAGIC 0x4a504b31u  /* a pack: "JPK1" */
#define JP_PACK_FLUSH (16u << 20) /* a run's new entries, written as a pack at this */
#define JP_PACK_MERGE 8
#define JP_PACK_REC 14 /* a record's bytes besides its name and entry */

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
	/* The class path's jars (java.class.path, then the boot class path's
	 * append), stamped and keyed: part of the name of an entry whose
	 * rewrite depends on their classes (jp_bci_cache_name_cp). */
	uint64_t cp;
	struct jp_pack_ref *tab; /* open addressing, by name; read-only once published */
	uint32_t cap, n;
	/* This run's new entries, a pack's records, not yet written. */
	pthread_mutex_t mu;
	unsigned char *buf;
	size_t len, size;
	uint64_t pending;
	int64_t budget; /* bytes this run may still add */
	int said_pack, said_write;
} pk = { .dirfd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

/* jp_bci_cache_name writes the entry's name for a class into out (at
 * least JP_BCI_CACHE_NAME bytes): the class name made safe for a file
 * name and cut at 120 characters, the length, and the keyed hash. */
void jp_bci_cache_name(const char *cls, const unsigned char *data, jint len, char *out)
{
	uint64_t a, b;
	jp_cache_hash2(data, (size_t)len, pk.key[0], pk.key[1], &a, &b);
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

/* jp_bci_cache_name_cp writes into out the name of the entry of a
 * class whose rewrite depends on classes of the class path's jars (its
 * trivial methods call theirs): its plain name with the jars' stamp, so
 * that a changed jar is a miss. */
void jp_bci_cache_name_cp(const char *plain, char *out)
{
	snprintf(out, JP_BCI_CACHE_NAME, "%s-%016llx", plain, (unsigned long long)pk.cp);
}

void jp_cache_say(int *said, const char *fmt, const char *what, const char *why)
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
	if (n < 4 || jp_be32(p) != JP_PACK_MAGIC)
		return -1;
	long added = 0;
	for (size_t at = 4; at < n;) {
		if (at + 2 > n)
			return -1;
		size_t nl = (size_t)p[at] << 8 | p[at + 1];
		if (nl == 0 || at + JP_PACK_REC + nl > n)
			return -1;
		size_t el = jp_be32(p + at + 2 + nl);
		if (el < 24 || at + JP_PACK_REC + nl + el > n)
			return -1;
		if ((pk.n + 1) * 2 > pk.cap && pk_grow() != 0)
			return added; /* no memory: the rest is not indexed */
		struct jp_pack_ref *r = pk_slot(p + at + 2, nl);
		if (r->name == NULL) {
			*r = (struct jp_pack_ref){ p + at + 2, p + at + JP_PACK_REC + nl, (uint32_t)nl, (uint32_t)el,
						   (uint64_t)jp_be32(p + at + 6 + nl) << 32 | jp_be32(p + at + 10 + nl), 0 };
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
	jp_cache_hash2(e, el, 0, 0, &a, &b);
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
					jp_cache_say(&pk.said_pack, "BCI: BCICACHE pack %s not used past a bad record (%s)", names[i],
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
	if (jp_bci_cache_context(jvmti, JP_CACHE_FORMAT, ctx, sizeof ctx) != 0) {
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
	uint64_t a = pk.key[0], b = pk.key[1];
	static const char *const paths[] = { "java.class.path", "jdk.boot.class.path.append" };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		char *v = NULL;
		if ((*jvmti)->GetSystemProperty(jvmti, paths[i], &v) == JVMTI_ERROR_NONE && v != NULL) {
			jp_bci_cache_stamp(v, i == 0 ? JP_STAMP_CWD : 0, &a, &b);
			(*jvmti)->Deallocate(jvmti, (unsigned char *)v);
		}
		jp_cache_hash2((const unsigned char *)"|", 1, a, b, &a, &b); /* ends a list */
	}
	pk.cp = a ^ b;
	bci_cache_packs(writable);
	pk.budget = bci.cache_budget;
	bci.cache_writable = writable;
	__atomic_store_n(&bci.cache_on, 1, __ATOMIC_RELEASE);
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
		jp_cache_say(&pk.said_write, "BCI: BCICACHE: cannot write a pack in %s (%s): no more classes are added to it this run",
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
 * jp_pack_find is the entry of this name, verified (its check, at its
 * first lookup): NULL if there is none, and *damaged set if there is one
 * whose check fails.
 */
const unsigned char *jp_pack_find(const char *name, size_t *n, int *damaged)
{
	*damaged = 0;
	size_t nl = strlen(name);
	struct jp_pack_ref *r = pk.tab != NULL ? pk_slot((const unsigned char *)name, nl) : NULL;
	if (r == NULL || r->name == NULL)
		return NULL;
	int state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
	if (state == 0) {
		uint64_t a, b;
		jp_cache_hash2(r->entry, r->entry_len, 0, 0, &a, &b);
		state = a == r->check ? 1 : 2;
		__atomic_store_n(&r->state, state, __ATOMIC_RELEASE);
	}
	*damaged = state == 2;
	*n = r->entry_len;
	return state == 1 ? r->entry : NULL;
}

/*
 * jp_pack_add keeps an entry for this run's pack: written when the
 * entries reach JP_PACK_FLUSH (at most that, or one entry if larger, is
 * held at once) and at VM death; not past the run's budget.
 */
void jp_pack_add(const char *name, const unsigned char *e, size_t n)
{
	size_t nl = strlen(name), rec = JP_PACK_REC + nl + n;
	pthread_mutex_lock(&pk.mu);
	if (bci.cache_writable && (int64_t)rec > pk.budget) {
		bci.cache_writable = 0;
		jp_cache_say(&pk.said_write, "BCI: BCICACHE %s: %s", bci.cache_name,
			     "its size limit is reached: no more classes are added to it this run");
	}
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
}
