/*
 * vthread.c: virtual threads. A virtual thread's frames stay on its own
 * record while it moves between carriers; the carrier's OS thread keeps
 * the PTT registration, lent to the virtual thread while it is mounted
 * (see engine.h).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "engine.h"
#include "thread_priv.h"

jp_thread *jp_vthread_new(const char *name, int tid)
{
	jp_thread *t = jp_thread_new(name);
	if (t == NULL)
		return NULL;
	t->virt = 1;
	t->tid = tid;
	jp_thread_list(t);
	return t;
}

/* jp_switch_read is the reading at a switch, through the OS thread's
 * registration. */
static inline void jp_switch_read(jp_thread *t, jp_ptt_reading *r)
{
	if (jp_ptt_metrics())
		jp_ptt_read(&t->ptt, r);
}

/* jp_resume makes r the previous reading of t, whose next event then
 * measures from the switch on. That event spans the switch's glue, not
 * only the profiler's: counts that can never match make it unclean in
 * jp_event (no minimum lowered, no calibration key counted, no
 * dispatches charged for the few ns since r). */
static void jp_resume(jp_thread *t)
{
	t->switch_events = t->events;
	t->switch_depth = t->depth;
	jp_switch_read(t, &t->last);
	t->last.dispatches = UINT64_MAX;
	t->last.interrupts = UINT64_MAX;
}

void jp_vthread_mount(jp_thread *vt, const char *carrier_name)
{
	jp_thread *c = jp_self;
	if (c == vt)
		return;
	if (c != NULL && c->virt) { /* no unmount seen: never expected */
		jp_vthread_unmount(c);
		c = jp_self;
	}
	if (c == NULL && (c = jp_thread_attach(carrier_name)) == NULL)
		return; /* no memory: the events stay on no record */
	jp_ptt_reading r;
	jp_switch_read(c, &r);
	jp_charge(c, &r);
	vt->ptt = c->ptt; /* lent: only read through, never fini'd */
	vt->minima = c->minima;
	vt->ptt_used = c->ptt_used;
	if (jp.minima_fb != NULL && c->minima == jp.minima_fb && (vt->vt_fallback == 0 || c->ptt_used < vt->vt_fallback))
		__atomic_store_n(&vt->vt_fallback, c->ptt_used, __ATOMIC_RELAXED); /* Go reads it live */
	vt->carrier = c;
	jp_resume(vt);
	jp_self = vt;
}

void jp_vthread_unmount(jp_thread *vt)
{
	jp_thread *c = vt->carrier;
	if (jp_self != vt || c == NULL)
		return;
	jp_ptt_reading r;
	jp_switch_read(vt, &r);
	jp_charge(vt, &r);
	vt->carrier = NULL;
	jp_resume(c);
	jp_self = c;
}

void jp_vthread_end(jp_thread *vt)
{
	jp_vthread_unmount(vt);
	jp_thread_end(vt);
}
