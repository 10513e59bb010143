/*
 * jlm.c: the exact lock monitor (option JLM, with BCI), after JProf's
 * Java Lock Monitor: per monitor class and site, how many times monitors
 * were taken (GETS), of which recursively (REC: the thread held it
 * already) and after blocking (SLOW: contended), how long they were held
 * (HOLD, from the first entry to the last exit, less Object.wait) and how
 * long threads blocked to get them (WAIT) or waited in Object.wait on
 * them (OBJWAIT).
 *
 * The transformer (MonitorProbes) reports each monitor right after it is
 * taken (Probe.locked, with the object, its identity hash and the site)
 * and right before it is released (Probe.unlocking). Each thread keeps
 * the monitors it holds as a stack in its record (src_state; javac's monitors are
 * nested, and HotSpot's compiled code requires it), so that the release
 * pops what the last take pushed and a virtual thread takes its stack
 * along. Blocking is JVMTI's: MonitorContendedEntered leaves the wait and
 * the monitor's hash with the thread, and the next take of that monitor
 * counts it; MonitorWaited adds Object.wait's time to the held monitor.
 *
 * A site's rows are per class of monitor object (the first JLM_CLASSES
 * classes seen there; the rest share one more row, named "(other)").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bci.h"

#define JLM_MAX_SITES 65536
#define JLM_CLASSES 4		     /* classes with rows of their own, per site */
#define JLM_ROWS (JLM_CLASSES + 1) /* and the row they all share: "(other)" */

typedef struct jlm_row {
	jweak cls; /* NULL: unused */
	char *cname;
	uint64_t gets, rec, slow, wait_ns, hold_ns, objwaits, objwait_ns;
} jlm_row;

typedef struct jlm_site {
	char *name;
	jlm_row row[JLM_ROWS];
} jlm_site;

typedef struct jlm_held {
	jint hash;
	uint32_t site, row;
	int rec;
	uint64_t t0, waited;
} jlm_held;

/* One thread's state (jp_thread.jlm). */
typedef struct jlm_thread {
	jlm_held *held;
	uint32_t n, cap;
	uint32_t dropped;  /* takes not pushed (no memory): the next releases pop nothing */
	int pending;       /* a contended entry whose monitor is not yet reported */
	jint pend_hash;
	uint64_t pend_wait;
	uint64_t enter_t0; /* MonitorContendedEnter */
	uint64_t wait_t0;  /* MonitorWait */
} jlm_thread;

static struct {
	int on;
	int ready;          /* Probe's natives registered */
	jlm_site **sites;
	uint32_t nsites;
	pthread_mutex_t mu; /* sites and rows claimed */
	jclass system;      /* global ref */
	jmethodID m_ihc;
	uint64_t overflow;  /* takes at sites past JLM_MAX_SITES, or without memory */
} jlm = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void jlm_thread_free(void *p)
{
	jlm_thread *jt = p;
	free(jt->held);
	free(jt);
}

int jp_jlm_configure(void)
{
	jlm.sites = calloc(JLM_MAX_SITES, sizeof(jlm_site *));
	if (jlm.sites == NULL)
		return -1;
	jlm.on = 1;
	jp.src_state_free = jlm_thread_free;
	return 0;
}

int jp_jlm_enabled(void)
{
	return jlm.on;
}

static jint JNICALL jlm_site_register(JNIEnv *env, jclass c, jstring name)
{
	(void)c;
	const char *s = (*env)->GetStringUTFChars(env, name, NULL);
	if (s == NULL)
		return -1;
	jint id = -1;
	pthread_mutex_lock(&jlm.mu);
	if (jlm.nsites < JLM_MAX_SITES) {
		jlm_site *st = calloc(1, sizeof *st);
		if (st != NULL && (st->name = strdup(s)) != NULL) {
			id = (jint)jlm.nsites;
			__atomic_store_n(&jlm.sites[id], st, __ATOMIC_RELEASE);
			__atomic_store_n(&jlm.nsites, jlm.nsites + 1, __ATOMIC_RELEASE);
		} else {
			free(st);
		}
	}
	pthread_mutex_unlock(&jlm.mu);
	(*env)->ReleaseStringUTFChars(env, name, s);
	return id;
}

