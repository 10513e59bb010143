/*
 * event.c: the per-event path. Every method entry and exit of every
 * source lands in jp_event, which never calls Go (a C->Go transition
 * alone costs more than the whole event budget) and takes no lock: the
 * thread's record is reached through one __thread pointer, and the only
 * shared data it writes are the calibration minima (a CAS when a minimum
 * is lowered, almost never after warm-up).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "store.h"
#include "thread_priv.h"
#include "seqcount.h"

/* jp_gen_record is in loggen.c. */
void jp_gen_record(jp_thread *t, uint32_t node, int tr, uint32_t key, const uint64_t *v);

/* jp_child finds or creates the node for (parent, key), UINT32_MAX when
 * there is no memory for it. The Other-type context of a method is keyed
 * with the key's low bit set: source keys are pointers or handles
 * shifted left, so the bit is free, and the two contexts stay distinct. */
uint32_t jp_child(jp_thread *t, uint32_t parent, uintptr_t key, int other)
{
	uintptr_t k1 = key | (other ? 1 : 0);
	jp_slot *e = NULL;
	if (t->edges != NULL) {
		e = &t->edges[jp_map_hash(k1, parent) & (JP_EDGES - 1)];
		if (e->k1 == k1 && e->k2 == parent)
			return e->val;
	}
	jp_slot *s = jp_map_find(&t->children, k1, parent);
	if (__builtin_expect(s->k1 != 0, 1)) {
		if (e != NULL)
			*e = *s;
		return s->val;
	}
	/* First time on this path: the slow part, the agent's own (naming a
	 * method the first time asks the JVM), read past (jp_thread's grew). */
	t->grew = 1;
	uint32_t h = jp.source->resolve(key);
	uint32_t n = jp_arena_push(&t->nodes);
	if (n == UINT32_MAX) {
		t->alloc_failures++;
		return UINT32_MAX;
	}
	jp_arena_prefault(&t->nodes, n, 1); /* read past: grew is set above */
	jp_node *nd = jp_node_at(t, n);
	nd->parent = parent;
	nd->type = (uint8_t)(other ? JP_T_OTHER : jp_method_at(h)->type);
	nd->seqkey = JP_NOKEY;
	nd->method = h;
	jp_arena_publish(&t->nodes, n);
	/* A node the map could not take is still correct: the next call on
	 * this path makes another node of the same name, merged by readers. */
	if (jp_map_put(&t->children, s, k1, parent, n) != 0)
		t->alloc_failures++;
	if (t->edges == NULL && t->children.used >= JP_EDGES_FROM)
		t->edges = jp_walloc(JP_EDGES * sizeof(jp_slot)); /* read past: grew is set above */
	return n;
}

static int jp_push(jp_thread *t, uintptr_t key, uint32_t node, jp_node *np)
{
	if (t->depth + 1 >= t->stack_cap) {
		uint32_t ncap = t->stack_cap * 2;
		jp_frame *ns = realloc(t->stack, ncap * sizeof(jp_frame));
		if (ns == NULL) {
			t->alloc_failures++;
			return -1;
		}
		t->stack = ns;
		t->stack_cap = ncap;
		t->grew = 1;
	}
	t->depth++;
	jp_frame_set(&t->stack[t->depth], key, node, np);
	return 0;
}

/* jp_exit applies an exit (normal or by exception) to the shadow stack
 * and returns the node that exited. */
