/*
 * lock.h: the lock source's parts (lock.c: JVMTI's monitor events;
 * park.c: java.util.concurrent's parking, through a rewritten
 * LockSupport).
 */
#ifndef JP_LOCK_H
#define JP_LOCK_H

#include "eventstacks.h"

enum { JL_ENTER = 0, JL_WAIT = 1, JL_PARK = 2 };

struct jp_lock_state {
	uint64_t threshold_ns;
	jp_lock_stats st;
	char *jar;          /* jprof-bci.jar, which holds libjprof.bci.Park */
	jclass park;        /* Park (global ref), once the VM is initialised */
	jmethodID m_rewrite;
	int park_on;             /* collection started (rewrite once the VM is up) */
	volatile int park_want;  /* the class file hook rewrites LockSupport */
	volatile int park_rewritten;
	volatile int park_state; /* jp_lock_stats.park */
	pthread_mutex_t park_mu;
};
extern struct jp_lock_state jl;
extern jp_estack_events jl_events;

void jl_record(jvmtiEnv *jvmti, JNIEnv *jni, jp_estack *e, jobject object, int what, uint64_t d, int skip,
	       uint64_t contentions);

void jl_park_setup(jvmtiCapabilities *caps, jvmtiEventCallbacks *cb);
int jl_park_enable(jvmtiEnv *jvmti, int live, char *err, int errlen);
void jl_park_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread);
void jl_park_install(void);
int jl_park_detach(char *err, int errlen);

#endif /* JP_LOCK_H */