static jlm_thread *jlm_self(void)
{
	jp_thread *t = jp_thread_self();
	if (t == NULL && (t = jp_vm_thread(jpvm.jvmti, NULL)) == NULL)
		return NULL;
	if (t->src_state == NULL)
		t->src_state = calloc(1, sizeof(jlm_thread));
	return t->src_state;
}

/* jlm_row_of is the row of site for obj's class, claimed at its first. */
static uint32_t jlm_row_of(JNIEnv *env, jlm_site *st, jobject obj)
{
	jclass k = (*env)->GetObjectClass(env, obj);
	uint32_t r = JLM_CLASSES;
	for (uint32_t i = 0; i < JLM_ROWS; i++) {
		jweak c = __atomic_load_n(&st->row[i].cls, __ATOMIC_ACQUIRE);
		if (c == NULL) {
			pthread_mutex_lock(&jlm.mu);
			if (st->row[i].cls == NULL) {
				char *sig = NULL;
				if ((*jpvm.jvmti)->GetClassSignature(jpvm.jvmti, k, &sig, NULL) == JVMTI_ERROR_NONE && sig) {
					st->row[i].cname = strdup(i == JLM_CLASSES ? "(other)" : sig);
					(*jpvm.jvmti)->Deallocate(jpvm.jvmti, (unsigned char *)sig);
				}
				/* Weak: counting a class's monitors keeps no class loaded. */
				__atomic_store_n(&st->row[i].cls, (*env)->NewWeakGlobalRef(env, k), __ATOMIC_RELEASE);
			}
			c = st->row[i].cls;
			pthread_mutex_unlock(&jlm.mu);
		}
		if (i == JLM_CLASSES || (c != NULL && (*env)->IsSameObject(env, c, k))) {
			r = i;
			break;
		}
	}
	(*env)->DeleteLocalRef(env, k);
	return r;
}

static void JNICALL jlm_locked(JNIEnv *env, jclass c, jobject obj, jint hash, jint site)
{
	(void)c;
	jlm_thread *jt = jlm_self();
	if (jt == NULL)
		return;
	if (jt->n == jt->cap) {
		uint32_t cap = jt->cap ? jt->cap * 2 : 8;
		jlm_held *h = realloc(jt->held, cap * sizeof *h);
		if (h == NULL) {
			__atomic_add_fetch(&jlm.overflow, 1, __ATOMIC_RELAXED);
			jt->dropped++;
			return;
		}
		jt->held = h;
		jt->cap = cap;
	}
	jlm_held *e = &jt->held[jt->n++];
	e->hash = hash;
	e->site = UINT32_MAX;
	e->t0 = jp_mono_ns();
	e->waited = 0;
	e->rec = 0;
	for (uint32_t i = 0; i + 1 < jt->n && !e->rec; i++)
		e->rec = jt->held[i].hash == hash;
	/* A contended entry counts for the take that follows it, if it is
	 * of the same monitor; one taken by code that is not instrumented
	 * (java.base, JNI MonitorEnter) leaves nothing behind. */
	int slow = jt->pending && jt->pend_hash == hash;
	jt->pending = 0;
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return;
	jlm_site *st = site >= 0 && (uint32_t)site < __atomic_load_n(&jlm.nsites, __ATOMIC_ACQUIRE)
			       ? __atomic_load_n(&jlm.sites[site], __ATOMIC_ACQUIRE)
			       : NULL;
	if (st == NULL) {
		__atomic_add_fetch(&jlm.overflow, 1, __ATOMIC_RELAXED);
		return;
	}
	e->site = (uint32_t)site;
	e->row = jlm_row_of(env, st, obj);
	jlm_row *r = &st->row[e->row];
	__atomic_add_fetch(&r->gets, 1, __ATOMIC_RELAXED);
	if (e->rec)
		__atomic_add_fetch(&r->rec, 1, __ATOMIC_RELAXED);
	if (slow) {
		__atomic_add_fetch(&r->slow, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->wait_ns, jt->pend_wait, __ATOMIC_RELAXED);
	}
}