static inline uint32_t jp_exit(jp_thread *t, uintptr_t key, int exc)
{
	if (__builtin_expect(t->depth > 0 && t->stack[t->depth].key == key, 1)) {
		uint32_t n = t->stack[t->depth].node;
		if (exc)
			jp_count32(&t->stack[t->depth].np->excs, 1);
		t->depth--;
		return n;
	}
	/* The exiting frame is not on top. If it is deeper, the frames above
	 * it lost their exits (a source that cannot see every exit); if it
	 * is nowhere, its entry was never seen: profiling started inside
	 * it. Record it as an Other-type context under the current top and
	 * leave the stack as it is. */
	for (uint32_t d = t->depth; d > 0; d--) {
		if (t->stack[d].key == key) {
			uint32_t n = t->stack[d].node;
			if (exc)
				jp_count32(&t->stack[d].np->excs, 1);
			t->missed_exits += t->depth - d;
			t->depth = d - 1;
			return n;
		}
	}
	if (t->events == t->switch_events && t->depth > 0 && t->depth == t->switch_depth) {
		/* The first event after a virtual-thread switch (vthread.c):
		 * HotSpot hides the frames of the switch itself, so the frame
		 * on top when the thread stopped (VirtualThread.mount(), whose
		 * exit is hidden) is closed by the exit of the one that ran
		 * the switch (VirtualThread.unmount(), whose entry is hidden).
		 * Both count as calls; the few instructions of the second
		 * after the switch are charged to the first. */
		t->depth--;
		uint32_t n = jp_child(t, t->stack[t->depth].node, key, 0);
		if (n == UINT32_MAX)
			return 0;
		jp_node *nd = jp_node_at(t, n);
		nd->calls++;
		if (exc)
			jp_count32(&nd->excs, 1);
		return n;
	}
	t->unmatched_exits++;
	uint32_t n = jp_child(t, t->stack[t->depth].node, key, 1);
	if (n == UINT32_MAX)
		return 0; /* not recorded: no memory */
	jp_node *nd = jp_node_at(t, n);
	nd->calls++;
	if (exc)
		jp_count32(&nd->excs, 1);
	return n;
}

/* jp_lower_min lowers a shared minimum and returns it as it now is; a
 * CAS only when d is a new low, which after warm-up is almost never. */
