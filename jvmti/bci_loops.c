/*
 * bci_loops.c: classes a retransformation must leave alone because one
 * of their methods is running a loop.
 *
 * A redefinition replaces a class's methods, and HotSpot never compiles
 * a method version that was replaced (CompileBroker gives up on an "old"
 * method, obsolete or not): a frame running in it goes on interpreted
 * until it returns. For most frames that is a few calls. For a loop that
 * runs for the life of the program (a main or a worker's loop in the
 * program's own code) it is the rest of the run, 20 times slower or
 * more, and the detach cannot undo it. So before each retransformation
 * of an attached agent (at the start of collection, at a detach: an
 * attach promises to leave the program at its old speed; a program
 * started with the agent keeps it), the class of such a loop
 * (bci_running_loops says which) is left as it was: its methods are not
 * seen (at a detach, it keeps its probes, which return at once), said in
 * log-msg and counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bci.h"

/* Frames looked at per thread, from the bottom: where a thread's own
 * code starts (under the JDK's frames of a thread's start or a pool's
 * worker) is seldom deeper than this. */
#define JP_LOOP_DEPTH 64

static int32_t bc_s32(const unsigned char *b)
{
	return (int32_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]);
}

/* The length of the instruction at code[i] (0: not one, or cut short). */
static jint bc_len(const unsigned char *code, jint n, jint i)
{
	static const signed char len[202] = {
		/* 0x00 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x10 */ 2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
		/* 0x20 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x30 */ 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,
		/* 0x40 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x50 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x60 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x70 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x80 */ 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		/* 0x90 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,
		/* 0xa0 */ 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1,
		/* 0xb0 */ 1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,
		/* 0xc0 */ 3, 3, 1, 1, 0, 4, 3, 3, 5, 5,
	};
	unsigned op = code[i];
	if (op == 0xaa || op == 0xab) { /* tableswitch, lookupswitch: padded to 4 */
		jint p = (i + 4) & ~3;
		if (p + 12 > n)
			return 0;
		int32_t a = bc_s32(code + p + 4), b = bc_s32(code + p + 8);
		int64_t l = op == 0xaa ? (int64_t)p + 12 + 4 * ((int64_t)b - a + 1) : (int64_t)p + 8 + 8 * (int64_t)a;
		return l > i && l <= n ? (jint)(l - i) : 0;
	}
	if (op == 0xc4) /* wide: iinc's is 6 bytes, the others' 4 */
		return i + 1 < n ? (code[i + 1] == 0x84 ? 6 : 4) : 0;
	return op < sizeof len ? len[op] : 0;
}

/* bc_in_loop says whether a method's code at bytecode index at is inside a
 * loop (1), not (0): whether a backward jump spans it. An instruction it
 * cannot read counts as a loop: leaving a class alone costs less than a
 * loop run interpreted. */
static int bc_in_loop(const unsigned char *code, jint n, jlocation at)
{
	for (jint i = 0; i < n;) {
		jint l = bc_len(code, n, i);
		if (l <= 0 || i + l > n)
			return 1;
		unsigned op = code[i];
		int32_t off = 0;
		if ((op >= 0x99 && op <= 0xa8) || op == 0xc6 || op == 0xc7) /* if*, goto, jsr */
			off = (int16_t)((uint16_t)code[i + 1] << 8 | code[i + 2]);
		else if (op == 0xc8 || op == 0xc9) /* goto_w, jsr_w */
			off = bc_s32(code + i + 1);
#define JP_SPANS(o) ((o) < 0 && i + (jlocation)(o) <= at && at <= i)
		if (JP_SPANS(off))
			return 1;
		if (op == 0xaa || op == 0xab) { /* the default, then each target */
			jint p = (i + 4) & ~3;
			if (JP_SPANS(bc_s32(code + p)))
				return 1;
			for (jint t = p + 12; t + 4 <= i + l; t += op == 0xaa ? 4 : 8)
				if (JP_SPANS(bc_s32(code + t)))
					return 1;
		}
#undef JP_SPANS
		i += l;
	}
	return 0;
}

/* bc_frame_in_loop: is m's frame, at bytecode index at, inside a loop?
 * Unknown counts as yes. */
