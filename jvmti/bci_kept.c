/*
 * bci_kept.c: after a retransformation of an attached agent, the loops
 * it left running in replaced method versions (named in log-msg and on
 * jprof's last line: jp_bci_warn_obsolete), and the classes it left as
 * they were: those the start left uninstrumented (named for jprof), and
 * those a detach left instrumented because a loop of theirs ran, given
 * their own bytes back once it has returned (jp_bci_restore_kept).
 * Which classes those are, the looks in bci_loops.c decide.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bci.h"

/* dotted turns a class signature (Lpkg/Cls;) into the name the program
 * spells (pkg.Cls), in place, and returns it. */
static char *dotted(char *sig)
{
	size_t l = strlen(sig);
	if (l > 2 && sig[0] == 'L' && sig[l - 1] == ';') {
		sig[l - 1] = '\0';
		sig++;
	}
	for (char *p = sig; *p != '\0'; p++)
		if (*p == '/')
			*p = '.';
	return sig;
}

/* appendf appends to out (outlen bytes), of which *used are taken; once
 * it is full, *used is outlen and nothing more is written (snprintf ends
 * what was cut short). */
static void appendf(char *out, int outlen, size_t *used, const char *fmt, ...)
{
	if (*used + 1 >= (size_t)outlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(out + *used, (size_t)outlen - *used, fmt, ap);
	va_end(ap);
	*used = w < 0 || *used + (size_t)w >= (size_t)outlen ? (size_t)outlen : *used + (size_t)w;
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
	const char *cls = sig != NULL ? dotted(sig) : NULL;
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
 * wanted). Called a while after a start's retransformation (an attach's,
 * or the late first start of a JVM started with the agent;
 * agent/rtdriver.go), so that only frames that have lasted are named: a
 * hot method caught in its loop at the retransformation has returned by
 * then, and its next calls run the new version; and at a detach, for
 * jprof's last line. On a thread attached to the VM, outside agent
 * locks. */
int jp_bci_warn_obsolete(char *out, int outlen)
{
	JNIEnv *jni = jp_env();
	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (jni == NULL || jp.dead)
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
			int loop = bci_in_loop(code, n, fr[f].location);
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
	for (int g = 0; out != NULL && g < nby; g++) {
		if (by[g].threads == 1)
			appendf(out, outlen, &used, "%s%s on %s", g > 0 ? ", " : "", by[g].meth, by[g].who);
		else
			appendf(out, outlen, &used, "%s%s on %d threads", g > 0 ? ", " : "", by[g].meth, by[g].threads);
	}
	if (out != NULL && others > 0)
		appendf(out, outlen, &used, ", and %d more", others);
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
		jint got = bci_bottom_frames(jvmti, th, t >= np, fr), top = 0;
		if ((*jvmti)->GetStackTrace(jvmti, th, 0, JP_LOOP_DEPTH, fr + got, &top) != JVMTI_ERROR_NONE)
			top = 0;
		for (jint f = 0; f < got + top; f++) {
			jclass c = NULL;
			if ((*jvmti)->GetMethodDeclaringClass(jvmti, fr[f].method, &c) != JVMTI_ERROR_NONE || c == NULL)
				continue;
			for (jint i = 0; i < n; i++)
				if (!busy[i] && (*jni)->IsSameObject(jni, cs[i], c) &&
				    bci_frame_in_loop(jvmti, fr[f].method, fr[f].location))
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
		appendf(out, outlen, &used, "%s%s", used > 0 ? ", " : "", dotted(sig));
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
