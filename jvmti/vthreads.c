/*
 * vthreads.c: virtual threads (JDK 21+). A virtual thread runs on a
 * carrier OS thread, leaves it when it blocks (unmount) and goes on
 * later, on any carrier (mount): without help its frames would land on
 * the trees of its carriers, exits on one and entries on another.
 * HotSpot tells an agent about each switch through two extension events,
 * com.sun.hotspot.events.VirtualThreadMount and ...Unmount (and, with
 * can_support_virtual_threads, VirtualThreadStart/End): at each, the
 * carrier's current engine record is switched (jp_vthread_mount and
 * jp_vthread_unmount). A virtual thread's record is kept in its JVMTI
 * thread-local storage. Where the JVM has virtual threads but not these
 * events, they are counted, and the reports say their carriers' trees
 * are not exact. JDK 17 has no virtual threads: nothing happens there.
 *
 * Built against JDK 17's jvmti.h, which has neither the capability nor
 * the two callbacks: both are reached by their place (the capability is
 * the bit after can_generate_sampled_object_alloc_events; the callbacks
 * are events 87 and 88, just after SampledObjectAlloc).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"

#define JP_EVENT_VIRTUAL_THREAD_START 87
#define JP_EVENT_VIRTUAL_THREAD_END 88

typedef struct {
	jvmtiEventCallbacks base; /* up to SampledObjectAlloc (86) */
	void (JNICALL *virtual_thread_start)(jvmtiEnv *, JNIEnv *, jthread);
	void (JNICALL *virtual_thread_end)(jvmtiEnv *, JNIEnv *, jthread);
} jp_callbacks21;

int jp_vt_mode;             /* enum jp_vt_mode */
int jp_vt_track = 1;        /* VTHREADS: follow mounts (set from Go before setup) */
static uint64_t jp_vt_seen; /* virtual threads started */
static jfieldID jp_vt_tid;  /* java.lang.Thread.tid, if the VM has it */
static int jp_vt_tid_looked;

uint64_t jp_vt_started(void)
{
	return __atomic_load_n(&jp_vt_seen, __ATOMIC_RELAXED);
}

/* jp_vt_caps asks for can_support_virtual_threads on a JVMTI of version
 * 21 or later. Called in Agent_OnLoad, where capabilities are given. */
int jp_vt_caps(jvmtiEnv *jvmti)
{
	jint v = 0;
	if ((*jvmti)->GetVersionNumber(jvmti, &v) != JVMTI_ERROR_NONE ||
	    ((v & JVMTI_VERSION_MASK_MAJOR) >> JVMTI_VERSION_SHIFT_MAJOR) < 21)
		return 0;
	jvmtiCapabilities probe, caps;
	memset(&probe, 0, sizeof probe);
	memset(&caps, 0, sizeof caps);
	probe.can_generate_sampled_object_alloc_events = 1;
	const unsigned char *pb = (const unsigned char *)&probe;
	unsigned char *cb = (unsigned char *)&caps;
	int bit = -1;
	for (int i = 0; i < (int)sizeof probe * 8 && bit < 0; i++)
		if (pb[i / 8] & (1u << (i % 8)))
			bit = i + 1;
	if (bit < 0 || bit >= (int)sizeof caps * 8)
		return 0;
	cb[bit / 8] |= (unsigned char)(1u << (bit % 8));
	if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE)
		return 0;
	jp_vt_mode = JP_VT_DETECTED;
	return 1;
}

static jp_thread *jp_vt_record(jvmtiEnv *jvmti, jthread vthread)
{
	void *p = NULL;
	if ((*jvmti)->GetThreadLocalStorage(jvmti, vthread, &p) != JVMTI_ERROR_NONE)
		return NULL;
	return p;
}

/* jp_vt_make makes the record of a virtual thread first seen while
 * collecting, named "virtual-" and the thread's name, or its id. */