static int bc_frame_in_loop(jvmtiEnv *jvmti, jmethodID m, jlocation at)
{
	jint n = 0;
	unsigned char *code = NULL;
	if ((*jvmti)->GetBytecodes(jvmti, m, &n, &code) != JVMTI_ERROR_NONE || code == NULL)
		return 1;
	int r = bc_in_loop(code, n, at);
	(*jvmti)->Deallocate(jvmti, code);
	return r;
}

/* bottom_frames gets a thread's bottom JP_LOOP_DEPTH frames (a negative
 * start counts from the bottom), or 0. The thread runs on between the
 * frame count and the stack trace: a stack that has shrunk below the
 * count meanwhile (a loop calling a method, the common case here) makes
 * the trace an error, so it is taken again. */
static jint bottom_frames(jvmtiEnv *jvmti, jthread th, jvmtiFrameInfo *fr)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		jint fc = 0, got = 0;
		if ((*jvmti)->GetFrameCount(jvmti, th, &fc) != JVMTI_ERROR_NONE || fc <= 0)
			return 0;
		jint d = fc < JP_LOOP_DEPTH ? fc : JP_LOOP_DEPTH;
		jvmtiError e = (*jvmti)->GetStackTrace(jvmti, th, -d, d, fr, &got);
		if (e == JVMTI_ERROR_NONE)
			return got;
		if (e != JVMTI_ERROR_ILLEGAL_ARGUMENT)
			return 0;
	}
	return 0;
}

/* Program frames looked at on each thread, from the bottom: a lifelong
 * loop is in a thread's first own frame (a main, a worker's run) or a
 * call or two above it (main calling the program's run loop, a thread's
 * lambda calling an engine's); higher up, methods come and go. */
#define JP_LOOP_FRAMES 3

/* How long a loop must be seen running to count as lifelong: longer than
 * a task's or a short thread's work usually runs, short enough to add
 * little to an attach (the wait happens only when some thread is in a
 * loop at the first look). */
#define JP_LOOP_SETTLE_MS 500

/* bci_keep_class adds c (a local ref, deleted here) to the classes to
 * leave alone, once. */
static void bci_keep_class(JNIEnv *jni, jclass **cs, jint *n, jint *cap, jclass c)
{
	int have = 0;
	for (jint k = 0; k < *n && !have; k++)
		have = (*jni)->IsSameObject(jni, (*cs)[k], c);
	if (!have && *n == *cap) {
		jint ncap = *cap ? 2 * *cap : 16;
		jclass *g = realloc(*cs, sizeof **cs * (size_t)ncap);
		if (g != NULL) {
			*cs = g;
			*cap = ncap;
		}
	}
	if (!have && *n < *cap && ((*cs)[*n] = (*jni)->NewGlobalRef(jni, c)) != NULL)
		(*n)++;
	(*jni)->DeleteLocalRef(jni, c);
}

/* A thread's loop as one look saw it: the frames from the bottom up to
 * the first of its own code inside a loop. */
struct loop_seen {
	jthread th; /* global ref */
	jint nm;    /* frames from the bottom, the loop's included */
	jmethodID m[JP_LOOP_DEPTH];
};

/* thread_loop looks at th's bottom frames for the first of the thread's
 * own code (a class the transformer instruments) that is inside a loop,
 * among its first JP_LOOP_FRAMES: fills s (not th) and returns that
 * frame's class (a local ref), or NULL. */
static jclass thread_loop(jvmtiEnv *jvmti, JNIEnv *jni, jthread th, struct loop_seen *s)
{
	jvmtiFrameInfo fr[JP_LOOP_DEPTH];
	jint got = bottom_frames(jvmti, th, fr);
	int own = 0; /* program frames seen, from the bottom */
	for (jint f = got - 1; f >= 0 && own < JP_LOOP_FRAMES; f--) {
		jmethodID m = fr[f].method;
		jboolean native = JNI_FALSE;
		jclass c = NULL;
		if ((*jvmti)->IsMethodNative(jvmti, m, &native) != JVMTI_ERROR_NONE || native ||
		    (*jvmti)->GetMethodDeclaringClass(jvmti, m, &c) != JVMTI_ERROR_NONE || c == NULL)
			continue;
		char *sig = NULL;
		/* Only a class a retransformation would change: not a hidden
		 * one (a lambda's Runnable, whose run() calls the lambda's
		 * body). */
		jboolean mod = JNI_FALSE;
		int wanted = (*jvmti)->IsModifiableClass(jvmti, c, &mod) == JVMTI_ERROR_NONE && mod &&
			     bci_class_wanted(jni, c, &sig);
		if (sig != NULL)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
		if (wanted)
			own++;
		if (wanted && bc_frame_in_loop(jvmti, m, fr[f].location)) {
			/* The first frame inside a loop, from the bottom: what
			 * runs above it is called from it, and returns. */
			s->nm = got - f;
			for (jint k = 0; k < s->nm; k++)
				s->m[k] = fr[got - 1 - k].method;
			return c;
		}
		(*jni)->DeleteLocalRef(jni, c);
	}
	return NULL;
}

