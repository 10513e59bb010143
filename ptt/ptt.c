/*
 * ptt.c: per-thread registration, dispatched on the chosen backend.
 */
#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "ptt.h"
#include "ptt_internal.h"

jp_ptt_config jp_ptt;

/* Threads that asked for the configured backend and got the clock. */
uint64_t jp_ptt_fallbacks;

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

	switch (jp_ptt.backend) {
	case JP_PTT_BPF:
		err = jp_ptt_bpf_register(t);
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
