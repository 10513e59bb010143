/*
 * sampling_timers.c: what makes the sampling source's signals: a
 * thread's perf task-clock event or POSIX CPU timer (cpu kinds), armed
 * and disarmed as sampling starts and stops, and the wall-clock thread
 * that signals the threads in turn (wall).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sampling_priv.h"

/* The kernel's clock id for another thread's CPU time
 * (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): what pthread_getcpuclockid
 * computes, without needing a pthread_t that may be gone. */
static clockid_t jp_thread_cpuclock(int tid)
{
	return (clockid_t)(((unsigned int)~tid) << 3) | 6;
}

uint64_t jp_period_of(const jp_sthread *s)
{
	return s->period_ns ? s->period_ns : jps.period_ns;
}

/* jp_perf_arm opens a task-clock event on s's thread that signals it
 * every period of its CPU time; -1 if perf events are refused. */
static int jp_perf_arm(jp_sthread *s)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = jp_period_of(s);
	a.disabled = 1;
	/* perf_event_paranoid 2 allows user-space measurement only: the
	 * samples that land in the kernel are then skipped, and the next one
	 * weighs their time. */
	a.exclude_kernel = jps.perf_user_only;
	a.exclude_hv = 1;
	int fd = (int)syscall(__NR_perf_event_open, &a, s->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && !jps.perf_user_only && (errno == EACCES || errno == EPERM)) {
		jps.perf_user_only = 1;
		a.exclude_kernel = 1;
		fd = (int)syscall(__NR_perf_event_open, &a, s->tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	struct f_owner_ex owner = { F_OWNER_TID, s->tid };
	if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, jps.signo) != 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) != 0 || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* jp_arm starts sampling s; jps.lock held. */
void jp_arm(jp_sthread *s)
{
	if (s->armed)
		return;
	__atomic_add_fetch(&s->arm_gen, 1, __ATOMIC_RELAXED);
	s->perf_fd = -1;
	if (jps.kind == JP_SAMPLE_CPU && !jps.perf_refused) {
		s->perf_fd = jp_perf_arm(s);
		if (s->perf_fd >= 0) {
			s->armed = 1;
			JP_COUNT(perf_armed);
			return;
		}
		/* A thread that has ended (its record not yet dropped) is
		 * not there to sample. */
		if (errno == ESRCH)
			return;
		/* Refused (permissions, no such event): refused for all, no
		 * use trying each thread. Anything else (out of descriptors)
		 * is this thread's: it gets a POSIX timer, the others still
		 * perf events, whose period is not rounded up to the tick. */
		if (errno == EACCES || errno == EPERM || errno == ENOENT || errno == ENODEV || errno == EOPNOTSUPP ||
		    errno == ENOSYS)
			jps.perf_refused = 1;
	}
	if (jps.kind == JP_SAMPLE_CPU) {
		struct sigevent sev;
		memset(&sev, 0, sizeof sev);
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = jps.signo;
		sev._sigev_un._tid = s->tid;
		/* Tells the handler a JVM thread's signal (jp_jvm_thread_of). */
		sev.sigev_value.sival_ptr = s->env == NULL || s->maybe_java != 0 ? s : NULL;
		if (timer_create(jp_thread_cpuclock(s->tid), &sev, &s->timer) != 0) {
			JP_COUNT(timer_failures);
			return;
		}
		struct itimerspec its;
		uint64_t period = jp_period_of(s);
		its.it_interval.tv_sec = (time_t)(period / 1000000000ull);
		its.it_interval.tv_nsec = (long)(period % 1000000000ull);
		its.it_value = its.it_interval;
		if (timer_settime(s->timer, 0, &its, NULL) != 0) {
			timer_delete(s->timer);
			JP_COUNT(timer_failures);
			return;
		}
		JP_COUNT(timer_armed);
	}
	s->armed = 1;
}

/* jp_disarm stops sampling s; jps.lock held. Deleting a timer also takes
 * its signal off the thread's pending queue. */
void jp_disarm(jp_sthread *s)
{
	if (!s->armed)
		return;
	if (s->perf_fd >= 0) {
		close(s->perf_fd);
		s->perf_fd = -1;
	} else if (jps.kind == JP_SAMPLE_CPU) {
		timer_delete(s->timer);
	}
	s->armed = 0;
}

/* The wall timer thread signals at most this many threads per period,
 * taking turns: with many threads, each is sampled less often rather
 * than the process drowning in signals. A sample still weighs the wall
 * time since its thread's previous one. */
#define JP_WALL_BATCH 16

/* jp_wall_signal_record signals a scanner's record's thread with the
 * record as the signal's value (rt_tgsigqueueinfo; the handler reads it
 * back, jp_jvm_thread_of). */
static void jp_wall_signal_record(pid_t pid, jp_sthread *s)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = jps.signo;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = s;
	syscall(SYS_rt_tgsigqueueinfo, pid, s->tid, jps.signo, &si);
}

void *jp_wall_main(void *arg)
{
	(void)arg;
	/* The JVM-thread scanner leaves the agent's threads alone by name. */
	prctl(PR_SET_NAME, "libjprof-wall", 0, 0, 0);
	pid_t pid = getpid();
	struct timespec ts = { (time_t)(jps.period_ns / 1000000000ull), (long)(jps.period_ns % 1000000000ull) };
	uint64_t turn = 0; /* armed threads signalled so far, all periods */
	while (!jp.dead) {
		nanosleep(&ts, NULL);
		if (!jps.on)
			continue;
		pthread_mutex_lock(&jps.lock);
		/* Attached, the Java threads that ran before are the scanner's
		 * records: signalled with the record in the signal's value. */
		for (jp_sthread *s = jps.jvm; s != NULL; s = s->next)
			if (s->armed && s->maybe_java > 0)
				jp_wall_signal_record(pid, s);
		uint64_t armed = 0;
		for (jp_sthread *s = jps.list; s != NULL; s = s->next)
			armed += s->armed != 0;
		if (armed > 0) {
			/* The batch starts where the previous one stopped. */
			uint64_t first = turn % armed, i = 0;
			int sent = 0;
			for (int pass = 0; pass < 2 && sent < JP_WALL_BATCH && (uint64_t)sent < armed; pass++) {
				i = 0;
				for (jp_sthread *s = jps.list; s != NULL && sent < JP_WALL_BATCH && (uint64_t)sent < armed; s = s->next) {
					if (!s->armed)
						continue;
					if ((pass == 0 && i >= first) || (pass == 1 && i < first)) {
						syscall(SYS_tgkill, pid, s->tid, jps.signo);
						sent++;
					}
					i++;
				}
			}
			turn += (uint64_t)sent;
		}
		pthread_mutex_unlock(&jps.lock);
	}
	return NULL;
}
