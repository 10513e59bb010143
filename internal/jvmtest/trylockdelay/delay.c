/*
 * delay.c: a test-only LD_PRELOAD shim that widens the window around
 * libjprof's thread end. Every pthread_mutex_trylock called from
 * libjprof.so (and nowhere else: the JVM's own calls go straight
 * through) first sleeps JP_TRYLOCK_DELAY_US microseconds (default 3000).
 * A thread ending takes the record list's lock with a trylock to pack
 * its record; Go's periodic pass frees ended records under the same
 * lock: a record published as ended before that trylock could be freed
 * under the ending thread's feet, and this shim makes that window
 * milliseconds wide instead of nanoseconds.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*trylock_fn)(pthread_mutex_t *);

static int from_libjprof(void *caller)
{
	Dl_info info;
	if (dladdr(caller, &info) == 0 || info.dli_fname == NULL)
		return 0;
	return strstr(info.dli_fname, "libjprof") != NULL;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	static trylock_fn real;
	static long delay_us = -1;
	if (real == NULL)
		real = (trylock_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
	if (delay_us < 0) {
		const char *s = getenv("JP_TRYLOCK_DELAY_US");
		delay_us = s != NULL ? atol(s) : 3000;
	}
	if (delay_us > 0 && from_libjprof(__builtin_return_address(0))) {
		struct timespec ts = { delay_us / 1000000, (delay_us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
	return real(m);
}
