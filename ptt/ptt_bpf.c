/*
 * ptt_bpf.c: user-space side of the eBPF backend: maps the work area,
 * hands out slots and registers threads in the tid->slot map.
 *
 * Only map file descriptors are needed here, no privilege: whoever
 * loaded the programs (this process, or a privileged helper that passed
 * the FDs over) did that part.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "ptt.h"
#include "ptt_internal.h"

/* The work area: element 0 is the header, 1..nslots the slots. */
static struct jp_ptt_slot *area;
static size_t area_len;
static uint64_t nslots;
static int tids_fd = -1;

/* Slot allocation bitmap, bit set = in use; bit i is slot i + 1. Bits
 * past nslots are set at attach so they are never handed out. */
static uint64_t *used;
static uint64_t nwords;
static uint64_t hint;   /* word to start the next search at */
static uint64_t in_use; /* slots allocated */
static uint64_t no_slot; /* registrations refused: all slots in use */

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_update(uint32_t key, uint32_t val, uint64_t flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)tids_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&val;
	a.flags = flags;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) ? -errno : 0;
}

static int map_lookup(uint32_t key, uint32_t *val)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)tids_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)val;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) ? -errno : 0;
}

static int map_delete(uint32_t key)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)tids_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	return sys_bpf(BPF_MAP_DELETE_ELEM, &a) ? -errno : 0;
}

static struct jp_ptt_hdr *hdr(void)
{
	return (struct jp_ptt_hdr *)area;
}

/*
 * jp_ptt_bpf_attach maps the work area behind slots_fd (whose header the
 * loader filled in) and remembers tids_fd. The FDs stay owned by the
 * caller and must outlive the attachment.
 */
int jp_ptt_bpf_attach(int slots_fd, int tids)
{
	struct jp_ptt_hdr h;
	long page = sysconf(_SC_PAGESIZE);
	void *m;

	if (area)
		return -EBUSY;
	/* Read the header first to learn the size: map one page. */
	m = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, slots_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	memcpy(&h, m, sizeof(h));
	munmap(m, (size_t)page);
	if (h.magic != JP_PTT_HDR_MAGIC || h.nslots == 0 || h.nslots > (1u << 20))
		return -EINVAL;

	size_t len = (size_t)(h.nslots + 1) * JP_PTT_SLOT_SIZE;
	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, slots_fd, 0);
	if (m == MAP_FAILED)
		return -errno;

	nwords = (h.nslots + 63) / 64;
	used = calloc(nwords, sizeof(*used));
	if (!used) {
		munmap(m, len);
		return -ENOMEM;
	}
	for (uint64_t i = h.nslots; i < nwords * 64; i++)
		used[i / 64] |= 1ull << (i % 64);
	nslots = h.nslots;
	hint = 0;
	in_use = 0;
	no_slot = 0;
	tids_fd = tids;
	area_len = len;
	area = m;
	return 0;
}

/*
 * jp_ptt_bpf_detach forgets the work area. Threads still registered
 * would read through a dangling pointer after munmap, so then the
 * mapping is kept (and leaked) instead; returns -EBUSY in that case.
 */
int jp_ptt_bpf_detach(void)
{
	int err = 0;

	if (!area)
		return 0;
	if (__atomic_load_n(&in_use, __ATOMIC_ACQUIRE) == 0)
		munmap(area, area_len);
	else
		err = -EBUSY;
	area = NULL;
	free(used);
	used = NULL;
	tids_fd = -1;
	return err;
}

/* slot_alloc returns a free slot index (1..nslots) or 0. Lock-free:
 * claim a clear bit with compare-and-swap, starting at a rotating hint
 * so concurrent thread starts spread over the words. */
