/*
 * threadrecord.c: a Java thread's engine record, made at its first event
 * and named as the VM names it. In a file of its own because every event
 * source uses it (method events, ROOTS, BCI, sampling, and the lifecycle
 * callbacks in binding.c and vthreads.c), not the method-event source
 * alone. (vmthread.go is something else: the Go side's VMThread.)
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

/* jp_vm_thread makes the calling thread's record at its first event,
 * named as the VM names it (thread NULL: the calling thread). */
jp_thread *jp_vm_thread(jvmtiEnv *jvmti, jthread thread)
{
	if (jp_vt_mode == JP_VT_TRACKED) {
		jp_thread *vt = jp_vt_first_event(jvmti, thread);
		if (vt != NULL)
			return vt;
	}
	char *name = jp_vm_thread_name(jvmti, thread);
	jp_thread *t = jp_thread_attach(name != NULL ? name : "unknown");
	free(name);
	return t;
}

char *jp_vm_thread_name(jvmtiEnv *jvmti, jthread thread)
{
	jvmtiThreadInfo info;
	memset(&info, 0, sizeof info);
	/* thread NULL: the calling thread (JVMTI's rule) */
	if ((*jvmti)->GetThreadInfo(jvmti, thread, &info) != JVMTI_ERROR_NONE || info.name == NULL)
		return NULL;
	/* Its group and loader are local references, freed with the
	 * callback's (or native call's) frame. */
	char *name = strdup(info.name);
	(*jvmti)->Deallocate(jvmti, (unsigned char *)info.name);
	return name;
}

/* Deeper stacks than this are seeded with their innermost frames only. */
#define JP_SEED_MAX_FRAMES 65536

jp_thread *jp_vm_seed(jvmtiEnv *jvmti, jp_thread *t, uintptr_t (*key_of)(jvmtiEnv *, jmethodID), uintptr_t entered)
{
	if (t == NULL && (t = jp_vm_thread(jvmti, NULL)) == NULL)
		return NULL;
	jint count = 0;
	jvmtiFrameInfo *frames = NULL;
	uintptr_t *keys = NULL;
	uint32_t n = 0;
	if ((*jvmti)->GetFrameCount(jvmti, NULL, &count) == JVMTI_ERROR_NONE && count > 0) {
		if (count > JP_SEED_MAX_FRAMES)
			count = JP_SEED_MAX_FRAMES;
		frames = malloc(sizeof(*frames) * (size_t)count);
		keys = malloc(sizeof(*keys) * (size_t)count);
		jint got = 0;
		if (frames != NULL && keys != NULL &&
		    (*jvmti)->GetStackTrace(jvmti, NULL, 0, count, frames, &got) == JVMTI_ERROR_NONE) {
			/* frames[0] is the innermost: outermost first for the engine. */
			for (jint i = got - 1; i >= 0; i--) {
				uintptr_t k = key_of(jvmti, frames[i].method);
				if (k != 0)
					keys[n++] = k;
			}
			if (entered != 0 && n > 0 && keys[n - 1] == entered)
				n--;
		}
	}
	/* Seeded even with no frames: that starts the thread's epoch. */
	jp_thread_seed(t, keys, n);
	free(frames);
	free(keys);
	return t;
}
