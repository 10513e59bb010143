package ptttest

// C helpers for the tests (cgo is not allowed in _test.go files).

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../../ptt
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The read's test seam: this translation unit scripts the clock and
// changes the slot between the snapshot and the re-read of seq.
struct jp_ptt_slot;
static void th_hook(volatile struct jp_ptt_slot *s, int attempt);
static uint64_t th_clock(void);
#define JP_PTT_SLOT_HOOK(s, attempt) th_hook((volatile struct jp_ptt_slot *)(s), attempt)
#define JP_PTT_READ_CLOCK() th_clock()
#include "ptt.h"
#include "ptt_internal.h"

enum { TH_SWITCH = 1, TH_IRQ = 2, TH_BEGIN = 3, TH_END = 4 };

typedef struct th_change {
	int attempt; // apply when the read is at this attempt
	int kind;    // TH_*
	uint64_t a, b;
} th_change;

static struct {
	uint64_t clock[8];
	int nclock, iclock;
	th_change chg[8];
	int nchg;
} th;

// The scripted clock: the next value, the last one repeated; the real
// clock when no script is loaded (registration and pool tests).
static uint64_t th_clock(void)
{
	if (!th.nclock)
		return jp_ptt_mono_ns();
	uint64_t v = th.clock[th.iclock];
	if (th.iclock < th.nclock - 1)
		th.iclock++;
	return v;
}

// What the BPF programs would do, run "between" two reads of seq.
static void th_hook(volatile struct jp_ptt_slot *s, int attempt)
{
	for (int i = 0; i < th.nchg; i++) {
		th_change *c = &th.chg[i];
		if (c->attempt != attempt)
			continue;
		switch (c->kind) {
		case TH_SWITCH: // switched out (a ns more run) and in again at b
			s->seq++;
			s->run_ns += c->a;
			s->last_in = 0;
			s->seq++;
			s->seq++;
			s->dispatches++;
			s->last_in = c->b;
			s->seq++;
			break;
		case TH_IRQ: // an interrupt of a ns, entered and left
			s->seq += 2;
			s->interrupts++;
			s->seq += 2;
			s->irq_ns += c->a;
			break;
		case TH_BEGIN: // an update starts (seq odd)
			s->seq++;
			break;
		case TH_END:
			s->seq++;
			break;
		}
	}
}

static int th_slot_read(struct jp_ptt_slot *s, const uint64_t *clock, int nclock,
			const th_change *chg, int nchg, jp_ptt_reading *r)
{
	memset(&th, 0, sizeof(th));
	memcpy(th.clock, clock, sizeof(uint64_t) * (size_t)nclock);
	th.nclock = nclock;
	memcpy(th.chg, chg, sizeof(th_change) * (size_t)nchg);
	th.nchg = nchg;
	int n = jp_ptt_bpf_slot_read(s, r);
	memset(&th, 0, sizeof(th));
	return n;
}

// init/fini n times on this thread; returns the number of failures.
static int th_cycle_one(int n, int *maxslot)
{
	int fails = 0;

	*maxslot = 0;
	for (int i = 0; i < n; i++) {
		jp_ptt_thread t;
		if (jp_ptt_thread_init(&t) || t.fallback)
			fails++;
		if (t.slot > *maxslot)
			*maxslot = t.slot;
		jp_ptt_thread_fini(&t);
	}
	return fails;
}

// A dead thread that never called fini leaves its tid behind; the next
// registration under the same tid takes the entry over.
static int th_reregister(uint64_t *in_use_mid, uint64_t *in_use_end)
{
	jp_ptt_thread dead, t;
	int err = jp_ptt_thread_init(&dead);
	if (!err)
		err = jp_ptt_thread_init(&t);
	*in_use_mid = jp_ptt_bpf_in_use();
	jp_ptt_thread_fini(&t);
	*in_use_end = jp_ptt_bpf_in_use();
	return err;
}

// ---- many threads at once ----

