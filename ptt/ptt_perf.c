/*
 * ptt_perf.c: the perf_event backend: per-thread self-monitoring events
 * opened by the thread itself, no privilege needed for thread time.
 *
 * Thread time. The documented self-monitoring read extrapolates
 * time_running with rdtsc and the control page's time_mult/shift/zero,
 * but only when cap_user_time is set, and it is 0 on kvm-clock guests
 * and any machine without a stable TSC. Instead we open a
 * SW_DUMMY event with context_switch=1 and an overwrite-mode ring (the
 * ring is mapped read-only, so the kernel never waits for a reader): at
 * every switch-in the kernel refreshes the control page (time_running as
 * of that instant, lock += 2) and writes a PERF_RECORD_SWITCH stamped
 * with CLOCK_MONOTONIC (use_clockid). Thread time is then
 *   time_running + (CLOCK_MONOTONIC now - stamp of the last switch-in)
 * which costs a vDSO clock read and works with or without cap_user_time.
 * Interrupt time stays in (perf cannot see interrupts without privilege)
 * and interrupts are not counted.
 *
 * The trade-off against a task-clock read() (exact, ~300 ns syscall) or
 * CLOCK_THREAD_CPUTIME_ID (~245 ns) is two mmapped pages and one FD per
 * thread, and the perf_event_mlock_kb budget (516 KiB per user by
 * default, ~125 threads without CAP_IPC_LOCK); a thread whose mmap is
 * refused falls back to the clock.
 *
 * Hardware metrics (PTT_INSTS, PTT_CYCLES): one counting event per
 * metric, read with rdpmc under the control page's seqlock.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include "ptt.h"
#include "ptt_internal.h"

/* Set by Setup: 1 when hardware counters must exclude the kernel
 * (perf_event_paranoid >= 2 without CAP_PERFMON). */
int jp_ptt_perf_exclude_kernel;

static int perf_open(struct perf_event_attr *a)
{
	int fd = (int)syscall(__NR_perf_event_open, a, 0 /* this thread */, -1 /* any CPU */,
			      -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void time_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->context_switch = 1;
	a->sample_id_all = 1;
	a->sample_type = PERF_SAMPLE_TIME; /* records are header + time: 16 bytes */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->read_format = PERF_FORMAT_TOTAL_TIME_RUNNING; /* for the read() slow path */
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

static int hw_attr(struct perf_event_attr *a, int metric, int exclude_kernel)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_HARDWARE;
	switch (metric) {
	case JP_M_INSTS:
		a->config = PERF_COUNT_HW_INSTRUCTIONS;
		break;
	case JP_M_CYCLES:
		a->config = PERF_COUNT_HW_CPU_CYCLES;
		break;
	default:
		return -EINVAL;
	}
	a->exclude_kernel = exclude_kernel;
	a->exclude_hv = 1;
	return 0;
}

/* jp_ptt_perf_probe opens and closes one event of the kind metric
 * needs, for the calling thread; returns 0 or -errno (ENOENT: no PMU). */
int jp_ptt_perf_probe(int metric, int exclude_kernel)
{
	struct perf_event_attr a;
	int fd;

	if (metric == JP_M_TIME)
		time_attr(&a);
	else if (hw_attr(&a, metric, exclude_kernel))
		return -EINVAL;
	fd = perf_open(&a);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* jp_ptt_perf_user_time says whether the kernel offers cap_user_time
 * here (for Status.Notes); 1, 0, or -errno. */
int jp_ptt_perf_user_time(void)
{
	struct perf_event_attr a;
	long page = sysconf(_SC_PAGESIZE);
	int fd, r;
	void *m;

	time_attr(&a);
	fd = perf_open(&a);
	if (fd < 0)
		return fd;
	m = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		r = -errno;
	} else {
		r = ((struct perf_event_mmap_page *)m)->cap_user_time ? 1 : 0;
		munmap(m, (size_t)page);
	}
	close(fd);
	return r;
}

int jp_ptt_perf_register(jp_ptt_thread *t)
{
	struct perf_event_attr a;
	long page = sysconf(_SC_PAGESIZE);
	size_t len = 2 * (size_t)page; /* control page + one ring page (256 records) */
	void *m;
	int fd, err;

	time_attr(&a);
	fd = perf_open(&a);
	if (fd < 0)
		return fd;
	/* Until the first switch-out the thread has run continuously since
	 * the open; stamping after it returns errs low, never high, so the
	 * hand-over to the record-based value stays monotonic. */
	t->perf_t0 = jp_ptt_mono_ns();
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	t->perf_fd = fd;
	t->perf_page = m;
	t->perf_len = len;
	t->perf_ring = (const volatile char *)m + page;
	t->perf_ring_mask = (uint64_t)page - 1;

	for (int i = 0; i < jp_ptt.nmetrics; i++) {
		if (jp_ptt.metric[i] == JP_M_TIME)
			continue;
		if (hw_attr(&a, jp_ptt.metric[i], jp_ptt_perf_exclude_kernel)) {
			err = -EINVAL;
			goto fail;
		}
		fd = perf_open(&a);
		if (fd < 0) {
			err = fd;
			goto fail;
		}
		t->hw_fd[i] = fd;
		m = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			err = -errno;
			goto fail;
		}
		t->hw_page[i] = m;
	}
	return 0;
fail:
	jp_ptt_perf_unregister(t);
	return err;
}

void jp_ptt_perf_unregister(jp_ptt_thread *t)
{
	long page = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < JP_PTT_MAX_METRICS; i++) {
		if (t->hw_page[i])
			munmap(t->hw_page[i], (size_t)page);
		if (t->hw_fd[i] >= 0)
			close(t->hw_fd[i]);
		t->hw_page[i] = NULL;
		t->hw_fd[i] = -1;
	}
	if (t->perf_page)
		munmap(t->perf_page, t->perf_len);
	if (t->perf_fd >= 0)
		close(t->perf_fd);
	t->perf_page = NULL;
	t->perf_ring = NULL;
	t->perf_fd = -1;
}

/* Exact thread time by syscall: time_running of the dummy event, the
 * same clock the fast path extrapolates. */
uint64_t jp_ptt_perf_time_slow(const jp_ptt_thread *t)
{
	uint64_t buf[2]; /* value, time_running */

	if (read(t->perf_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return jp_ptt_clock_ns();
	return buf[1];
}

uint64_t jp_ptt_perf_count_slow(const jp_ptt_thread *t, int col)
{
	uint64_t v;

	if (read(t->hw_fd[col], &v, sizeof(v)) != (ssize_t)sizeof(v))
		return 0;
	return v;
}
