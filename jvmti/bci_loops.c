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
 * the loop has returned: jp_bci_restore_kept), said in log-msg and
 * counted; a loop the looks miss is named (jp_bci_warn_obsolete).
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

/* Frames looked at per thread, from the bottom: a loop that lasts is
 * seldom deeper than this under a thread's start or a pool's worker. */
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

/* A virtual thread's frames are taken from the top, at most this many:
 * JDK 25 crashes the JVM walking an unmounted virtual thread's stack
 * from a negative depth (GetStackTrace's start_depth < 0 ends in
 * frame::sender_for_interpreter_frame on a sleeping one), and walks it
 * from the top without trouble. A deeper stack is not judged. */
#define JP_LOOP_VDEPTH 512

/* bottom_frames gets a thread's bottom JP_LOOP_DEPTH frames (a negative
 * start counts from the bottom), or 0. The thread runs on between the
 * frame count and the stack trace: a stack that has shrunk below the
 * count meanwhile (a loop calling a method, the common case here) makes
 * the trace an error, so it is taken again. A virtual thread's (virt)
 * are taken from the top. */
static jint bottom_frames(jvmtiEnv *jvmti, jthread th, int virt, jvmtiFrameInfo *fr)
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
	jint got = bottom_frames(jvmti, th, virt, fr);
	int n = 0;
	s->nm = got;
	s->loop = 0;
	for (jint k = 0; k < got; k++) {
		jint f = got - 1 - k;
		s->m[k] = fr[f].method;
		jclass c = frame_class(jvmti, jni, fr[f].method);
		if (c == NULL)
			continue;
		if (bc_frame_in_loop(jvmti, fr[f].method, fr[f].location)) {
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

/* loop_name writes method m's name as the program spells it (pkg.Cls.m)
 * into meth, and who runs it (thread "T", virtual thread "T", or an
 * unnamed virtual thread) into who, each of len bytes. */
static void loop_name(jvmtiEnv *jvmti, JNIEnv *jni, jthread th, int virt, jmethodID m, char *meth, char *who, size_t len)
{
	char *name = NULL, *sig = NULL;
	jclass c = NULL;
	(*jvmti)->GetMethodName(jvmti, m, &name, NULL, NULL);
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &c) == JVMTI_ERROR_NONE && c != NULL)
		(*jvmti)->GetClassSignature(jvmti, c, &sig, NULL);
	/* The class's name as the program spells it: Lpkg/Cls; -> pkg.Cls. */
	char *cls = sig != NULL && sig[0] == 'L' ? sig + 1 : sig;
	for (char *p = cls; p != NULL && *p != '\0'; p++) {
		if (*p == '/')
			*p = '.';
		else if (*p == ';' && p[1] == '\0')
			*p = '\0';
	}
	jvmtiThreadInfo ti = {0};
	(*jvmti)->GetThreadInfo(jvmti, th, &ti);
	/* A virtual thread has no name unless given one. */
	int named = ti.name != NULL && ti.name[0] != '\0';
	snprintf(meth, len, "%s.%s", cls != NULL ? cls : "?", name != NULL ? name : "?");
	snprintf(who, len, "%s%s%s%s", named ? "" : "an unnamed ", virt ? "virtual thread" : "thread", named ? " \"" : "",
		 named ? ti.name : "");
	if (named && strlen(who) + 2 <= len)
		strcat(who, "\"");
	if (ti.name != NULL)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)ti.name);
	if (ti.thread_group != NULL)
		(*jni)->DeleteLocalRef(jni, ti.thread_group);
	if (ti.context_class_loader != NULL)
		(*jni)->DeleteLocalRef(jni, ti.context_class_loader);
	if (name != NULL)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)name);
	if (sig != NULL)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	if (c != NULL)
		(*jni)->DeleteLocalRef(jni, c);
}

/* jp_bci_warn_obsolete finds the loops running in a replaced method
 * version (a loop the looks missed, see bci_running_loops, or one a
 * retransformation before it replaced), which HotSpot runs interpreted
 * until it returns: it names each in log-msg, once per method, and
 * returns how many run now, named in out (outlen bytes: "pkg.Cls.m on
 * thread \"T\"" or "on N threads", ", " between methods; NULL: not
 * wanted). Called a while after a retransformation of an attached agent
 * (agent/rtdriver.go), so that only frames that have lasted are named: a
 * hot method caught in its loop at the retransformation has returned by
 * then, and its next calls run the new version; and at a detach, for
 * jprof's last line. On a thread attached to the VM, outside agent
 * locks. */
