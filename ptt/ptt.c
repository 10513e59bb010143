/*
 * ptt.c: per-thread registration, dispatched on the chosen backend.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "ptt.h"
#include "ptt_internal.h"

jp_ptt_config jp_ptt;

/* Threads that asked for the configured backend and got the clock. */
uint64_t jp_ptt_fallbacks;
uint64_t jp_ptt_perf_fallbacks;

int jp_ptt_thread_init(jp_ptt_thread *t)
{
	int err = 0;

	t->tid = (int)syscall(SYS_gettid);
	t->slot = -1;
	t->perf_page = NULL;
	t->perf_fd = -1;
	t->fallback = 0;
	t->backend = jp_ptt.backend;
	t->bpf_tid = 0;
	t->bpf_slot = NULL;
	t->perf_ring = NULL;
	t->perf_ring_mask = 0;
	t->perf_t0 = 0;
	t->perf_len = 0;
	for (int i = 0; i < JP_PTT_MAX_METRICS; i++) {
		t->hw_fd[i] = -1;
		t->hw_page[i] = NULL;
	}
	t->anchor = (jp_ptt_anchor){ 0, 0, 0 };

	switch (jp_ptt.backend) {
	case JP_PTT_BPF:
		err = jp_ptt_bpf_register(t);
		/* No slot (or a namespace tid never resolved): the thread's own
		 * perf event is next best, a read of tens of ns where the clock
		 * is a syscall (the bpf backend counts time only, which is all
		 * perf_register then opens). Its reads lack interrupt
		 * accounting, and it is still a fallback thread with minima
		 * of its own (t->backend differs). */
		if (err && jp_ptt_perf_register(t) == 0) {
			t->fallback = 1;
			t->backend = JP_PTT_PERF;
			__atomic_fetch_add(&jp_ptt_fallbacks, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&jp_ptt_perf_fallbacks, 1, __ATOMIC_RELAXED);
			return 0;
		}
		break;
	case JP_PTT_PERF:
		err = jp_ptt_perf_register(t);
		break;
	}
	if (err) {
		t->fallback = 1;
		t->backend = JP_PTT_CLOCK;
		__atomic_fetch_add(&jp_ptt_fallbacks, 1, __ATOMIC_RELAXED);
	}
	return err;
}

void jp_ptt_thread_fini(jp_ptt_thread *t)
{
	if (t->bpf_slot)
		jp_ptt_bpf_unregister(t);
	if (t->perf_page || t->perf_fd >= 0)
		jp_ptt_perf_unregister(t);
	if (t->backend != JP_PTT_NONE)
		t->backend = JP_PTT_CLOCK;
}

uint64_t jp_ptt_fallbacks_load(void)
{
	return __atomic_load_n(&jp_ptt_fallbacks, __ATOMIC_RELAXED);
}

uint64_t jp_ptt_perf_fallbacks_load(void)
{
	return __atomic_load_n(&jp_ptt_perf_fallbacks, __ATOMIC_RELAXED);
}

uint64_t jp_ptt_tsc_drifts;
uint64_t jp_ptt_tsc_drift_ppm;

void jp_ptt_tsc_check(const jp_ptt_anchor *a, uint64_t tsc, uint64_t mono, uint64_t mult)
{
	uint64_t dm = mono - a->mono;
	uint64_t pred = (uint64_t)(((unsigned __int128)(tsc - a->tsc) * mult) >> 32);
	uint64_t err = pred > dm ? pred - dm : dm - pred;
	if (err * 1000 <= dm)
		return;
	uint64_t ppm = (uint64_t)(((unsigned __int128)err * 1000000) / dm);
	if (__atomic_fetch_add(&jp_ptt_tsc_drifts, 1, __ATOMIC_RELAXED) == 0)
		__atomic_store_n(&jp_ptt_tsc_drift_ppm, ppm, __ATOMIC_RELAXED);
	__atomic_store_n(&jp_ptt.tsc_mult, 0, __ATOMIC_RELAXED);
}