/*
 * bci_running_loops: a loop that runs for the program's life is where a
 * thread's own code starts (a main loop, the run() of a worker or of an
 * event loop) or a call or two above it (main, or a thread's lambda,
 * calling the program's run loop), at the bottom of its stack under the
 * JDK's frames; the frames above come and go. So on each thread the
 * first frame that is inside a loop (where its method is: a call from
 * the loop's body), among its outermost JP_LOOP_FRAMES frames of classes
 * the transformer instruments, is a candidate; never a method called
 * from that loop or merely running higher up (where a program spends
 * most of its time, in methods that return). A candidate still running
 * JP_LOOP_SETTLE_MS later (the same thread, the same frames under it)
 * names the class to leave alone: a task of a pool, a short thread's
 * work, a loop that was about to end, are not kept out of the profile. A
 * lifelong loop deeper in a thread's frames, or called from another
 * loop, is missed: it runs interpreted.
 */
jclass *bci_running_loops(jvmtiEnv *jvmti, JNIEnv *jni, jint *n)
{
	*n = 0;
	jthread *ths = NULL;
	jint nt = 0;
	if ((*jvmti)->GetAllThreads(jvmti, &nt, &ths) != JVMTI_ERROR_NONE)
		return NULL;
	struct loop_seen *seen = calloc(nt > 0 ? (size_t)nt : 1, sizeof *seen);
	jint ns = 0;
	for (jint t = 0; t < nt; t++) {
		jclass c = seen != NULL ? thread_loop(jvmti, jni, ths[t], &seen[ns]) : NULL;
		if (c != NULL) {
			(*jni)->DeleteLocalRef(jni, c);
			if ((seen[ns].th = (*jni)->NewGlobalRef(jni, ths[t])) != NULL)
				ns++;
		}
		(*jni)->DeleteLocalRef(jni, ths[t]);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)ths);
	if (ns > 0) {
		struct timespec d = {JP_LOOP_SETTLE_MS / 1000, (JP_LOOP_SETTLE_MS % 1000) * 1000000L};
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
	}
	jint cap = 0;
	jclass *cs = NULL;
	struct loop_seen now;
	for (jint i = 0; i < ns; i++) {
		jclass c = thread_loop(jvmti, jni, seen[i].th, &now);
		if (c != NULL && now.nm == seen[i].nm && memcmp(now.m, seen[i].m, sizeof now.m[0] * (size_t)now.nm) == 0)
			bci_keep_class(jni, &cs, n, &cap, c);
		else if (c != NULL)
			(*jni)->DeleteLocalRef(jni, c);
		(*jni)->DeleteGlobalRef(jni, seen[i].th);
	}
	free(seen);
	return cs;
}

void bci_running_free(JNIEnv *jni, jclass *cs, jint n)
{
	for (jint i = 0; cs != NULL && i < n; i++)
		(*jni)->DeleteGlobalRef(jni, cs[i]);
	free(cs);
}

int bci_keep_running(JNIEnv *jni, jclass *cs, jint n, jclass c, const char *sig)
{
	for (jint i = 0; i < n; i++) {
		if (!(*jni)->IsSameObject(jni, cs[i], c))
			continue;
		if (sig == NULL) /* only asked */
			return 1;
		jp_notef("BCI: class %s left as it was: a method of it is running a loop (a retransformation would leave "
			 "that loop interpreted until it returns)", sig);
		return 1;
	}
	return 0;
}
