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
 * seen (at a detach, it keeps its probes, which return at once, until
 * the loop has returned: jp_bci_restore_kept, in bci_kept.c), said in
 * log-msg and counted; a loop the looks miss is named
 * (jp_bci_warn_obsolete, bci_kept.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bci.h"


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

/* bci_in_loop says whether a method's code at bytecode index at is inside a
 * loop (1), not (0): whether a backward jump spans it. An instruction it
 * cannot read counts as a loop: leaving a class alone costs less than a
 * loop run interpreted. */
int bci_in_loop(const unsigned char *code, jint n, jlocation at)
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

/* bci_frame_in_loop: is m's frame, at bytecode index at, inside a loop?
 * Unknown counts as yes. */
int bci_frame_in_loop(jvmtiEnv *jvmti, jmethodID m, jlocation at)
{
	jint n = 0;
	unsigned char *code = NULL;
	if ((*jvmti)->GetBytecodes(jvmti, m, &n, &code) != JVMTI_ERROR_NONE || code == NULL)
		return 1;
	int r = bci_in_loop(code, n, at);
	(*jvmti)->Deallocate(jvmti, code);
	return r;
}

/* A virtual thread's frames are taken from the top, at most this many:
 * JDK 25 crashes the JVM walking an unmounted virtual thread's stack
 * from a negative depth (GetStackTrace's start_depth < 0 ends in
 * frame::sender_for_interpreter_frame on a sleeping one), and walks it
 * from the top without trouble. A deeper stack is not judged. */
#define JP_LOOP_VDEPTH 512

/* bci_bottom_frames gets a thread's bottom JP_LOOP_DEPTH frames (a negative
 * start counts from the bottom), or 0. The thread runs on between the
 * frame count and the stack trace: a stack that has shrunk below the
 * count meanwhile (a loop calling a method, the common case here) makes
 * the trace an error, so it is taken again. A virtual thread's (virt)
 * are taken from the top. */
jint bci_bottom_frames(jvmtiEnv *jvmti, jthread th, int virt, jvmtiFrameInfo *fr)
{
	if (virt) {
		jvmtiFrameInfo all[JP_LOOP_VDEPTH]; /* 8 KiB */
		jint got = 0;
		if ((*jvmti)->GetStackTrace(jvmti, th, 0, JP_LOOP_VDEPTH, all, &got) != JVMTI_ERROR_NONE ||
		    got >= JP_LOOP_VDEPTH)
			return 0;
		jint from = got > JP_LOOP_DEPTH ? got - JP_LOOP_DEPTH : 0;
		memcpy(fr, all + from, sizeof *fr * (size_t)(got - from));
		return got - from;
	}
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

/* How long a loop must be seen running to count as lifelong: longer than
 * a task's or a short thread's work usually runs, short enough to add
 * little to an attach (the wait happens only when some thread is in a
 * loop at the first look). */
#define JP_LOOP_SETTLE_MS 500
/* Looks over that time: the first, and two more. */
#define JP_LOOP_LOOKS 3

void bci_keep_class(JNIEnv *jni, jclass **cs, jint *n, jclass c)
{
	for (jint k = 0; k < *n; k++)
		if ((*jni)->IsSameObject(jni, (*cs)[k], c))
			return;
	jclass *g = realloc(*cs, sizeof **cs * (size_t)(*n + 1));
	if (g == NULL)
		return;
	*cs = g;
	if ((g[*n] = (*jni)->NewGlobalRef(jni, c)) != NULL)
		(*n)++;
}

/* A thread's frames as one look saw them, from the bottom, and which of
 * them are of classes the transformer instruments and inside a loop. */
struct loop_seen {
	jthread th; /* global ref */
	int virt;   /* a virtual thread */
	jint nm;
	jmethodID m[JP_LOOP_DEPTH];
	uint64_t loop; /* bit k: frame k from the bottom is a candidate */
};

/* frame_class is the class of method m if the transformer would change
 * it (not a native method, not a hidden class such as a lambda's
 * Runnable), a local ref, or NULL. */
static jclass frame_class(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID m)
{
	jboolean native = JNI_FALSE;
	jclass c = NULL;
	if ((*jvmti)->IsMethodNative(jvmti, m, &native) != JVMTI_ERROR_NONE || native ||
	    (*jvmti)->GetMethodDeclaringClass(jvmti, m, &c) != JVMTI_ERROR_NONE || c == NULL)
		return NULL;
	char *sig = NULL;
	jboolean mod = JNI_FALSE;
	int wanted = (*jvmti)->IsModifiableClass(jvmti, c, &mod) == JVMTI_ERROR_NONE && mod && bci_class_wanted(jni, c, &sig);
	if (sig != NULL)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	if (!wanted) {
		(*jni)->DeleteLocalRef(jni, c);
		return NULL;
	}
	return c;
}

/* thread_loops looks at th's bottom frames: fills s (not th) with them
 * and marks those of classes the transformer instruments that are
 * inside a loop; returns how many are. */
static int thread_loops(jvmtiEnv *jvmti, JNIEnv *jni, jthread th, int virt, struct loop_seen *s)
{
	jvmtiFrameInfo fr[JP_LOOP_DEPTH];
	jint got = bci_bottom_frames(jvmti, th, virt, fr);
	int n = 0;
	s->nm = got;
	s->loop = 0;
	for (jint k = 0; k < got; k++) {
		jint f = got - 1 - k;
		s->m[k] = fr[f].method;
		jclass c = frame_class(jvmti, jni, fr[f].method);
		if (c == NULL)
			continue;
		if (bci_frame_in_loop(jvmti, fr[f].method, fr[f].location)) {
			s->loop |= 1ull << k;
			n++;
		}
		(*jni)->DeleteLocalRef(jni, c);
	}
	return n;
}

/*
 * bci_running_loops: a loop that runs for the program's life (a main
 * loop, the run() of a worker or of an event loop, an engine's loop a
 * thread's lambda calls) is a frame that stays, with the same frames
 * under it, while the frames above it come and go. So each thread's
 * frames of classes the transformer instruments that are inside a loop
 * (where their method is: a call from the loop's body), among its
 * JP_LOOP_DEPTH outermost, are candidates, and the outermost candidate
 * still there at the looks JP_LOOP_SETTLE_MS / 2 and JP_LOOP_SETTLE_MS
 * later (the same thread, the same frames from the bottom up to it,
 * inside a loop again) names a class to leave alone. Only the
 * outermost: a method that loop calls over and over, with a loop of its
 * own, is there at every look too, and nothing the looks see tells it
 * from a lifelong loop above the outermost (a server's loop under a
 * retry loop). A task of a pool, a short thread's work, a loop that was
 * about to end, are gone by then and not kept out of the profile. A
 * lifelong loop above another, one that starts between the looks, one
 * deeper than JP_LOOP_DEPTH frames is missed: it runs interpreted, and
 * jp_bci_warn_obsolete names it. Virtual threads are looked at too
 * (jp_all_threads), up to a few thousand of them; one past those, or
 * one the JDK does not track (-Djdk.trackAllThreads=false), is missed
 * and not named. With vts, the virtual threads whose loops were kept
 * are given too (global refs, *nvts of them), for jp_bci_restore_kept,
 * which looks at them alone.
 */
jclass *bci_running_loops(jvmtiEnv *jvmti, JNIEnv *jni, jint *n, jthread **vts, jint *nvts)
{
	*n = 0;
	if (vts != NULL) {
		*vts = NULL;
		*nvts = 0;
	}
	jint nt = 0, np = 0;
	jthread *ths = jp_all_threads(jvmti, jni, &nt, &np, 1);
	if (ths == NULL)
		return NULL;
	struct loop_seen *seen = calloc(nt > 0 ? (size_t)nt : 1, sizeof *seen);
	/* Per thread, over the looks: the candidates that stayed. */
	uint64_t *stayed = calloc(nt > 0 ? (size_t)nt : 1, sizeof *stayed);
	jint ns = 0;
	for (jint t = 0; t < nt; t++) {
		if (seen != NULL && stayed != NULL && thread_loops(jvmti, jni, ths[t], t >= np, &seen[ns]) > 0 &&
		    (seen[ns].th = (*jni)->NewGlobalRef(jni, ths[t])) != NULL) {
			seen[ns].virt = t >= np;
			stayed[ns] = seen[ns].loop;
			ns++;
		}
	}
	jp_all_threads_free(jni, ths, nt);
	struct loop_seen now;
	for (int look = 1; look < JP_LOOP_LOOKS && ns > 0; look++) {
		long ms = JP_LOOP_SETTLE_MS / (JP_LOOP_LOOKS - 1);
		struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
		for (jint i = 0; i < ns; i++) {
			if (stayed[i] == 0)
				continue;
			thread_loops(jvmti, jni, seen[i].th, seen[i].virt, &now);
			/* The frames the looks share from the bottom. */
			jint same = 0;
			while (same < now.nm && same < seen[i].nm && now.m[same] == seen[i].m[same])
				same++;
			stayed[i] &= now.loop & (same >= 64 ? ~0ull : (1ull << same) - 1);
		}
	}
	jclass *cs = NULL;
	for (jint i = 0; i < ns; i++) {
		/* The outermost loop of the first look, if it stayed: a
		 * method that loop calls over and over, with a loop of its
		 * own, is there at every look too, over the same frames, and
		 * the looks can tell it from a lifelong loop above the
		 * outermost (a server's loop under a retry loop) by nothing;
		 * jp_bci_warn_obsolete names such a loop when it is missed. */
		uint64_t keep = stayed[i] & seen[i].loop & -seen[i].loop;
		for (jint k = 0; keep != 0 && k < seen[i].nm; k++) {
			jclass c = keep >> k & 1 ? frame_class(jvmti, jni, seen[i].m[k]) : NULL;
			if (c != NULL) {
				bci_keep_class(jni, &cs, n, c);
				(*jni)->DeleteLocalRef(jni, c);
			}
		}
		jthread *g;
		if (keep != 0 && seen[i].virt && vts != NULL && (g = realloc(*vts, sizeof *g * (size_t)(*nvts + 1))) != NULL) {
			*vts = g;
			g[(*nvts)++] = seen[i].th; /* the caller's now */
			continue;
		}
		(*jni)->DeleteGlobalRef(jni, seen[i].th);
	}
	free(seen);
	free(stayed);
	return cs;
}

void bci_running_free(JNIEnv *jni, jclass *cs, jint n)
{
	for (jint i = 0; cs != NULL && i < n; i++)
		(*jni)->DeleteGlobalRef(jni, cs[i]);
	free(cs);
}

int bci_keep_running(JNIEnv *jni, jclass *cs, jint n, jclass c)
{
	for (jint i = 0; i < n; i++)
		if ((*jni)->IsSameObject(jni, cs[i], c))
			return 1;
	return 0;
}