int jp_bci_warn_obsolete(char *out, int outlen)
{
	JNIEnv *jni = jp_env();
	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (!jpvm.live || jni == NULL || jp.dead)
		return 0;
	jvmtiEnv *jvmti = jpvm.jvmti;
	static jmethodID warned[64];
	static int nwarned;
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	/* The methods running now, with how many threads run each. */
	struct {
		jmethodID m;
		int threads;
		char meth[256], who[256];
	} by[8];
	int nby = 0, others = 0, running = 0;
	jint nt = 0, np = 0;
	jthread *ths = jp_all_threads(jvmti, jni, &nt, &np, 1);
	jvmtiFrameInfo fr[JP_LOOP_DEPTH];
	pthread_mutex_lock(&mu);
	for (jint t = 0; t < nt; t++) {
		/* The top frames: where a loop the looks missed, deeper than
		 * they look, runs. */
		jint got = 0;
		if ((*jvmti)->GetStackTrace(jvmti, ths[t], 0, JP_LOOP_DEPTH, fr, &got) != JVMTI_ERROR_NONE)
			got = 0;
		for (jint f = 0; f < got; f++) {
			jboolean old = JNI_FALSE;
			if ((*jvmti)->IsMethodObsolete(jvmti, fr[f].method, &old) != JVMTI_ERROR_NONE || !old)
				continue;
			jint n = 0;
			unsigned char *code = NULL;
			if ((*jvmti)->GetBytecodes(jvmti, fr[f].method, &n, &code) != JVMTI_ERROR_NONE || code == NULL)
				continue;
			int loop = bc_in_loop(code, n, fr[f].location);
			(*jvmti)->Deallocate(jvmti, code);
			if (!loop)
				continue;
			running++;
			int g = 0;
			while (g < nby && by[g].m != fr[f].method)
				g++;
			if (g < nby) {
				by[g].threads++;
				continue;
			}
			char meth[256], who[256];
			loop_name(jvmti, jni, ths[t], t >= np, fr[f].method, meth, who, sizeof meth);
			if (nby < (int)(sizeof by / sizeof by[0])) {
				by[nby].m = fr[f].method;
				by[nby].threads = 1;
				memcpy(by[nby].meth, meth, sizeof meth);
				memcpy(by[nby].who, who, sizeof who);
				nby++;
			} else {
				others++;
			}
			int seen = 0;
			for (int i = 0; i < nwarned && !seen; i++)
				seen = warned[i] == fr[f].method;
			if (seen)
				continue;
			if (nwarned < (int)(sizeof warned / sizeof warned[0]))
				warned[nwarned++] = fr[f].method;
			jp_notef("BCI: a loop in %s on %s has been running since its class was retransformed: it runs "
				 "interpreted until it returns (HotSpot never compiles a replaced method version); a lifelong "
				 "loop stays slow after the profile",
				 meth, who);
		}
	}
	pthread_mutex_unlock(&mu);
	jp_all_threads_free(jni, ths, nt);
	size_t used = 0;
	for (int g = 0; out != NULL && g <= nby && used + 1 < (size_t)outlen; g++) {
		int w;
		if (g == nby)
			w = others > 0 ? snprintf(out + used, (size_t)outlen - used, ", and %d more", others) : 0;
		else if (by[g].threads == 1)
			w = snprintf(out + used, (size_t)outlen - used, "%s%s on %s", g > 0 ? ", " : "", by[g].meth, by[g].who);
		else
			w = snprintf(out + used, (size_t)outlen - used, "%s%s on %d threads", g > 0 ? ", " : "", by[g].meth,
				     by[g].threads);
		/* Cut short past outlen (snprintf ends it there). */
		used = w < 0 || used + (size_t)w >= (size_t)outlen ? (size_t)outlen : used + (size_t)w;
	}
	return running;
}

/* loops_now says, for each class of cs (n of them), whether a method of
 * it runs a loop now (1), in an array of n; NULL when it cannot be told.
 * It looks at the platform threads and at the virtual threads vts (nv of
 * them, those the kept loops ran on): JVMTI alone, no Java, so that it
 * may run under bci_lock; and a program's thousands of virtual threads
 * are not looked at every second. */