static void JNICALL jlm_unlocking(JNIEnv *env, jclass c)
{
	(void)env;
	(void)c;
	jp_thread *t = jp_thread_self();
	jlm_thread *jt = t != NULL ? t->src_state : NULL;
	if (jt == NULL)
		return;
	if (jt->dropped > 0) {
		jt->dropped--;
		return;
	}
	if (jt->n == 0)
		return;
	jlm_held *e = &jt->held[--jt->n];
	if (e->site == UINT32_MAX || e->rec || !__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return;
	uint64_t d = jp_mono_ns() - e->t0;
	d = d > e->waited ? d - e->waited : 0;
	__atomic_add_fetch(&jlm.sites[e->site]->row[e->row].hold_ns, d, __ATOMIC_RELAXED);
}

/* jlm_hash is obj's identity hash (a slow path: JVMTI's monitor events). */
static jint jlm_hash(JNIEnv *jni, jobject obj)
{
	if (jlm.m_ihc == NULL || obj == NULL)
		return 0;
	jint h = (*jni)->CallStaticIntMethod(jni, jlm.system, jlm.m_ihc, obj);
	if ((*jni)->ExceptionCheck(jni))
		(*jni)->ExceptionClear(jni);
	return h;
}

/* jlm_self_if_collecting: the monitor events do nothing while not
 * collecting, and make no thread record. */
static jlm_thread *jlm_self_if_collecting(void)
{
	if (!__atomic_load_n(&jp.collecting, __ATOMIC_RELAXED))
		return NULL;
	return jlm_self();
}

static void JNICALL jlm_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	(void)object;
	jlm_thread *jt = jlm_self_if_collecting();
	if (jt != NULL)
		jt->enter_t0 = jp_mono_ns();
}

static void JNICALL jlm_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
	(void)jvmti;
	(void)thread;
	jlm_thread *jt = jlm_self_if_collecting();
	if (jt == NULL || jt->enter_t0 == 0)
		return;
	uint64_t d = jp_mono_ns() - jt->enter_t0;
	jt->enter_t0 = 0;
	jint h = jlm_hash(jni, object);
	/* Re-entering a monitor held already (after Object.wait) is no take. */
	for (uint32_t i = 0; i < jt->n; i++)
		if (jt->held[i].hash == h)
			return;
	jt->pend_wait = d;
	jt->pend_hash = h;
	jt->pending = 1;
}

static void JNICALL jlm_wait(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jlong timeout)
{
	(void)jvmti;
	(void)jni;
	(void)thread;
	(void)object;
	(void)timeout;
	jlm_thread *jt = jlm_self_if_collecting();
	if (jt != NULL)
		jt->wait_t0 = jp_mono_ns();
}

static void JNICALL jlm_waited(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jboolean timed_out)
{
	(void)jvmti;
	(void)thread;
	(void)timed_out;
	jlm_thread *jt = jlm_self_if_collecting();
	if (jt == NULL || jt->wait_t0 == 0)
		return;
	uint64_t d = jp_mono_ns() - jt->wait_t0;
	jt->wait_t0 = 0;
	jint h = jlm_hash(jni, object);
	/* The monitor's innermost entry counts the wait; its outermost (the
	 * one whose hold time is measured) has it taken off its hold. */
	jlm_held *inner = NULL, *outer = NULL;
	for (uint32_t i = 0; i < jt->n; i++) {
		if (jt->held[i].hash != h)
			continue;
		if (outer == NULL)
			outer = &jt->held[i];
		inner = &jt->held[i];
	}
	if (outer == NULL)
		return;
	outer->waited += d;
	if (inner->site != UINT32_MAX && __atomic_load_n(&jp.collecting, __ATOMIC_RELAXED)) {
		jlm_row *r = &jlm.sites[inner->site]->row[inner->row];
		__atomic_add_fetch(&r->objwaits, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&r->objwait_ns, d, __ATOMIC_RELAXED);
	}
}

/* jp_jlm_setup adds what JLM needs to BCI's setup. */
void jp_jlm_setup(jvmtiCapabilities *caps, jvmtiEventCallbacks *cb)
{
	if (!jlm.on)
		return;
	caps->can_generate_monitor_events = 1;
	cb->MonitorContendedEnter = jlm_contended_enter;
	cb->MonitorContendedEntered = jlm_contended_entered;
	cb->MonitorWait = jlm_wait;
	cb->MonitorWaited = jlm_waited;
}

/* jp_jlm_vm_init registers Probe's JLM natives and turns the monitor
 * events on; -1 if they cannot be (then monitors are not reported). */
