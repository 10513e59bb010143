/*
 * sigcost: what one SAMPLE-style signal costs on this machine, with
 * nothing of the agent in it. The calling thread gets a perf task-clock
 * event that overflows every <period> µs of its CPU time, as SAMPLE's
 * default timer does, and an empty handler; it then runs a fixed loop in
 * phases of 20 ms, the event enabled in every other one. The thread CPU
 * time the enabled phases took beyond the disabled phases' rate, over the
 * signal count, is the cost of one sample's interrupt and signal (kernel,
 * and on a VM the hypervisor's timer and interrupt virtualization).
 * Alternating within one process cancels the machine's drift between
 * runs, which here is larger than the effect.
 *
 * How the event signals (mode):
 *   prof  SIGPROF through the descriptor's fasync (F_SETOWN_EX to the
 *         thread), which perf sends from an irq_work: a self-interrupt.
 *         SAMPLE's way.
 *   trap  perf's own SIGTRAP (attr.sigtrap, Linux 5.13; from 6.11 queued
 *         as work the thread runs on its way back to user space), which
 *         SAMPLE does not use (BENCHMARKS.md says why): the alternative's
 *         price, measured
 *   none  no signal: the timer's interrupts alone
 * The loop (work): cpu, arithmetic in registers; mem, increments
 * scattered over 8 MiB, which shows what an interrupt's exit to the
 * hypervisor costs the caches.
 *
 * Usage: sigcost <prof|trap|none> <period µs> <cpu|mem> [<phases>];
 * prints "cost_us <µs per overflow> overflows <n> signals <n>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long signals;
static unsigned char buf[8 << 20];

static void handler(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)info;
	(void)ctx;
	signals++;
}

static double clock_s(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: sigcost <prof|trap|none> <period us> <cpu|mem> [<phases>]\n");
		return 2;
	}
	const char *mode = argv[1];
	long period = atol(argv[2]);
	int mem = strcmp(argv[3], "mem") == 0;
	int phases = argc > 4 ? atoi(argv[4]) : 200;
	int trap = strcmp(mode, "trap") == 0, prof = strcmp(mode, "prof") == 0;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(trap ? SIGTRAP : SIGPROF, &sa, NULL);
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = (unsigned long)period * 1000;
	a.disabled = 1;
	if (trap) {
		a.sigtrap = 1;
		a.remove_on_exec = 1;
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("sigcost: perf_event_open");
		return 1;
	}
	if (prof) {
		struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
		if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETOWN_EX, &o) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0) {
			perror("sigcost: fcntl");
			return 1;
		}
	}

	double cpu[2] = { 0, 0 }, work[2] = { 0, 0 };
	uint64_t x = 1;
	for (int ph = 0; ph < phases; ph++) {
		int on = ph & 1;
		ioctl(fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
		double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), t0 = clock_s(CLOCK_MONOTONIC);
		long n = 0;
		while (clock_s(CLOCK_MONOTONIC) - t0 < 0.02) {
			for (int i = 0; i < 256; i++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				if (mem)
					buf[(x >> 24) & (sizeof buf - 1)]++;
				else
					x ^= x >> 29;
			}
			n++;
		}
		cpu[on] += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		work[on] += (double)n;
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	uint64_t count = 0; /* task-clock ns while enabled */
	if (read(fd, &count, sizeof count) != (ssize_t)sizeof count)
		count = 0;
	/* Overflows: the enabled time over the period (what the signals
	 * count too, where there are signals). */
	double overflows = (double)count / ((double)period * 1000);
	double extra = cpu[1] - work[1] * (cpu[0] / work[0]);
	printf("cost_us %.2f overflows %.0f signals %ld sink %u\n", overflows > 0 ? extra / overflows * 1e6 : 0, overflows,
	       signals, (unsigned)(x & 1));
	return 0;
}