static uint32_t slot_alloc(void)
{
	uint64_t start = __atomic_load_n(&hint, __ATOMIC_RELAXED);

	for (uint64_t k = 0; k < nwords; k++) {
		uint64_t w = (start + k) % nwords;
		uint64_t v = __atomic_load_n(&used[w], __ATOMIC_RELAXED);

		while (v != ~0ull) {
			uint64_t bit = (uint64_t)__builtin_ctzll(~v);

			if (__atomic_compare_exchange_n(&used[w], &v, v | (1ull << bit), 0,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				__atomic_store_n(&hint, w, __ATOMIC_RELAXED);
				__atomic_fetch_add(&in_use, 1, __ATOMIC_RELAXED);
				return (uint32_t)(w * 64 + bit + 1);
			}
		}
	}
	return 0;
}

static void slot_free(uint32_t idx)
{
	uint64_t i = idx - 1;

	__atomic_fetch_and(&used[i / 64], ~(1ull << (i % 64)), __ATOMIC_RELEASE);
	__atomic_fetch_sub(&in_use, 1, __ATOMIC_RELEASE);
}

static void gen_bump(void)
{
	__atomic_fetch_add(&hdr()->gen, 1, __ATOMIC_SEQ_CST);
}

/*
 * jp_ptt_bpf_register gives the calling thread a slot:
 *  1. claim a free slot and reset it (no BPF program writes it now: it
 *     is in no tid->slot entry, and its tid field no longer matches any
 *     per-CPU cache, see slot_of in ptt.bpf.c);
 *  2. insert tid->slot, then bump the header gen so per-CPU caches that
 *     resolved this tid to "no slot" look it up again;
 *  3. start the clock: the thread is on CPU now, but its switch-in
 *     happened before it was registered. A compare-and-swap of last_in
 *     from 0 loses to any switch-in the BPF program saw since step 2
 *     (which then has the right time).
 * The on-CPU time between step 2 and step 3 is lost: an offset at
 * registration, invisible in the differences the profiler takes.
 */
int jp_ptt_bpf_register(jp_ptt_thread *t)
{
	uint32_t tid = (uint32_t)t->tid, idx, old;
	struct jp_ptt_slot *s;
	int err;

	if (!area)
		return -ENODEV;
	idx = slot_alloc();
	if (!idx) {
		__atomic_fetch_add(&no_slot, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	s = &area[idx];
	s->dispatches = 0;
	s->interrupts = 0;
	s->run_ns = 0;
	s->last_in = 0;
	s->irq_ns = 0;
	s->irq_start = 0;
	s->flags = 0;
	__atomic_store_n(&s->tid, tid, __ATOMIC_RELEASE);

	err = map_update(tid, idx, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* A dead thread with our tid never called fini: take over
		 * its entry and free its slot. */
		if (map_lookup(tid, &old) == 0 && old >= 1 && old <= nslots && old != idx &&
		    __atomic_load_n(&area[old].tid, __ATOMIC_ACQUIRE) == tid) {
			__atomic_store_n(&area[old].tid, 0, __ATOMIC_RELEASE);
			slot_free(old);
		}
		err = map_update(tid, idx, BPF_ANY);
	}
	if (err) {
		s->tid = 0;
		slot_free(idx);
		return err;
	}
	gen_bump();

	uint64_t zero = 0;
	__atomic_compare_exchange_n(&s->last_in, &zero, jp_ptt_mono_ns(), 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	t->slot = (int)idx;
	t->bpf_slot = s;
	return 0;
}

/* jp_ptt_bpf_unregister releases the calling thread's slot: clear the
 * owner (the BPF side checks it before charging), delete tid->slot,
 * bump gen, then make the slot allocatable. */
void jp_ptt_bpf_unregister(jp_ptt_thread *t)
{
	uint32_t idx = (uint32_t)t->slot;

	t->bpf_slot = NULL;
	t->slot = -1;
	if (!area || idx < 1 || idx > nslots)
		return;
	__atomic_store_n(&area[idx].tid, 0, __ATOMIC_RELEASE);
	map_delete((uint32_t)t->tid);
	gen_bump();
	slot_free(idx);
}

uint64_t jp_ptt_bpf_nslots(void) { return nslots; }
uint64_t jp_ptt_bpf_in_use(void) { return __atomic_load_n(&in_use, __ATOMIC_RELAXED); }
uint64_t jp_ptt_bpf_no_slot(void) { return __atomic_load_n(&no_slot, __ATOMIC_RELAXED); }
