/*
 * ptt_bpf.c: user-space side of the eBPF backend: maps the work area,
 * claims slots in it and registers threads in the tid->slot map.
 *
 * Only map file descriptors are needed here, no privilege: whoever
 * loaded the programs (this process, or a privileged helper that passed
 * the FDs over) did that part.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "ptt.h"
#include "ptt_internal.h"

/* The work area: element 0 is the header, 1..nslots the slots. */
static struct jp_ptt_slot *area;
static size_t area_len;
static uint64_t nslots;
static int tids_fd = -1;
static uint32_t owner;   /* this process's owner token in the area */
static uint32_t pidns;   /* inode of our PID namespace; 0: the initial one */
static uint64_t hint;    /* slot to start the next search at */
static uint64_t in_use;  /* slots this process holds */
static uint64_t no_slot; /* registrations refused: all slots in use */
static uint64_t unresolved; /* registrations the BPF side never resolved */

/* Test hook (ptttest.ForcePIDNamespace): when non-zero, the next attach
 * registers threads through the pending path as if this process were
 * in the PID namespace with this inode. */
uint32_t jp_ptt_bpf_force_pidns;

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_update(uint64_t key, uint32_t val, uint64_t flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)tids_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)&val;
	a.flags = flags;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) ? -errno : 0;
}

static int map_lookup(uint64_t key, uint32_t *val)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)tids_fd;
	a.key = (uint64_t)(uintptr_t)&key;
	a.value = (uint64_t)(uintptr_t)val;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) ? -errno : 0;
}

static int map_delete(uint64_t key)
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
 * our_pidns returns the inode of the calling process's PID namespace,
 * 0 for the initial one, or -errno when /proc does not say.
 */
static int64_t our_pidns(void)
{
	struct stat st;

	if (jp_ptt_bpf_force_pidns)
		return jp_ptt_bpf_force_pidns;
	if (stat("/proc/self/ns/pid", &st))
		return -errno;
	if (st.st_ino == JP_PTT_INIT_PIDNS)
		return 0;
	return (int64_t)(uint32_t)st.st_ino;
}

/*
 * jp_ptt_bpf_attach maps the work area behind slots_fd (whose header the
 * loader filled in) and remembers tids_fd and the owner token slots are
 * claimed under. The FDs stay owned by the caller and must outlive the
 * attachment.
 */
int jp_ptt_bpf_attach(int slots_fd, int tids, uint32_t token)
{
	struct jp_ptt_hdr h;
	long page = sysconf(_SC_PAGESIZE);
	int64_t ns;
	void *m;

	if (area)
		return -EBUSY;
	if (!token)
		return -EINVAL;
	ns = our_pidns();
	if (ns < 0)
		return (int)ns;
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

	nslots = h.nslots;
	hint = 0;
	in_use = 0;
	no_slot = 0;
	unresolved = 0;
	owner = token;
	pidns = (uint32_t)ns;
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
	tids_fd = -1;
	return err;
}

/* slot_claim returns a slot index (1..nslots) this process now owns, or
 * 0. The claim is a compare-and-swap of the slot's owner word in the
 * shared area, so processes sharing a work area (one jprof pttd) never
 * hand out the same slot; the search starts at a rotating hint so
 * concurrent thread starts spread over the area. */
