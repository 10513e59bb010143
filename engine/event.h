/*
 * event.h: what event sources call on the event path (event.c,
 * threads.c): an event, skipping the agent's own work, and collection
 * epochs. Apart because it is every source's interface to the engine,
 * and its inline code needs both the thread record and jp.
 */
#ifndef JP_EVENT_H
#define JP_EVENT_H

#include <stdint.h>
#include "ptt.h"
#include "thread.h"
#include "state.h"

/* jp_busy_enter marks t inside an event (busy, which the stop waits on:
 * engine.Quiesce) and then says whether collection is on; when it is
 * not, the mark is taken back and the caller leaves the tree alone. In
 * this order, a stop's fence and wait either see the mark or make this
 * look see collection off: an event already under way when collection
 * stopped (a JVMTI callback posted just before the disable, a probe past
 * its own check) never writes after the stop's report. jp_busy_leave
 * publishes the event's stores with the mark's end. */
/* jp_fence is the writer's half of that handshake (engine.Quiesce, and
 * log-gen's final drain, which takes each thread's buffer): the event
 * path marks busy with a plain store, no fence (that would cost every
 * event), so a CPU may let the thread's next load pass the store still
 * in its store buffer. membarrier(2) makes every thread of the process
 * that is running execute a full barrier before it returns (one that is
 * not running passed one when it was switched out): after it, a thread
 * either has its mark visible, or has not yet made that load and will
 * see what the writer changed. Returns which command served, 0 if none
 * did (a kernel before 4.3, or a seccomp filter that refuses it).
 * jp_fence_register readies its fast command, once: registering waits
 * out an RCU grace period once the process has threads (milliseconds in
 * a VM), so it is done early, off the stop's path (engine.PrepareFence). */
int jp_fence(void);
void jp_fence_register(void);

static inline void jp_busy_leave(jp_thread *t)
{
	__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
}

static inline int jp_busy_enter(jp_thread *t)
{
	t->busy = 1;
	__asm__ __volatile__("" ::: "memory");
	if (__builtin_expect(!__atomic_load_n(&jp.collecting, __ATOMIC_ACQUIRE), 0)) {
		jp_busy_leave(t);
		return 0;
	}
	return 1;
}

/* jp_event records one event of the calling thread, t being its record
 * (jp_thread_self(), or jp_thread_attach() for its first). key is the
 * source's key of the method entered or exited; tr an enum jp_transition.
 * Sources call it first thing: it makes the Early Read. */
void jp_event(jp_thread *t, uintptr_t key, int tr);

/* jp_event_skip makes what the thread ran since its last event's Late
 * Read invisible to every metric, as if the next event followed at once:
 * for work a source does on the thread between events (the agent's own,
 * not the program's). */
static inline void jp_event_skip(jp_thread *t)
{
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);
}

/* jp_aside brackets the agent's own work on a thread between two of its
 * events, such as BCI's class file hook, which runs the transformer on
 * the thread that loads the class, in the middle of a method:
 * jp_aside_begin notes the thread's metrics, and jp_aside_end moves the
 * last event's reading forward by what the work took, so that the work
 * is charged to no method while the method's own time around it still
 * is. The next event is not calibrated (thread.h's grew): its delta
 * lacks the usual tail of an event's work. Should events run inside the
 * bracket (a class loader of the program's, called by the transformer),
 * the time since the last of them is taken as the agent's. Brackets do
 * not nest; t may be NULL (nothing to do). */
typedef struct {
	int on;
	jp_ptt_reading begin, last;
} jp_aside;

static inline void jp_aside_begin(jp_thread *t, jp_aside *a)
{
	a->on = t != NULL && jp.nmetrics && __atomic_load_n(&jp.collecting, __ATOMIC_RELAXED) &&
		t->epoch == __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (!a->on)
		return;
	a->last = t->last;
	jp_ptt_read(&t->ptt, &a->begin);
}

static inline void jp_aside_end(jp_thread *t, jp_aside *a)
{
	if (!a->on)
		return;
	jp_ptt_reading now;
	jp_ptt_read(&t->ptt, &now);
	if (__builtin_memcmp(&t->last, &a->last, sizeof t->last) == 0) {
		for (int m = 0; m < jp.nmetrics; m++)
			t->last.v[m] += now.v[m] - a->begin.v[m];
		t->last.dispatches += now.dispatches - a->begin.dispatches;
		t->last.interrupts += now.interrupts - a->begin.interrupts;
	} else {
		t->last = now;
	}
	t->grew = 1;
}

/* jp_thread_stale says whether t's next event is its first in a new
 * collection epoch: its shadow stack is then discarded (jp_event), or
 * seeded with the frames the source knows to be open (jp_thread_seed). */
static inline int jp_thread_stale(const jp_thread *t)
{
	return t->epoch != __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
}

/* jp_thread_seed starts t's epoch with the frames already open on the
 * thread, keys[0] the outermost, as Other-type contexts (O:, one call
 * each): the events that follow hang below them instead of off the
 * thread root, and their exits match. The owner calls it before
 * jp_event, at the thread's first event in an epoch (jp_thread_stale, or
 * a record just attached). The event right after a seed is charged
 * nothing and teaches calibration nothing, like any first event of an
 * epoch. */
void jp_thread_seed(jp_thread *t, const uintptr_t *keys, uint32_t n);

/* jp_collect turns collection on or off in the engine: on starts a new
 * epoch, so stacks left from an earlier period are discarded at each
 * thread's next event. The source's own switch is the caller's. */
void jp_collect(int on);

#endif /* JP_EVENT_H */
