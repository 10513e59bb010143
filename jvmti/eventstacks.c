/*
 * eventstacks.c: the per-thread trees of the event-driven sampled sources
 * (eventstacks.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventstacks.h"

static struct {
	uint32_t max_nodes, depth;
	uint32_t limit_h;
	/* The leaves' handles, by name (open addressing). */
	pthread_mutex_t names_mu;
	char **names;
	uint32_t *handles;
	uint32_t cap, n;
} es = { .names_mu = PTHREAD_MUTEX_INITIALIZER };

/* The OS thread's scratch for a walk: the frames GetStackTrace fills and
 * the path made of them. Not state: each record's (jp_estack) is in the
 * record, which a virtual thread takes along from carrier to carrier. */
static __thread jvmtiFrameInfo *es_frames;
static __thread uint32_t *es_path;

static void es_free(void *p);

int jp_estacks_configure(uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if (max_nodes < 16 || depth < 1) {
		snprintf(err, errlen, "event stacks: nodes %u, depth %u out of range", max_nodes, depth);
		return -1;
	}
	es.max_nodes = max_nodes;
	es.depth = depth;
	return 0;
}

void jp_estacks_setup(void)
{
	es.limit_h = jp_method_register("<sample-node-limit>", JP_T_OTHER);
	jp.src_state_free = es_free;
}

/* es_class_name writes a class signature as Java names the class:
 * "Ljava/lang/String;" java.lang.String, "[[I" int[][]. */
static void es_class_name(const char *sig, char *out, size_t len)
{
	int dims = 0;
	while (sig[dims] == '[')
		dims++;
	const char *base = sig + dims;
	const char *prim = NULL;
	switch (*base) {
	case 'Z': prim = "boolean"; break;
	case 'B': prim = "byte"; break;
	case 'C': prim = "char"; break;
	case 'S': prim = "short"; break;
	case 'I': prim = "int"; break;
	case 'J': prim = "long"; break;
	case 'F': prim = "float"; break;
	case 'D': prim = "double"; break;
	}
	size_t o = 0;
	if (prim != NULL) {
		o = (size_t)snprintf(out, len, "%s", prim);
	} else {
		if (*base == 'L')
			base++;
		for (; *base && *base != ';' && o + 1 < len; base++)
			out[o++] = *base == '/' ? '.' : *base;
		out[o] = 0;
	}
	for (int i = 0; i < dims && o + 3 < len; i++) {
		out[o++] = '[';
		out[o++] = ']';
		out[o] = 0;
	}
}

static uint64_t es_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* es_leaf_handle is the handle of the pseudo-frame that names an
 * allocated class, registered at its first sample. */
static uint32_t es_leaf_handle(const char *name)
{
	pthread_mutex_lock(&es.names_mu);
	if ((es.n + 1) * 2 > es.cap) {
		uint32_t cap = es.cap ? es.cap * 2 : 256;
		char **names = calloc(cap, sizeof(char *));
		uint32_t *handles = calloc(cap, sizeof(uint32_t));
		if (names == NULL || handles == NULL) {
			free(names);
			free(handles);
			pthread_mutex_unlock(&es.names_mu);
			return es.limit_h;
		}
		for (uint32_t i = 0; i < es.cap; i++) {
			if (es.names[i] == NULL)
				continue;
			uint32_t j = (uint32_t)es_hash(es.names[i]) & (cap - 1);
			while (names[j] != NULL)
				j = (j + 1) & (cap - 1);
			names[j] = es.names[i];
			handles[j] = es.handles[i];
		}
		free(es.names);
		free(es.handles);
		es.names = names;
		es.handles = handles;
		es.cap = cap;
	}
	uint32_t i = (uint32_t)es_hash(name) & (es.cap - 1);
	while (es.names[i] != NULL && strcmp(es.names[i], name) != 0)
		i = (i + 1) & (es.cap - 1);
	if (es.names[i] == NULL) {
		char *copy = strdup(name);
		if (copy == NULL) {
			pthread_mutex_unlock(&es.names_mu);
			return es.limit_h;
		}
		es.names[i] = copy;
		es.handles[i] = jp_method_register(name, JP_T_OTHER);
		es.n++;
	}
	uint32_t h = es.handles[i];
	pthread_mutex_unlock(&es.names_mu);
	return h;
}

/* es_free frees a record's state when its thread ends (jp.src_state_free);
 * its tree stays in the record's arena for the reports. */
static void es_free(void *p)
{
	jp_estack *a = p;
	JNIEnv *jni = jpvm.vm != NULL ? jp_env() : NULL;
	for (int i = 0; i < JP_ESTACK_LEAVES && jni != NULL; i++)
		if (a->leaves[i].cls != NULL)
			(*jni)->DeleteWeakGlobalRef(jni, a->leaves[i].cls);
	if (a->park_blocker != NULL && jni != NULL)
		(*jni)->DeleteWeakGlobalRef(jni, a->park_blocker);
	jp_pcct_free(&a->pcct);
	free(a);
}

