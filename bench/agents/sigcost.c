/*
 * sigcost: what one SAMPLE-style signal costs on this machine, with
 * nothing of the agent in it. The calling thread gets a perf task-clock
 * event that signals it (SIGPROF, F_SETOWN_EX to the thread) every
 * <period> µs of its CPU time, as SAMPLE's default timer does, and an
 * empty handler; it then spins a fixed loop. Run with period 0 (no event)
 * and with a period: the thread CPU time difference over the signal count
 * is the cost of delivering one signal (kernel, and on a VM the
 * hypervisor's timer and interrupt virtualization).
 *
 * Usage: sigcost <period µs, 0 for none> [<loop iterations, default 4e8>];
 * prints "cpu <s> signals <n>".
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long signals;

static void handler(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)info;
	(void)ctx;
	signals++;
}

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long period = argc > 1 ? atol(argv[1]) : 0;
	long iters = argc > 2 ? atol(argv[2]) : 400000000;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	if (period > 0) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof a);
		a.size = sizeof a;
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.sample_period = (unsigned long)period * 1000;
		a.wakeup_events = 1;
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
		if (fd < 0) {
			perror("sigcost: perf_event_open");
			return 1;
		}
		struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
		if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETOWN_EX, &o) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0) {
			perror("sigcost: fcntl");
			return 1;
		}
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	double t0 = thread_cpu();
	volatile double x = 0;
	for (long i = 0; i < iters; i++)
		x += (double)i * 0.5;
	printf("cpu %.6f signals %ld\n", thread_cpu() - t0, signals);
	return 0;
}