static jp_thread *jp_vt_make(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_ACQUIRE))
		return NULL;
	if (!__atomic_load_n(&jp_vt_tid_looked, __ATOMIC_ACQUIRE)) {
		/* The field, not Thread.threadId(): calling Java here would
		 * deliver method events on a thread half switched. */
		jclass k = (*jni)->GetObjectClass(jni, vthread);
		jfieldID f = k != NULL ? (*jni)->GetFieldID(jni, k, "tid", "J") : NULL;
		if ((*jni)->ExceptionCheck(jni))
			(*jni)->ExceptionClear(jni);
		/* Two carriers may both look: they find the same id. */
		__atomic_store_n(&jp_vt_tid, f, __ATOMIC_RELAXED);
		__atomic_store_n(&jp_vt_tid_looked, 1, __ATOMIC_RELEASE);
	}
	jfieldID tidf = __atomic_load_n(&jp_vt_tid, __ATOMIC_RELAXED);
	jlong id = tidf != NULL ? (*jni)->GetLongField(jni, vthread, tidf) : 0;
	char *vm = jp_vm_thread_name(jvmti, vthread);
	char *name = NULL;
	int n = vm != NULL && vm[0] ? asprintf(&name, "virtual-%s", vm) : asprintf(&name, "virtual-%lld", (long long)id);
	if (n < 0)
		name = NULL;
	free(vm);
	jp_thread *vt = jp_vthread_new(name != NULL ? name : "virtual", (int)id);
	free(name);
	if (vt != NULL && (*jvmti)->SetThreadLocalStorage(jvmti, vthread, vt) != JVMTI_ERROR_NONE) {
		jp_vthread_end(vt); /* listed, empty: retired like any ended thread */
		return NULL;
	}
	return vt;
}

/* jp_vt_mount switches the calling carrier to vt; a carrier without a
 * record of its own (collection began while a virtual thread was
 * mounted on it) gets one named after its OS thread. */
static void jp_vt_mount(jp_thread *vt)
{
	char cname[64] = "carrier";
	if (jp_thread_self() == NULL) {
		char os[16] = "";
		pthread_getname_np(pthread_self(), os, sizeof os);
		snprintf(cname, sizeof cname, "carrier:%s", os);
	}
	jp_vthread_mount(vt, cname);
}

/* IsVirtualThread (JNI, JDK 21) by its index in the function table, right
 * after GetModule, JDK 17's last: not as a struct extending the headers'
 * table, which in a JDK 21+'s jni.h holds it already (and more after it),
 * so that the library works whichever JDK's headers built it. */
#define JP_JNI_IS_VIRTUAL_THREAD 234
_Static_assert(offsetof(struct JNINativeInterface_, GetModule) == 233 * sizeof(void *),
	       "GetModule is not at index 233 of the JNI function table");
typedef jboolean(JNICALL *jp_is_virtual_fn)(JNIEnv *, jobject);

static jboolean jp_is_virtual(JNIEnv *jni, jobject thread)
{
	return ((const jp_is_virtual_fn *)(const void *)*jni)[JP_JNI_IS_VIRTUAL_THREAD](jni, thread);
}

/* jp_vt_is_virtual says whether thread is a virtual thread (0 on a JVM
 * without them). */
int jp_vt_is_virtual(JNIEnv *jni, jthread thread)
{
	return jp_vt_mode != JP_VT_NONE && jni != NULL && thread != NULL &&
	       (*jni)->GetVersion(jni) >= 0x00150000 /* JNI_VERSION_21 */ && jp_is_virtual(jni, thread);
}

/* jp_vt_first_event is for a thread's first method event, when it has no
 * record yet: if it is a virtual thread (collection began while it was
 * mounted, so no mount was seen), its record is made and mounted, and
 * returned; otherwise NULL (an OS thread: the caller attaches it). */
jp_thread *jp_vt_first_event(jvmtiEnv *jvmti, jthread thread)
{
	JNIEnv *jni = NULL;
	/* Thread NULL: the calling one (a BCI probe has no jthread); a local
	 * reference, freed with the native call's or callback's frame. */
	if (jp_vt_mode == JP_VT_TRACKED && thread == NULL &&
	    (*jvmti)->GetCurrentThread(jvmti, &thread) != JVMTI_ERROR_NONE)
		thread = NULL;
	if (jp_vt_mode != JP_VT_TRACKED || thread == NULL ||
	    (*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_8) != JNI_OK ||
	    (*jni)->GetVersion(jni) < 0x00150000 /* JNI_VERSION_21 */ ||
	    !jp_is_virtual(jni, thread))
		return NULL;
	jp_thread *vt = jp_vt_record(jvmti, thread);
	if (vt == NULL && (vt = jp_vt_make(jvmti, jni, thread)) == NULL)
		return NULL;
	jp_vt_mount(vt);
	return jp_thread_self() == vt ? vt : NULL;
}

static void JNICALL cb_vt_start(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
	__atomic_fetch_add(&jp_vt_seen, 1, __ATOMIC_RELAXED);
	if (jp_vt_mode != JP_VT_TRACKED)
		return;
	jp_thread *vt = jp_vt_make(jvmti, jni, vthread);
	if (vt != NULL)
		jp_vt_mount(vt);
}

static void JNICALL cb_vt_end(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
	(void)jni;
	jp_thread *vt = jp_vt_record(jvmti, vthread);
	if (vt == NULL)
		return;
	(*jvmti)->SetThreadLocalStorage(jvmti, vthread, NULL);
	jp_vthread_end(vt);
}

