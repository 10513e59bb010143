/*
 * faults.c: a test-only LD_PRELOAD shim that makes rare conditions of
 * libjprof.so happen on demand. It changes only calls made from
 * libjprof.so (found by the caller's address); the JVM's own go straight
 * through. Environment:
 *
 *   JP_TRYLOCK_DELAY_US=N  every pthread_mutex_trylock first sleeps N
 *       microseconds. A thread ending takes the record list's lock with
 *       a trylock to pack its record, while Go's periodic pass frees
 *       ended records under the same lock: this widens any window
 *       around that hand-over from nanoseconds to milliseconds.
 *   JP_FAIL_PERF_OPEN=1    perf_event_open (through syscall()) fails with
 *       EACCES, as under a strict perf_event_paranoid: a PTT thread
 *       that cannot use the bpf work area then has to read the clock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static int from_libjprof(void *caller)
{
	Dl_info info;
	if (dladdr(caller, &info) == 0 || info.dli_fname == NULL)
		return 0;
	return strstr(info.dli_fname, "libjprof") != NULL;
}

static long env_long(const char *name)
{
	const char *s = getenv(name);
	return s != NULL ? atol(s) : 0;
}

typedef int (*trylock_fn)(pthread_mutex_t *);

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	static trylock_fn real;
	static long delay_us = -1;
	if (real == NULL)
		real = (trylock_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	if (delay_us < 0)
		delay_us = env_long("JP_TRYLOCK_DELAY_US");
	if (delay_us > 0 && from_libjprof(__builtin_return_address(0))) {
		struct timespec ts = { delay_us / 1000000, (delay_us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
	return real(m);
}

typedef long (*syscall_fn)(long, ...);

long syscall(long nr, ...)
{
	static syscall_fn real;
	if (real == NULL)
		real = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_perf_event_open && env_long("JP_FAIL_PERF_OPEN") && from_libjprof(__builtin_return_address(0))) {
		errno = EACCES;
		return -1;
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