/* Ticks between the two TSC reads around a pair's clock read above which
 * the pair was interrupted (on a VM the host can also deschedule the vCPU
 * there, unseen by the guest): the clock read then lies anywhere between
 * them. A clean pair takes tens of ticks. */
#define JP_PTT_PAIR_MAX 2048

uint64_t jp_ptt_anchor_renew(jp_ptt_anchor *a, uint64_t in, uint64_t mult, uint64_t c)
{
#ifndef JP_PTT_TSC
	(void)a;
	(void)in;
	(void)mult;
	(void)c;
	return jp_ptt_mono_ns();
#else
	uint64_t m = jp_ptt_mono_ns();
	uint64_t c2 = __builtin_ia32_rdtsc();
	for (int i = 0; i < 3 && c2 - c > JP_PTT_PAIR_MAX; i++) {
		c = __builtin_ia32_rdtsc();
		m = jp_ptt_mono_ns();
		c2 = __builtin_ia32_rdtsc();
	}
	uint64_t mid = c + (c2 - c) / 2;
	if (c2 - c <= JP_PTT_PAIR_MAX && a->mono != 0 && m - a->mono >= JP_PTT_TSC_CHECK_NS)
		jp_ptt_tsc_check(a, mid, m, mult);
	a->in = in;
	a->tsc = mid;
	a->mono = m;
	return m;
#endif
}

uint64_t jp_ptt_tsc_mult_load(void)
{
	return __atomic_load_n(&jp_ptt.tsc_mult, __ATOMIC_RELAXED);
}

uint64_t jp_ptt_tsc_drifts_load(void)
{
	return __atomic_load_n(&jp_ptt_tsc_drifts, __ATOMIC_RELAXED);
}

uint64_t jp_ptt_tsc_drift_ppm_load(void)
{
	return __atomic_load_n(&jp_ptt_tsc_drift_ppm, __ATOMIC_RELAXED);
}

#ifdef JP_PTT_TSC
/* jp_ptt_tsc_pair takes a (TSC, clock) pair: of 8 tries, the one whose
 * two TSC reads around the clock read are closest, so that an interrupt
 * or a preemption inside one try does not skew the pair. */
static void jp_ptt_tsc_pair(uint64_t *tsc, uint64_t *mono)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t a = __builtin_ia32_rdtsc(), m = jp_ptt_mono_ns(), b = __builtin_ia32_rdtsc();
		if (b > a && b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*mono = m;
		}
	}
}
#endif

uint64_t jp_ptt_tsc_rate(int ms)
{
#ifdef JP_PTT_TSC
	struct timespec nap = { ms / 1000, (long)(ms % 1000) * 1000000L };
	uint64_t c0 = 0, m0 = 0, c1 = 0, m1 = 0;
	jp_ptt_tsc_pair(&c0, &m0);
	nanosleep(&nap, NULL);
	jp_ptt_tsc_pair(&c1, &m1);
	if (c1 <= c0 || m1 <= m0)
		return 0;
	uint64_t mult = (uint64_t)(((unsigned __int128)(m1 - m0) << 32) / (c1 - c0));
	return mult < (1ull << 33) ? mult : 0;
#else
	(void)ms;
	return 0;
#endif
}

#ifdef JP_PTT_TSC
static int jp_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}
#endif

uint64_t jp_ptt_tsc_step(void)
{
#ifdef JP_PTT_TSC
	enum { N = 4097 };
	static uint64_t d[N - 1];
	uint64_t prev = __builtin_ia32_rdtsc();
	for (int i = 0; i < N - 1; i++) {
		uint64_t c = __builtin_ia32_rdtsc();
		d[i] = c - prev;
		prev = c;
	}
	/* The median step: the odd short step of a counter that advances
	 * in steps, and interrupts, fall on either side of it. (qsort: an
	 * insertion sort of these took milliseconds of the JVM's start.) */
	qsort(d, N - 1, sizeof d[0], jp_u64_cmp);
	return d[(N - 1) / 2];
#else
	return 0;
#endif
}
