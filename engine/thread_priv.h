/*
 * thread_priv.h: the parts of thread records shared by the engine's own
 * C files (threads.c, vthread.c, event.c), not by event sources.
 */
#ifndef JP_THREAD_PRIV_H
#define JP_THREAD_PRIV_H

#include "engine.h"

/* jp_thread_new makes a record with its root node; jp_thread_list gives
 * it an id and lists it for Go; jp_thread_end ends a record no thread
 * runs on any more (hands its log-gen buffer over, frees what only its
 * owner used). */
jp_thread *jp_thread_new(const char *name);
void jp_thread_list(jp_thread *t);
void jp_thread_end(jp_thread *t);
/* jp_child finds or makes the node of (parent, source key) in t's tree,
 * the Other-type context when other (event.c); UINT32_MAX without
 * memory. */
uint32_t jp_child(jp_thread *t, uint32_t parent, uintptr_t key, int other);
/* jp_ptt_metrics says whether the metrics are PTT readings: with ALLOC,
 * LOCK and SAMPLE they are the source's own values, and there is no
 * reading to take at a switch or at a thread's end. */
static inline int jp_ptt_metrics(void)
{
	return jp.nmetrics && !jp.source->own_values;
}
/* jp_charge charges t's running method with what was spent since its
 * last event, up to r: what jp_event would have charged had an event
 * happened at r. Not while collection is off, nor across a restart
 * (t's stack is then from an earlier period). The owner only. */
void jp_charge(jp_thread *t, const jp_ptt_reading *r);
/* jp_gen_handover is in loggen.c. */
void jp_gen_handover(jp_genbuf *b);

#endif /* JP_THREAD_PRIV_H */