int jp_jlm_vm_init(JNIEnv *jni, jclass probe)
{
	static const JNINativeMethod natives[] = {
		{ "locked", "(Ljava/lang/Object;II)V", (void *)jlm_locked },
		{ "unlocking", "()V", (void *)jlm_unlocking },
		{ "lockSite", "(Ljava/lang/String;)I", (void *)jlm_site_register },
	};
	if (!jlm.on)
		return 0;
	jclass s = (*jni)->FindClass(jni, "java/lang/System");
	jlm.m_ihc = s ? (*jni)->GetStaticMethodID(jni, s, "identityHashCode", "(Ljava/lang/Object;)I") : NULL;
	jlm.system = s ? (*jni)->NewGlobalRef(jni, s) : NULL;
	if (jlm.m_ihc == NULL || (*jni)->RegisterNatives(jni, probe, natives, 3) != 0) {
		(*jni)->ExceptionClear(jni);
		return -1;
	}
	jlm.ready = 1;
	return 0;
}

/* jp_jlm_events turns the monitor events on (while instrumenting) or off
 * (at a detach): off, a contended entry costs the program nothing. */
void jp_jlm_events(int on)
{
	static const jvmtiEvent evs[] = { JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
					  JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED };
	if (!jlm.on || !jlm.ready)
		return;
	for (size_t i = 0; i < 4; i++)
		if ((*jpvm.jvmti)->SetEventNotificationMode(jpvm.jvmti, on ? JVMTI_ENABLE : JVMTI_DISABLE, evs[i], NULL) !=
			    JVMTI_ERROR_NONE &&
		    on)
			jp_notef("JLM: monitor event %d could not be enabled: contended entries or Object.wait not counted",
				 (int)evs[i]);
}

/* jp_jlm_read calls f for each row with takes, in site order. */
void jp_jlm_read(void (*f)(void *arg, const char *site, const char *cls, const uint64_t *v), void *arg)
{
	uint32_t n = __atomic_load_n(&jlm.nsites, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++) {
		jlm_site *st = __atomic_load_n(&jlm.sites[i], __ATOMIC_ACQUIRE);
		for (uint32_t k = 0; st != NULL && k < JLM_ROWS; k++) {
			jlm_row *r = &st->row[k];
			uint64_t v[7] = {
				__atomic_load_n(&r->gets, __ATOMIC_RELAXED),	 __atomic_load_n(&r->rec, __ATOMIC_RELAXED),
				__atomic_load_n(&r->slow, __ATOMIC_RELAXED),	 __atomic_load_n(&r->wait_ns, __ATOMIC_RELAXED),
				__atomic_load_n(&r->hold_ns, __ATOMIC_RELAXED),	 __atomic_load_n(&r->objwaits, __ATOMIC_RELAXED),
				__atomic_load_n(&r->objwait_ns, __ATOMIC_RELAXED),
			};
			if (v[0] == 0 && v[5] == 0)
				continue;
			pthread_mutex_lock(&jlm.mu);
			f(arg, st->name, r->cname ? r->cname : "?", v);
			pthread_mutex_unlock(&jlm.mu);
		}
	}
}

/* jp_jlm_reset zeroes the counts (rtdriver reset, interval flush). */
void jp_jlm_reset(void)
{
	__atomic_store_n(&jlm.overflow, 0, __ATOMIC_RELAXED);
	uint32_t n = __atomic_load_n(&jlm.nsites, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++) {
		jlm_site *st = __atomic_load_n(&jlm.sites[i], __ATOMIC_ACQUIRE);
		for (uint32_t k = 0; st != NULL && k < JLM_ROWS; k++) {
			jlm_row *r = &st->row[k];
			uint64_t *v[7] = { &r->gets, &r->rec, &r->slow, &r->wait_ns, &r->hold_ns, &r->objwaits, &r->objwait_ns };
			for (int j = 0; j < 7; j++)
				__atomic_store_n(v[j], 0, __ATOMIC_RELAXED);
		}
	}
}

uint64_t jp_jlm_overflow(void)
{
	return __atomic_load_n(&jlm.overflow, __ATOMIC_RELAXED);
}

/* jp_jlm_read_go reads the rows into Go (ReadJLM's handle h). */
extern void jpGoJLMRow(uintptr_t h, char *site, char *cls, uint64_t *v);

static void jlm_row_go(void *arg, const char *site, const char *cls, const uint64_t *v)
{
	jpGoJLMRow(*(uintptr_t *)arg, (char *)site, (char *)cls, (uint64_t *)v);
}

void jp_jlm_read_go(uintptr_t h)
{
	jp_jlm_read(jlm_row_go, &h);
}
