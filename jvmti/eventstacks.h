/*
 * eventstacks.h: what the event-driven sampled sources share (ALLOC in
 * alloc.c, LOCK in lock.c). A JVMTI event on a Java thread (an allocation
 * sampled, a monitor contended) records the thread's stack, with a leaf
 * naming the object's class, into the thread's sampled tree (engine
 * pcct) with a weight per metric. The events are rare next to method
 * calls, and their callbacks may allocate, lock and call JVMTI.
 */
#ifndef JP_EVENTSTACKS_H
#define JP_EVENTSTACKS_H

#include <pthread.h>

#include "jvmtiagent.h"

/* Leaves of classes this thread saw last (weak global refs). */
#define JP_ESTACK_LEAVES 8
typedef struct jp_estack_leafc {
	jweak cls;
	const char *prefix; /* the caller's constant, compared by address */
	uint32_t handle;
} jp_estack_leafc;

/* One thread's state, made at its first event, kept in its record
 * (jp_thread.src_state): a virtual thread's goes with it from carrier to
 * carrier, as a monitor wait that began on one ends on another. */
typedef struct jp_estack {
	jp_thread *t;
	uint64_t rng;           /* xorshift state, for rounding at random */
	uint64_t t0[2];         /* LOCK: when the thread began to wait (enter, Object.wait) */
	jweak park_blocker;     /* LOCK: the blocker of the thread's last park, and its end */
	uint64_t park_end;
	uint64_t events;        /* events recorded */
	jp_estack_leafc leaves[JP_ESTACK_LEAVES];
	uint32_t next_leaf;     /* the cache entry replaced next */
	jp_pcct pcct;
} jp_estack;

/* jp_estacks_configure sizes every thread's tree (before jp_vm_setup). */
int jp_estacks_configure(uint32_t max_nodes, uint32_t depth, char *err, int errlen);
/* jp_estacks_setup registers the trees' limit node and the records'
 * state's free (the source's setup). */
void jp_estacks_setup(void);
/* jp_estack_self is the calling thread's state (its record's: a mounted
 * virtual thread's), made at its first event; NULL without memory. */
jp_estack *jp_estack_self(jvmtiEnv *jvmti, jthread thread);
/* jp_estack_leaf is the handle of the leaf frame "<prefix><class>" for a
 * class signature (java.lang.String, int[]), registered at first use;
 * klass NULL: "<prefix><none>". prefix must be a string constant: the
 * thread's cache of its last classes tells prefixes apart by address. */
uint32_t jp_estack_leaf(jvmtiEnv *jvmti, JNIEnv *jni, jp_estack *e, jclass klass, const char *prefix);
/* jp_estack_record adds the calling thread's stack, but for its top skip
 * frames, under leaf, with weights w[0..nw). */
void jp_estack_record(jvmtiEnv *jvmti, jp_estack *e, uint32_t leaf, int skip, const uint64_t *w, int nw);
/* jp_estack_random is a uniform number in [0, 1). */
double jp_estack_random(jp_estack *e);
/* A source's JVMTI events, switched with collection (jp_collect) under
 * one lock, so that no start slips in after VM death began. */
typedef struct jp_estack_events {
	pthread_mutex_t lock;
	volatile int on;
	const jvmtiEvent *evs;
	size_t n;
	void (*before_on)(void); /* e.g. the sampling interval; may be NULL */
} jp_estack_events;
/* jp_estack_switch turns them on or off: 0, -1 once the VM is dying, or
 * a JVMTI error. */
int jp_estack_switch(jp_estack_events *ev, int on);
/* jp_estack_die turns them off for good at VM death. */
void jp_estack_die(jp_estack_events *ev);
/* jp_estack_thread_end frees the calling OS thread's scratch (the
 * record's state goes with the record, its tree staying in its arena for
 * the reports). */
void jp_estack_thread_end(void);

#endif /* JP_EVENTSTACKS_H */