typedef struct th_pool {
	pthread_barrier_t registered, done;
	int slots[4096];
	int fallback[4096];
	int backend[4096];
} th_pool;

typedef struct th_arg { th_pool *p; int i; } th_arg;

static void *th_worker(void *v)
{
	th_arg *a = v;
	jp_ptt_thread t;
	jp_ptt_reading r = {0};

	jp_ptt_thread_init(&t);
	a->p->slots[a->i] = t.slot;
	a->p->fallback[a->i] = t.fallback;
	a->p->backend[a->i] = t.backend;
	jp_ptt_read(&t, &r);
	pthread_barrier_wait(&a->p->registered); // all hold a slot (or fell back) now
	pthread_barrier_wait(&a->p->done);
	jp_ptt_thread_fini(&t);
	return NULL;
}

// n threads register together, then all fini. Reports slots handed out
// (distinct, in 1..nslots) and fallbacks. in_use: while all are registered.
static int th_pool_round(int n, int *distinct, int *fallbacks, int *perfs, int *clocks, uint64_t *in_use)
{
	th_pool *p;
	pthread_t tid[4096];
	th_arg arg[4096];
	char seen[4097];

	if (n > 4096)
		return -1;
	p = calloc(1, sizeof(*p));
	pthread_barrier_init(&p->registered, NULL, (unsigned)n + 1);
	pthread_barrier_init(&p->done, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		arg[i].p = p;
		arg[i].i = i;
		pthread_create(&tid[i], NULL, th_worker, &arg[i]);
	}
	pthread_barrier_wait(&p->registered);
	*in_use = jp_ptt_bpf_in_use();
	pthread_barrier_wait(&p->done);
	for (int i = 0; i < n; i++)
		pthread_join(tid[i], NULL);

	memset(seen, 0, sizeof(seen));
	*distinct = 0;
	*fallbacks = 0;
	*clocks = 0;
	*perfs = 0;
	for (int i = 0; i < n; i++) {
		if (p->backend[i] == JP_PTT_CLOCK)
			(*clocks)++;
		if (p->backend[i] == JP_PTT_PERF)
			(*perfs)++;
		if (p->fallback[i]) {
			(*fallbacks)++;
			continue;
		}
		int s = p->slots[i];
		if (s >= 1 && s <= 4096 && !seen[s]) {
			seen[s] = 1;
			(*distinct)++;
		}
	}
	pthread_barrier_destroy(&p->registered);
	pthread_barrier_destroy(&p->done);
	free(p);
	return 0;
}

static void th_force_pidns(uint32_t ino) { jp_ptt_bpf_force_pidns = ino; }
// th_tsc_drift runs the anchor's rate check on a pair 20 ms after an
// anchor, whose TSC advanced ppm parts per million more than the clock.
static void th_tsc_drift(long ppm)
{
	uint64_t mult = jp_ptt.tsc_mult;
	if (mult == 0)
		return;
	jp_ptt_anchor a = { .in = 1, .tsc = 1000, .mono = 1000000000 };
	uint64_t dm = 20000000;
	uint64_t ticks = (uint64_t)(((unsigned __int128)dm << 32) / mult);
	ticks += (uint64_t)((__int128)ticks * ppm / 1000000);
	jp_ptt_tsc_check(&a, a.tsc + ticks, a.mono + dm, mult);
}
*/
import "C"

import (
	"golang.org/x/sys/unix"

	// The C side of package ptt (jp_ptt, the backends' registration)
	// is what these helpers call into.
	_ "github.com/libjprof/libjprof/ptt"
)

// ForcePIDNamespace makes the next ptt.Setup or ptt.SetupFromFDs
// register threads as a process in the PID namespace with inode ino
// would (a pending key the BPF side resolves), even in the initial
// namespace; 0 restores the real namespace. With the inode of the real
// one (OwnPIDNamespace) the BPF side resolves every thread; with any
// other, none.
func ForcePIDNamespace(ino uint32) { C.th_force_pidns(C.uint32_t(ino)) }