static uint32_t slot_claim(void)
{
	uint64_t start = __atomic_load_n(&hint, __ATOMIC_RELAXED);

	for (uint64_t k = 0; k < nslots; k++) {
		uint64_t i = 1 + (start + k) % nslots;
		uint32_t *w = (uint32_t *)&area[i].owner, free_ = 0;

		if (__atomic_load_n(w, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(w, &free_, owner, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&hint, i, __ATOMIC_RELAXED);
			__atomic_fetch_add(&in_use, 1, __ATOMIC_RELAXED);
			return (uint32_t)i;
		}
	}
	return 0;
}

/* slot_release gives slot idx back to the area; its tid must be 0. Only
 * if we still own it: a registration that found our dead thread's tid
 * may have freed it already (and counted it out of in_use). */
static void slot_release(uint32_t idx)
{
	uint32_t mine = owner;

	if (__atomic_compare_exchange_n((uint32_t *)&area[idx].owner, &mine, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		__atomic_fetch_sub(&in_use, 1, __ATOMIC_RELEASE);
}

static void gen_bump(void)
{
	__atomic_fetch_add(&hdr()->gen, 1, __ATOMIC_SEQ_CST);
}

/* A sleep that really blocks, as short as the kernel allows: the
 * thread's timer slack (50 µs by default) is lowered around it. */
static void block_briefly(long ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);

	if (slack > 1)
		prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
	nanosleep(&ts, NULL);
	if (slack > 1)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
}

/* Marks a slot whose pending registration was withdrawn, so that a BPF
 * resolution racing the withdrawal fails its compare-and-swap. */
#define TID_WITHDRAWN 0xffffffffu

/*
 * register_pending registers a thread of a PID namespace (see
 * ptt_slot.h): its gettid() is not the tid the BPF programs see, and
 * /proc inside a container does not show the global one. The thread
 * inserts its pending key and renames itself to its own name; the BPF
 * side's task_rename program (or, without it, the thread's next
 * switch-in, which it waits for by blocking briefly), which can compute
 * that key from the task, inserts the global tid and writes it into the
 * slot. Returns the global tid, or 0 when nothing resolved it (then the
 * registration is withdrawn).
 */
static uint32_t register_pending(struct jp_ptt_slot *s, uint32_t idx, uint32_t ns_tid)
{
	/* Short sleeps may return before the thread was ever switched out;
	 * escalate (about 20 ms in all before giving up). */
	static const long waits[] = {1000, 5000, 20000, 50000, 100000, 200000, 500000,
				     1000000, 2000000, 5000000, 10000000};
	uint64_t key = JP_PTT_PENDING_KEY(pidns, ns_tid);
	uint32_t gtid = 0, zero = 0;

	__atomic_fetch_add(&hdr()->pending, 1, __ATOMIC_SEQ_CST);
	if (map_update(key, idx, BPF_ANY) == 0) {
		/* The trigger: renaming the thread to its own name runs the
		 * task_rename program in its context (a few µs). */
		char name[16] = {0};

		if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0)
			prctl(PR_SET_NAME, name, 0, 0, 0);
		gtid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		/* Else (no task_rename program): its next switch-in. */
		for (size_t i = 0; !gtid && i < sizeof(waits) / sizeof(waits[0]); i++) {
			block_briefly(waits[i]);
			gtid = __atomic_load_n(&s->tid, __ATOMIC_ACQUIRE);
		}
		map_delete(key);
	}
	__atomic_fetch_sub(&hdr()->pending, 1, __ATOMIC_SEQ_CST);
	if (gtid)
		return gtid;
	if (!__atomic_compare_exchange_n(&s->tid, &zero, TID_WITHDRAWN, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return zero; /* resolved after all, just now */
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
	return 0;
}

/*
 * register_direct registers a thread of the initial PID namespace,
 * whose gettid() is the tid the BPF programs see: insert tid->slot,
 * taking over the entry of a dead thread with the same tid that never
 * unregistered (and freeing its slot, whoever held it). 0 or -errno.
 */
static int register_direct(uint32_t idx, uint32_t tid)
{
	uint32_t old;
	int err = map_update(tid, idx, BPF_NOEXIST);

	if (err == -EEXIST) {
		if (map_lookup(tid, &old) == 0 && old >= 1 && old <= nslots && old != idx) {
			uint32_t was = tid;

			if (__atomic_compare_exchange_n(&area[old].tid, &was, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
				uint32_t mine = owner;

				if (__atomic_compare_exchange_n(&area[old].owner, &mine, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
					__atomic_fetch_sub(&in_use, 1, __ATOMIC_RELEASE); /* one of ours */
				else
					__atomic_store_n(&area[old].owner, 0, __ATOMIC_RELEASE);
			}
		}
		err = map_update(tid, idx, BPF_ANY);
	}
	return err;
}

/*
 * jp_ptt_bpf_register gives the calling thread a slot:
 *  1. claim a free slot in the shared area and reset it (no BPF program
 *     writes it now: it is in no tid->slot entry, and its tid is 0,
 *     which matches no per-CPU cache, see slot_of in ptt.bpf.c);
 *  2. make the BPF side count it: insert tid->slot (initial PID
 *     namespace) or have the BPF side resolve the global tid (any other
 *     namespace), then bump the header gen so per-CPU caches that
 *     resolved this tid to "no slot" look it up again;
 *  3. start the clock: the thread is on CPU now, but its switch-in may
 *     have happened before it was registered. A compare-and-swap of
 *     last_in from 0 loses to any switch-in the BPF program saw since
 *     step 2 (which then has the right time).
 * The on-CPU time between step 2 and step 3 is lost: an offset at
 * registration, invisible in the differences the profiler takes.
 */
int jp_ptt_bpf_register(jp_ptt_thread *t)
{
	uint32_t idx, gtid;
	struct jp_ptt_slot *s;
	int err = 0;

	if (!area)
		return -ENODEV;
	idx = slot_claim();
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

	if (pidns) {
		gtid = register_pending(s, idx, (uint32_t)t->tid);
		if (!gtid) {
			__atomic_fetch_add(&unresolved, 1, __ATOMIC_RELAXED);
			err = -ESRCH;
		}
	} else {
		gtid = (uint32_t)t->tid;
		__atomic_store_n(&s->tid, gtid, __ATOMIC_RELEASE);
		err = register_direct(idx, gtid);
		if (err)
			__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
		else
			gen_bump();
	}
	if (err) {
		slot_release(idx);
		return err;
	}

	uint64_t zero = 0;
	__atomic_compare_exchange_n(&s->last_in, &zero, jp_ptt_mono_ns(), 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
	t->slot = (int)idx;
	t->bpf_tid = gtid;
	t->bpf_slot = s;
	return 0;
}

/* jp_ptt_bpf_unregister releases the calling thread's slot: clear the
 * tid (the BPF side checks it before charging; a failed swap means a
 * new thread with our tid took the slot over after we were declared
 * dead), delete tid->slot, bump gen, then give the slot back. */
void jp_ptt_bpf_unregister(jp_ptt_thread *t)
{
	uint32_t idx = (uint32_t)t->slot, tid = t->bpf_tid;

	t->bpf_slot = NULL;
	t->slot = -1;
	if (!area || idx < 1 || idx > nslots)
		return;
	if (__atomic_compare_exchange_n(&area[idx].tid, &tid, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		map_delete(t->bpf_tid);
		gen_bump();
	}
	slot_release(idx);
}

/*
 * jp_ptt_bpf_selftest checks, on the calling thread, that the BPF side
 * really counts for threads of this process: register, read, block for
 * 5 ms, read again. A dispatch must have been seen and the sleep must
 * not be charged as thread time. This catches what registration alone
 * cannot: tids the programs do not see (a PID namespace the kernel
 * side cannot resolve), context switches that are not traced. On
 * failure, why says what was seen; returns 0 or -errno.
 */
int jp_ptt_bpf_selftest(char *why, size_t n)
{
	const uint64_t sleep_ns = 5000000;
	jp_ptt_thread t;
	jp_ptt_reading r0, r1;
	int err;

	memset(&t, 0, sizeof(t));
	t.tid = (int)syscall(SYS_gettid);
	t.slot = -1;
	err = jp_ptt_bpf_register(&t);
	if (err) {
		snprintf(why, n, "registering a thread failed: %s%s", strerror(-err),
			 err == -ESRCH ? " (no context switch of the thread was seen)" : "");
		return err;
	}
	jp_ptt_bpf_slot_read(t.bpf_slot, &r0);
	block_briefly((long)sleep_ns);
	jp_ptt_bpf_slot_read(t.bpf_slot, &r1);
	jp_ptt_bpf_unregister(&t);
	if (r1.dispatches == r0.dispatches) {
		snprintf(why, n, "no dispatch of a registered thread was seen across a 5 ms sleep "
			 "(the eBPF programs do not see this process's context switches)");
		return -ESRCH;
	}
	if (r1.v[0] - r0.v[0] >= sleep_ns / 2) {
		snprintf(why, n, "a 5 ms sleep was charged %llu us of thread time",
			 (unsigned long long)((r1.v[0] - r0.v[0]) / 1000));
		return -EPROTO;
	}
	return 0;
}

uint64_t jp_ptt_bpf_nslots(void) { return nslots; }
uint64_t jp_ptt_bpf_in_use(void) { return __atomic_load_n(&in_use, __ATOMIC_RELAXED); }
uint64_t jp_ptt_bpf_no_slot(void) { return __atomic_load_n(&no_slot, __ATOMIC_RELAXED); }
uint64_t jp_ptt_bpf_unresolved(void) { return __atomic_load_n(&unresolved, __ATOMIC_RELAXED); }
uint32_t jp_ptt_bpf_pidns(void) { return pidns; }