jp_estack *jp_estack_self(jvmtiEnv *jvmti, jthread thread)
{
	/* The record's: a virtual thread's while it is mounted. */
	jp_thread *t = jp_thread_self();
	if (t == NULL && (t = jp_vm_thread(jvmti, thread)) == NULL)
		return NULL;
	/* This OS thread's scratch, whoever's record it runs. */
	if (es_frames == NULL)
		es_frames = calloc(es.depth, sizeof(jvmtiFrameInfo));
	if (es_path == NULL)
		es_path = calloc((size_t)es.depth + 2, sizeof(uint32_t));
	if (es_frames == NULL || es_path == NULL)
		return NULL;
	if (t->src_state != NULL)
		return t->src_state;
	jp_estack *a = calloc(1, sizeof *a);
	if (a == NULL)
		return NULL;
	if (jp_pcct_init(t, &a->pcct, es.max_nodes, es.depth + 2, es.limit_h) != 0) {
		es_free(a);
		return NULL;
	}
	a->t = t;
	a->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)a ^ jp_mono_ns();
	t->src_state = a;
	return a;
}

/* es_leaf_named is jp_estack_leaf without the thread's cache. */
static uint32_t es_leaf_named(jvmtiEnv *jvmti, jclass klass, const char *prefix)
{
	char *sig = NULL;
	char name[600];
	size_t pl = (size_t)snprintf(name, sizeof name, "%s", prefix);
	if (klass == NULL) {
		snprintf(name + pl, sizeof name - pl, "<none>");
	} else if ((*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) == JVMTI_ERROR_NONE && sig != NULL) {
		es_class_name(sig, name + pl, sizeof name - pl);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	} else {
		snprintf(name + pl, sizeof name - pl, "<unknown class>");
	}
	return es_leaf_handle(name);
}

/* The class name costs a JVMTI call, a string and a locked lookup; a
 * thread allocating or waiting mostly sees a few classes again and again,
 * whose handles it keeps (weak references: no class is kept loaded). */
uint32_t jp_estack_leaf(jvmtiEnv *jvmti, JNIEnv *jni, jp_estack *e, jclass klass, const char *prefix)
{
	if (klass == NULL || jni == NULL)
		return es_leaf_named(jvmti, klass, prefix);
	for (int i = 0; i < JP_ESTACK_LEAVES; i++) {
		jp_estack_leafc *c = &e->leaves[i];
		if (c->cls != NULL && c->prefix == prefix && (*jni)->IsSameObject(jni, c->cls, klass))
			return c->handle;
	}
	uint32_t h = es_leaf_named(jvmti, klass, prefix);
	jp_estack_leafc *c = &e->leaves[e->next_leaf++ % JP_ESTACK_LEAVES];
	if (c->cls != NULL)
		(*jni)->DeleteWeakGlobalRef(jni, c->cls);
	c->cls = (*jni)->NewWeakGlobalRef(jni, klass);
	c->prefix = prefix;
	c->handle = h;
	return h;
}

void jp_estack_record(jvmtiEnv *jvmti, jp_estack *e, uint32_t leaf, int skip, const uint64_t *w, int nw)
{
	jint n = 0;
	/* jp_estack_self made the scratch. */
	if ((*jvmti)->GetStackTrace(jvmti, NULL, skip, (jint)es.depth, es_frames, &n) != JVMTI_ERROR_NONE)
		n = 0;
	es_path[0] = leaf;
	for (jint i = 0; i < n; i++)
		es_path[1 + i] = jp_mid_resolve((uintptr_t)es_frames[i].method);
	jp_pcct_add_w(e->t, &e->pcct, es_path, (uint32_t)n + 1, w, nw);
}

double jp_estack_random(jp_estack *e)
{
	e->rng ^= e->rng << 13;
	e->rng ^= e->rng >> 7;
	e->rng ^= e->rng << 17;
	return (double)(e->rng >> 11) * 0x1.0p-53;
}

void jp_estack_thread_end(void)
{
	free(es_frames);
	free(es_path);
	es_frames = NULL;
	es_path = NULL;
}

int jp_estack_switch(jp_estack_events *ev, int on)
{
	pthread_mutex_lock(&ev->lock);
	int rc = 0;
	if (on && jp.dead) {
		rc = -1;
	} else {
		if (on) {
			jp_collect(1);
			if (ev->before_on != NULL)
				ev->before_on();
		}
		ev->on = on;
		for (size_t i = 0; i < ev->n && rc == 0; i++) {
			jvmtiError e = (*jpvm.jvmti)->SetEventNotificationMode(jpvm.jvmti, on ? JVMTI_ENABLE : JVMTI_DISABLE,
									       ev->evs[i], NULL);
			if (e != JVMTI_ERROR_NONE)
				rc = (int)e;
		}
		if (!on || rc != 0) {
			ev->on = 0;
			jp_collect(0);
		}
	}
	pthread_mutex_unlock(&ev->lock);
	return rc;
}

void jp_estack_die(jp_estack_events *ev)
{
	pthread_mutex_lock(&ev->lock);
	jp.dead = 1;
	ev->on = 0;
	for (size_t i = 0; i < ev->n; i++)
		(*jpvm.jvmti)->SetEventNotificationMode(jpvm.jvmti, JVMTI_DISABLE, ev->evs[i], NULL);
	jp_collect(0);
	pthread_mutex_unlock(&ev->lock);
}
