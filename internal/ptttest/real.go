package ptttest

// Measurements on real threads, in a translation unit of their own: the
// clock is not scripted here, so the reads are the agent's own (the TSC
// path when ptt.Setup chose it).

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../../ptt
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "ptt.h"

typedef struct th_result {
	int err, fallback, slot, backend;
	uint64_t ptt, cpu, irq_ns; // deltas, ns
	uint64_t dispatches, interrupts;
	uint64_t pcount; // schedstat dispatches over the same span
	uint64_t reads, backwards;
	uint64_t first, last;
} th_result;

static uint64_t th_irq_ns(const jp_ptt_thread *t)
{
	return t->bpf_slot ? t->bpf_slot->irq_ns : 0;
}

// The kernel's count of this thread's runs on a CPU (schedstat pcount).
static uint64_t th_pcount(void)
{
	unsigned long long run = 0, wait = 0, pcount = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu %llu", &run, &wait, &pcount) != 3)
		pcount = 0;
	fclose(f);
	return pcount;
}

// Busy for ms of thread CPU time, reading around it.
static void th_busy(long ms, th_result *o)
{
	jp_ptt_thread t;
	jp_ptt_reading r0 = {0}, r1 = {0};
	volatile uint64_t x = 0;

	memset(o, 0, sizeof(*o));
	o->err = jp_ptt_thread_init(&t);
	o->fallback = t.fallback;
	o->slot = t.slot;
	o->backend = t.backend;
	uint64_t p0 = th_pcount();
	uint64_t i0 = th_irq_ns(&t);
	jp_ptt_read(&t, &r0);
	uint64_t c0 = jp_ptt_clock_ns(), c1;
	do {
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i * i;
		c1 = jp_ptt_clock_ns();
	} while (c1 - c0 < (uint64_t)ms * 1000000);
	jp_ptt_read(&t, &r1);
	uint64_t i1 = th_irq_ns(&t);
	o->pcount = th_pcount() - p0;
	o->ptt = r1.v[0] - r0.v[0];
	o->cpu = c1 - c0;
	o->irq_ns = i1 - i0;
	o->dispatches = r1.dispatches - r0.dispatches;
	o->interrupts = r1.interrupts - r0.interrupts;
	jp_ptt_thread_fini(&t);
}

// n sleeps of us microseconds: each is a switch-out and a dispatch.
static void th_sleep(int n, long us, th_result *o)
{
	jp_ptt_thread t;
	jp_ptt_reading r0 = {0}, r1 = {0};
	struct timespec ts = {0, us * 1000};

	memset(o, 0, sizeof(*o));
	o->err = jp_ptt_thread_init(&t);
	o->fallback = t.fallback;
	o->backend = t.backend;
	jp_ptt_read(&t, &r0);
	uint64_t c0 = jp_ptt_clock_ns();
	for (int i = 0; i < n; i++)
		nanosleep(&ts, NULL);
	uint64_t c1 = jp_ptt_clock_ns();
	jp_ptt_read(&t, &r1);
	o->ptt = r1.v[0] - r0.v[0];
	o->cpu = c1 - c0;
	o->dispatches = r1.dispatches - r0.dispatches;
	o->interrupts = r1.interrupts - r0.interrupts;
	jp_ptt_thread_fini(&t);
}

// n back-to-back reads, with a short sleep every 1000 to add
// dispatches; counts readings that went backwards.
static void th_monotone(long n, th_result *o)
{
	jp_ptt_thread t;
	jp_ptt_reading r = {0}, p = {0};
	struct timespec ts = {0, 20000};

	memset(o, 0, sizeof(*o));
	o->err = jp_ptt_thread_init(&t);
	o->fallback = t.fallback;
	o->backend = t.backend;
	uint64_t c0 = jp_ptt_clock_ns();
	jp_ptt_read(&t, &p);
	o->first = p.v[0];
	uint64_t d0 = p.dispatches;
	for (long i = 0; i < n; i++) {
		if (i % 1000 == 999)
			nanosleep(&ts, NULL);
		jp_ptt_read(&t, &r);
		if (r.v[0] < p.v[0] || r.dispatches < p.dispatches || r.interrupts < p.interrupts)
			o->backwards++;
		p = r;
	}
	o->cpu = jp_ptt_clock_ns() - c0;
	o->last = p.v[0];
	o->ptt = p.v[0] - o->first;
	o->dispatches = p.dispatches - d0;
	o->reads = (uint64_t)n;
	jp_ptt_thread_fini(&t);
}

*/
import "C"

import "github.com/libjprof/libjprof/ptt"

// ThreadResult mirrors th_result.
type ThreadResult struct {
	Err, Fallback, Slot    int
	Backend                ptt.Backend // jp_ptt_thread.backend after init
	PTT, CPU, IrqNs        uint64
	Dispatches, Interrupts uint64
	Pcount                 uint64
	Reads, Backwards       uint64
	First, Last            uint64
}

func fromC(r *C.th_result) ThreadResult {
	return ThreadResult{int(r.err), int(r.fallback), int(r.slot), ptt.Backend(r.backend), uint64(r.ptt), uint64(r.cpu), uint64(r.irq_ns),
		uint64(r.dispatches), uint64(r.interrupts), uint64(r.pcount), uint64(r.reads), uint64(r.backwards), uint64(r.first), uint64(r.last)}
}

// The following run on the calling goroutine's OS thread for the whole
// C call, registering and unregistering it.

func BusyThread(ms int) ThreadResult {
	var r C.th_result
	C.th_busy(C.long(ms), &r)
	return fromC(&r)
}

func SleepThread(n int, us int) ThreadResult {
	var r C.th_result
	C.th_sleep(C.int(n), C.long(us), &r)
	return fromC(&r)
}

func MonotoneThread(n int) ThreadResult {
	var r C.th_result
	C.th_monotone(C.long(n), &r)
	return fromC(&r)
}
