/*
 * bci_unwind.c: the frames an exception left without an exit the probes
 * could make, closed as exception exits: those whose catch-all overflowed
 * the stack (a StackOverflowError), and those a superclass constructor's
 * throw left (the constructor's catch-all cannot cover its super() call),
 * closed at the handler that caught the exception (Probe.caught) or at
 * the unwind of an instrumented frame it passed on its way. Apart from
 * bci.c, whose per-event path these rare paths only share the engine with.
 */
#include "bci.h"

/* bci_close_top closes t's innermost open frame as an exception exit,
 * one whose exit the probes could not make. */
static void bci_close_top(JNIEnv *env, jp_thread *t)
{
	uintptr_t key = t->stack[t->depth].key;
	jp_event(t, key, JP_TR_EXCEPTION);
	/* A root's lost exit also left the roots' counts up (the thread's,
	 * and Probe.rooted, which gates every thread's probes): as
	 * bci_inside_roots and bci_root_unwind would. */
	if (bci.selective && (key & 1) == 0 && bci_is_root((jint)((key >> 1) - 1))) {
		if (t->src_epoch == __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED) && t->src_frames > 0)
			t->src_frames--;
		bci_rooted(env, -1);
	}
}

/* bci_lost_clear forgets Probe's count of overflowed unwinds: they are
 * accounted for. */
static void bci_lost_clear(JNIEnv *env)
{
	(*env)->SetStaticIntField(env, bci.probe, bci.f_lost, 0);
	(*env)->SetStaticObjectField(env, bci.probe, bci.f_lost_by, NULL);
}

/* bci_unwinds_lost closes, before the unwind of ex, the frames whose own
 * unwinds overflowed the stack passing ex on (Probe.unwindsLost): they
 * are this thread's innermost open frames, left before this one. Without
 * it, in a recursion (every frame the same method), each later exit
 * would close the frame below the one it left, and the thread's later
 * calls would nest under frames long gone. Frames whose exception was
 * caught before any instrumented frame passed it on stay open, to be
 * closed as missed exits by a later exit below them (their count is
 * dropped when another exception's unwind overflows). A few JNI calls
 * per exception exit: exceptions cost microseconds anyway. */
void bci_unwinds_lost(JNIEnv *env, jthrowable ex)
{
	if (bci.f_lost == NULL || ex == NULL || (*env)->GetStaticIntField(env, bci.probe, bci.f_lost) <= 0)
		return;
	jobject by = (*env)->GetStaticObjectField(env, bci.probe, bci.f_lost_by);
	int mine = by != NULL && (*env)->IsSameObject(env, by, ex);
	if (by != NULL)
		(*env)->DeleteLocalRef(env, by);
	if (!mine)
		return;
	jint n = (*env)->GetStaticIntField(env, bci.probe, bci.f_lost);
	bci_lost_clear(env);
	jp_thread *t = jp_thread_self();
	if (n <= 0 || !__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED) || t == NULL || jp_thread_stale(t))
		return;
	jint closed = 0;
	for (; closed < n && t->depth > 0; closed++)
		bci_close_top(env, t);
	if (closed > 0 && __atomic_fetch_add(&bci.lost_notes, 1, __ATOMIC_RELAXED) < 10)
		jp_notef("info: BCI: thread %s: %d exception exits lost to a StackOverflowError (their handlers had no stack left to call the agent) were made at the next unwind of the same exception",
			 __atomic_load_n(&t->name, __ATOMIC_ACQUIRE), (int)closed);
}

/* bci_close_above closes, as exception exits, t's frames above its
 * innermost frame of key: frames an exception left without an exit the
 * probes could make (a superclass constructor threw: the constructor's
 * catch-all cannot cover that call). Frames are matched by method, so in
 * a recursion of key's method its innermost frame is taken for the one
 * still running. Returns how many it closed; it stops if collection
 * stops under it (the event then leaves the stack as it was). */
static uint32_t bci_close_above(JNIEnv *env, jp_thread *t, uintptr_t key)
{
	uint32_t d = t->depth;
	while (d > 0 && t->stack[d].key != key)
		d--;
	uint32_t closed = 0;
	while (d > 0 && t->depth > d) {
		uint32_t before = t->depth;
		bci_close_top(env, t);
		if (t->depth >= before)
			break;
		closed++;
	}
	return closed;
}

/* bci_dead_frames closes the frames an exception left above method id's
 * innermost frame, at a handler of id that caught it or at id's own
 * unwind (it passed through the dead frames first). Exceptions cost
 * microseconds anyway; the common case (id's frame on top) is a look at
 * the top of the stack. */
uint32_t bci_dead_frames(JNIEnv *env, jint id)
{
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return 0;
	jp_thread *t = jp_thread_self();
	if (t == NULL || jp_thread_stale(t) || t->lost != 0)
		return 0;
	return bci_close_above(env, t, bci_key(bci_id(id)));
}

/* bci_caught: a handler of method id caught an exception; the frames it
 * left are closed. Exits an overflow lost passing it on were among them:
 * the next unwind of it must not close as many again. */
void JNICALL bci_caught(JNIEnv *env, jclass c, jint id)
{
	(void)c;
	if (bci_dead_frames(env, id) > 0 && bci.f_lost != NULL &&
	    (*env)->GetStaticIntField(env, bci.probe, bci.f_lost) != 0)
		bci_lost_clear(env);
}