static inline uint64_t jp_lower_min(uint64_t *p, uint64_t d)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (d < cur && !__atomic_compare_exchange_n(p, &cur, d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return d < cur ? d : cur;
}

void jp_event(jp_thread *t, uintptr_t key, int tr)
{
	jp_ptt_reading early;
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &early); /* Early Read */
	if (!jp_busy_enter(t))
		return; /* under way when collection stopped: jp_busy_enter */

	/* Whether this event is calibrated: not when its delta has no real
	 * previous Late Read (a restart), went backwards or did not move, or
	 * spans a dispatch or an interrupt (it then holds kernel work or an
	 * interrupt-time correction that is no part of the agent's constant
	 * overhead). Such an event neither lowers a minimum nor has one
	 * removed; they are a tiny fraction of events, and the agent, log-gen
	 * and jprof calibrate all treat them the same way. */
	int clean = 1;
	if (__builtin_expect(t->grew, 0)) { /* the previous event read again at its end: see thread.h */
		t->grew = 0;
		clean = 0;
	}
	uint32_t epoch = __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
	if (__builtin_expect(t->epoch != epoch, 0)) {
		/* Collection restarted: frames pushed before the stop have
		 * lost their exits. Start again from the root, and do not
		 * charge the time collection was off to anything. */
		t->epoch = epoch;
		t->depth = 0;
		t->lost = 0;
		t->prev_running = JP_T_OTHER;
		t->prev_tr = JP_TR_ENTRY;
		if (jp.nmetrics)
			t->last = early;
		clean = 0;
	}

	/* The method that ran since the previous event. */
	uint32_t cur = t->stack[t->depth].node;
	jp_node *curp = t->stack[t->depth].np;
	uint32_t running = curp->type;

	uint32_t evnode; /* the node entered or exited */
	if (__builtin_expect(t->lost != 0, 0)) {
		/* Inside frames that could not be recorded (no memory): count
		 * their nesting so the recorded tree does not shift; their
		 * metric goes to the last recorded frame. */
		if (tr == JP_TR_ENTRY)
			t->lost++;
		else
			t->lost--;
		evnode = 0; /* log-gen: a method that was not recorded */
		clean = 0;
	} else if (tr == JP_TR_ENTRY) {
		jp_frame *top = &t->stack[t->depth];
		if (top->ckey == key) {
			evnode = top->cnode;
		} else {
			if (curp->ckey == key) {
				evnode = curp->cnode;
			} else {
				evnode = jp_child(t, cur, key, 0);
				if (evnode != UINT32_MAX) {
					curp->ckey = key;
					curp->cnode = evnode;
				}
			}
			top->ckey = evnode != UINT32_MAX ? key : 0;
			top->cnode = evnode;
		}
		if (__builtin_expect(evnode == UINT32_MAX, 0)) {
			t->lost = 1;
			evnode = 0;
			clean = 0;
		} else {
			jp_node *nd = jp_node_at(t, evnode);
			nd->calls++;
			if (jp_push(t, key, evnode, nd) != 0)
				t->lost = 1;
		}
	} else {
		evnode = jp_exit(t, key, tr == JP_TR_EXCEPTION);
	}
	t->events++;

	if (!jp.nmetrics) {
		if (jp.loggen)
			jp_gen_record(t, evnode, tr, 0, NULL);
		goto out;
	}
	{
		jp_node *nd = curp;
		uint32_t k = jp_key(t->prev_running, t->prev_tr, running, (uint32_t)tr, t->stack[t->depth].np->type);
		size_t kb = (size_t)k * (size_t)jp.nmetrics;
		uint64_t d[JP_PTT_MAX_METRICS];
		clean &= early.dispatches == t->last.dispatches && early.interrupts == t->last.interrupts;
		for (int m = 0; m < jp.nmetrics; m++) {
			d[m] = early.v[m] - t->last.v[m];
			/* A reading never goes back; if a backend ever did,
			 * count 0 rather than 2^64, and learn nothing from it.
			 * Nor from a delta of 0: the glue between two events
			 * always runs, so 0 is a clock that did not tick (the
			 * thread CPU clock does that, rarely, across a switch
			 * the clock backend cannot see). */
			if ((int64_t)d[m] <= 0) {
				d[m] = 0;
				clean = 0;
			} else if (d[m] < jp_ptt.min_tick && jp_ptt.metric[m] == JP_M_TIME) {
				/* Shorter than the clock's step: it ticked
				 * irregularly (a counter that advances in steps
				 * can step short), so it says little of the
				 * overhead. Charged, but no minimum. */
				clean = 0;
			}
			nd->base[m] += d[m];
		}
		uint64_t *gen = d;
		uint64_t cal[JP_PTT_MAX_METRICS];
		if (jp.calibrate && clean) {
			/* log-gen (not RAWGEN) gets the value calibrated with the
			 * minimum current now (d >= it: it includes d). */
			int gencal = jp.loggen && !jp.genraw;
			for (int m = 0; m < jp.nmetrics; m++) {
				uint64_t min = jp_lower_min(&t->minima[kb + m], d[m]);
				if (gencal) {
					uint64_t over = jp_overhead(jp_gen_min(min, jp.tmin[kb + m]), jp.env[kb + m]);
					cal[m] = d[m] > over ? d[m] - over : 0;
				}
			}
			if (gencal)
				gen = cal;
		}
		if (jp.loggen)
			jp_gen_record(t, evnode, tr, clean ? k : k | JP_KEY_UNCLEAN, gen);
		/* clean implies the counts did not move; otherwise they only
		 * ever grow within one registration. */
		if (early.dispatches >= t->last.dispatches)
			jp_count32(&nd->ds, early.dispatches - t->last.dispatches);
		if (early.interrupts >= t->last.interrupts)
			jp_count32(&nd->in, early.interrupts - t->last.interrupts);
		if (jp.calibrate && clean)
			jp_seq_count(t, nd, cur, k);
		t->prev_running = running;
		t->prev_tr = (uint32_t)tr;
	}
out:
	jp_busy_leave(t);
	if (jp.nmetrics) {
		if (jp.late_read || __builtin_expect(t->grew, 0))
			jp_ptt_read(&t->ptt, &t->last); /* Late Read */
		else
			t->last = early;
	}
}