// OwnPIDNamespace is the inode of this process's PID namespace.
func OwnPIDNamespace() (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, err
	}
	return uint32(st.Ino), nil
}

// SlotState mirrors struct jp_ptt_slot for the retry-loop tests.
type SlotState struct {
	Seq, Dispatches, Interrupts, RunNs, LastIn, IrqNs, IrqStart uint64
}

// change kinds for SlotReadScripted: what the BPF side does between the
// reader's two reads of seq.
const (
	ChSwitch = C.TH_SWITCH // A ns more run, switched in again at B
	ChIRQ    = C.TH_IRQ    // an interrupt of A ns
	ChBegin  = C.TH_BEGIN  // an update begins (seq odd)
	ChEnd    = C.TH_END    // the update ends
)

type Change struct {
	Attempt, Kind int
	A, B          uint64
}

type Reading struct {
	Time, Dispatches, Interrupts uint64
}

// SlotReadScripted runs jp_ptt_bpf_slot_read on a slot holding s, with
// the clock returning clock[0], clock[1], ... (the last repeated) and
// the changes applied between the snapshot and the seq re-read.
func SlotReadScripted(s SlotState, clock []uint64, changes []Change) (r Reading, retries int, after SlotState) {
	var cs C.struct_jp_ptt_slot
	cs.seq = C.ulonglong(s.Seq)
	cs.dispatches = C.ulonglong(s.Dispatches)
	cs.interrupts = C.ulonglong(s.Interrupts)
	cs.run_ns = C.ulonglong(s.RunNs)
	cs.last_in = C.ulonglong(s.LastIn)
	cs.irq_ns = C.ulonglong(s.IrqNs)
	cs.irq_start = C.ulonglong(s.IrqStart)
	var clk [8]C.uint64_t
	for i, v := range clock[:min(len(clock), 8)] {
		clk[i] = C.uint64_t(v)
	}
	var chg [8]C.th_change
	for i, c := range changes[:min(len(changes), 8)] {
		chg[i] = C.th_change{attempt: C.int(c.Attempt), kind: C.int(c.Kind), a: C.uint64_t(c.A), b: C.uint64_t(c.B)}
	}
	var cr C.jp_ptt_reading
	n := C.th_slot_read(&cs, &clk[0], C.int(max(1, min(len(clock), 8))), &chg[0], C.int(min(len(changes), 8)), &cr)
	after = SlotState{uint64(cs.seq), uint64(cs.dispatches), uint64(cs.interrupts), uint64(cs.run_ns),
		uint64(cs.last_in), uint64(cs.irq_ns), uint64(cs.irq_start)}
	return Reading{uint64(cr.v[0]), uint64(cr.dispatches), uint64(cr.interrupts)}, int(n), after
}

// CycleThread registers and unregisters the calling thread n times.
func CycleThread(n int) (fails, maxSlot int) {
	var m C.int
	f := C.th_cycle_one(C.int(n), &m)
	return int(f), int(m)
}

func Reregister() (err int, inUseMid, inUseEnd uint64) {
	var mid, end C.uint64_t
	e := C.th_reregister(&mid, &end)
	return int(e), uint64(mid), uint64(end)
}

// PoolRound starts n C threads that register at once, then fini.
// perfs and clocks count the threads whose jp_ptt_thread.backend says
// perf and clock.
func PoolRound(n int) (distinct, fallbacks, perfs, clocks int, inUse uint64) {
	var d, f, pf, c C.int
	var u C.uint64_t
	C.th_pool_round(C.int(n), &d, &f, &pf, &c, &u)
	return int(d), int(f), int(pf), int(c), uint64(u)
}

// TSCDrift runs the TSC path's rate check as a new anchor would after
// 20 ms in which the TSC ran ppm parts per million fast (negative: slow).
func TSCDrift(ppm int) { C.th_tsc_drift(C.long(ppm)) }