static char *loops_now(jvmtiEnv *jvmti, JNIEnv *jni, jclass *cs, jint n, jthread *vts, jint nv)
{
	jint np = 0;
	char *busy = calloc(n > 0 ? (size_t)n : 1, 1);
	jthread *ths = busy != NULL ? jp_all_threads(jvmti, jni, &np, NULL, 0) : NULL;
	if (ths == NULL) {
		free(busy);
		return NULL;
	}
	jvmtiFrameInfo fr[2 * JP_LOOP_DEPTH];
	for (jint t = 0; t < np + nv; t++) {
		jthread th = t < np ? ths[t] : vts[t - np];
		/* The bottom frames and the top ones: a loop the looks kept,
		 * or one deeper. */
		jint got = bottom_frames(jvmti, th, t >= np, fr), top = 0;
		if ((*jvmti)->GetStackTrace(jvmti, th, 0, JP_LOOP_DEPTH, fr + got, &top) != JVMTI_ERROR_NONE)
			top = 0;
		for (jint f = 0; f < got + top; f++) {
			jclass c = NULL;
			if ((*jvmti)->GetMethodDeclaringClass(jvmti, fr[f].method, &c) != JVMTI_ERROR_NONE || c == NULL)
				continue;
			for (jint i = 0; i < n; i++)
				if (!busy[i] && (*jni)->IsSameObject(jni, cs[i], c) &&
				    bc_frame_in_loop(jvmti, fr[f].method, fr[f].location))
					busy[i] = 1;
			(*jni)->DeleteLocalRef(jni, c);
		}
	}
	jp_all_threads_free(jni, ths, np);
	return busy;
}

/* jp_bci_restore_kept gives the classes a detach left instrumented (a
 * loop of theirs was running) their own bytes back once no loop of
 * theirs runs any more, so that their other callers do not pay the
 * probes until the next profile: called every second after such a
 * detach (agent/rtdriver.go), on a thread attached to the VM. Returns
 * how many are still kept (0: nothing more to do). */
int jp_bci_restore_kept(void)
{
	JNIEnv *jni = jp_env();
	if (jni == NULL)
		return 0;
	pthread_mutex_lock(&bci_lock);
	int left = 0;
	if (bci.instrumenting || jp.dead) {
		bci_detach_kept_free(jni);
	} else if (bci.ndetach_kept > 0) {
		char *busy = loops_now(jpvm.jvmti, jni, bci.detach_kept, bci.ndetach_kept, bci.detach_vthreads,
				       bci.ndetach_vthreads);
		jclass *done = calloc((size_t)bci.ndetach_kept, sizeof *done);
		jint nd = 0, nk = 0;
		for (jint i = 0; i < bci.ndetach_kept; i++) {
			jclass c = bci.detach_kept[i];
			if (busy != NULL && !busy[i] && done != NULL) {
				done[nd++] = (*jni)->NewLocalRef(jni, c);
				char *sig = NULL;
				(*jpvm.jvmti)->GetClassSignature(jpvm.jvmti, c, &sig, NULL);
				jp_notef("BCI: class %s given its own bytes back: its loop has returned", sig != NULL ? sig : "?");
				if (sig != NULL)
					(*jpvm.jvmti)->Deallocate(jpvm.jvmti, (unsigned char *)sig);
				(*jni)->DeleteGlobalRef(jni, c);
			} else {
				bci.detach_kept[nk++] = c;
			}
		}
		bci.ndetach_kept = nk;
		if (nd > 0)
			bci_retransform_list(jni, done, nd);
		free(done);
		free(busy);
		left = nk;
		if (nk == 0)
			bci_detach_kept_free(jni);
	}
	pthread_mutex_unlock(&bci_lock);
	return left;
}

int jp_bci_start_kept_names(char *out, int outlen)
{
	if (outlen <= 0)
		return 0;
	out[0] = '\0';
	pthread_mutex_lock(&bci_lock);
	size_t used = 0;
	for (jint i = 0; i < bci.nstart_kept && used + 1 < (size_t)outlen; i++) {
		char *sig = NULL;
		if ((*jpvm.jvmti)->GetClassSignature(jpvm.jvmti, bci.start_kept[i], &sig, NULL) != JVMTI_ERROR_NONE || sig == NULL)
			continue;
		/* Lpkg/Cls; -> pkg.Cls, as the program spells it. */
		size_t l = strlen(sig);
		if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';')
			sig[l - 1] = '\0';
		for (char *p = sig; *p != '\0'; p++)
			if (*p == '/')
				*p = '.';
		int w = snprintf(out + used, (size_t)outlen - used, "%s%s", used > 0 ? ", " : "", sig[0] == 'L' ? sig + 1 : sig);
		used = w < 0 || used + (size_t)w >= (size_t)outlen ? (size_t)outlen : used + (size_t)w;
		(*jpvm.jvmti)->Deallocate(jpvm.jvmti, (unsigned char *)sig);
	}
	int n = bci.nstart_kept;
	pthread_mutex_unlock(&bci_lock);
	return n;
}

void bci_detach_kept_free(JNIEnv *jni)
{
	bci_running_free(jni, bci.detach_kept, bci.ndetach_kept);
	bci.detach_kept = NULL;
	bci.ndetach_kept = 0;
	jp_all_threads_free(jni, bci.detach_vthreads, bci.ndetach_vthreads);
	bci.detach_vthreads = NULL;
	bci.ndetach_vthreads = 0;
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
