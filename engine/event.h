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