static void JNICALL cb_vt_mount(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
	jp_thread *vt = jp_vt_record(jvmti, vthread);
	if (vt == NULL) {
		if ((vt = jp_vt_make(jvmti, jni, vthread)) == NULL)
			return;
		/* A virtual thread first seen at a mount started before
		 * collection did and has frames open (it parked in them):
		 * its record starts in an older epoch, so that its first
		 * event seeds them (jp_thread_stale) instead of hanging its
		 * calls, and the exits of the frames it parked in, off its
		 * root. */
		vt->epoch = __atomic_load_n(&jp.epoch, __ATOMIC_ACQUIRE) - 1;
	}
	jp_vt_mount(vt);
}

static void JNICALL cb_vt_unmount(jvmtiEnv *jvmti, JNIEnv *jni, jthread vthread)
{
	(void)jni;
	jp_thread *vt = jp_vt_record(jvmti, vthread);
	if (vt != NULL)
		jp_vthread_unmount(vt);
}

/* jp_vt_extension finds a HotSpot extension event by its id. */
static int jp_vt_extension(jvmtiEnv *jvmti, const char *id, jint *index)
{
	jint n = 0;
	jvmtiExtensionEventInfo *evs = NULL;
	if ((*jvmti)->GetExtensionEvents(jvmti, &n, &evs) != JVMTI_ERROR_NONE)
		return 0;
	int found = 0;
	for (jint i = 0; i < n; i++) {
		if (!found && evs[i].id != NULL && strcmp(evs[i].id, id) == 0) {
			*index = evs[i].extension_event_index;
			found = 1;
		}
		for (jint p = 0; p < evs[i].param_count; p++)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)evs[i].params[p].name);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)evs[i].params);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)evs[i].id);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)evs[i].short_description);
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)evs);
	return found;
}

/* jp_vt_setup sets the callbacks (cb plus the virtual-thread ones) and
 * turns the events on, after jp_vt_caps said the JVM has virtual
 * threads. Returns 0, or -1 with err filled. */
int jp_vt_setup(jvmtiEnv *jvmti, const jvmtiEventCallbacks *cb, char *err, int errlen)
{
	if (jp_vt_mode != JP_VT_DETECTED)
		return 0;
	jp_callbacks21 c;
	memset(&c, 0, sizeof c);
	c.base = *cb;
	c.virtual_thread_start = cb_vt_start;
	c.virtual_thread_end = cb_vt_end;
	jvmtiError e = (*jvmti)->SetEventCallbacks(jvmti, &c.base, (jint)sizeof c);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "SetEventCallbacks (virtual threads) failed: JVMTI error %d", (int)e);
		return -1;
	}
	jint mount = 0, unmount = 0;
	/* NOVTHREADS leaves mounts alone: virtual threads are detected and
	 * said, as on a JVM without the mount events. So does sampling: a
	 * sample is taken on the OS thread, the carrier, and lands on its
	 * tree; a mount switch would charge exact time to records that no
	 * sample fills. */
	if (jpvm.sample)
		jp_vt_mode = JP_VT_SAMPLED;
	else if (jp_vt_track &&
	    jp_vt_extension(jvmti, "com.sun.hotspot.events.VirtualThreadMount", &mount) &&
	    jp_vt_extension(jvmti, "com.sun.hotspot.events.VirtualThreadUnmount", &unmount) &&
	    (*jvmti)->SetExtensionEventCallback(jvmti, mount, (jvmtiExtensionEvent)cb_vt_mount) == JVMTI_ERROR_NONE &&
	    (*jvmti)->SetExtensionEventCallback(jvmti, unmount, (jvmtiExtensionEvent)cb_vt_unmount) == JVMTI_ERROR_NONE)
		jp_vt_mode = JP_VT_TRACKED;
	e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)JP_EVENT_VIRTUAL_THREAD_START, NULL);
	/* HotSpot posts an extension event once it has a callback and is
	 * enabled like any other, by its index. */
	if (e == JVMTI_ERROR_NONE && jp_vt_mode == JP_VT_TRACKED)
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)JP_EVENT_VIRTUAL_THREAD_END, NULL);
	if (e == JVMTI_ERROR_NONE && jp_vt_mode == JP_VT_TRACKED)
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)mount, NULL);
	if (e == JVMTI_ERROR_NONE && jp_vt_mode == JP_VT_TRACKED)
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, (jvmtiEvent)unmount, NULL);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "enabling virtual thread events failed: JVMTI error %d", (int)e);
		return -1;
	}
	return 0;
}

