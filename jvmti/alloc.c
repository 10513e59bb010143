/*
 * alloc.c: the allocation source (ALLOC=). HotSpot samples allocations
 * by size (JEP 331): about one every `interval` bytes a thread
 * allocates, with the sample points drawn at random, and calls
 * SampledObjectAlloc on the allocating thread. Each sample's stack (JVMTI
 * GetStackTrace, legal in the callback) goes into the thread's sampled
 * tree (engine pcct) with the allocated class as its leaf frame, weighed
 * so that the sums are unbiased estimates: an object of s bytes is
 * sampled with probability p = 1 - exp(-s/interval), so each sample
 * stands for s/p bytes and 1/p objects (base[0] and base[1]).
 *
 * Samples are rare (one per interval bytes of a thread), so the callback
 * may allocate and lock.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jvmtiagent.h"

static struct {
	uint64_t interval;
	uint32_t max_nodes, depth;
	uint32_t limit_h;
	volatile int on;
	pthread_mutex_t lock;
	struct jp_athread *list;
	/* The allocated classes' handles, by name (open addressing). */
	pthread_mutex_t names_mu;
	char **names;
	uint32_t *handles;
	uint32_t cap, n;
	jp_alloc_stats st;
} ja = { .lock = PTHREAD_MUTEX_INITIALIZER, .names_mu = PTHREAD_MUTEX_INITIALIZER };

const jp_source jp_alloc = { "alloc-sampling", jp_mid_resolve };

/* One allocating thread's state, made at its first sample. */
typedef struct jp_athread {
	struct jp_athread *next, *prev;
	jp_thread *t;
	jvmtiFrameInfo *frames; /* [depth] */
	uint64_t rng;           /* xorshift state, for the objects' rounding */
	uint32_t *path;         /* [depth + 1]: the class, then the frames, top first */
	jp_pcct pcct;
} jp_athread;

static __thread jp_athread *ja_self;

int jp_alloc_configure(uint64_t interval, uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if (interval == 0 || interval > (1u << 31) || max_nodes < 16 || depth < 1) {
		snprintf(err, errlen, "ALLOC: interval %llu, nodes %u, depth %u out of range",
			 (unsigned long long)interval, max_nodes, depth);
		return -1;
	}
	ja.interval = interval;
	ja.max_nodes = max_nodes;
	ja.depth = depth;
	jpvm.alloc = 1;
	return 0;
}

/* ja_class_name writes a class signature as Java names the class:
 * "Ljava/lang/String;" java.lang.String, "[[I" int[][]. */
static void ja_class_name(const char *sig, char *out, size_t len)
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

static uint64_t ja_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* ja_class_handle is the handle of the pseudo-frame that names an
 * allocated class, registered at its first sample. */
static uint32_t ja_class_handle(const char *name)
{
	pthread_mutex_lock(&ja.names_mu);
	if ((ja.n + 1) * 2 > ja.cap) {
		uint32_t cap = ja.cap ? ja.cap * 2 : 256;
		char **names = calloc(cap, sizeof(char *));
		uint32_t *handles = calloc(cap, sizeof(uint32_t));
		if (names == NULL || handles == NULL) {
			free(names);
			free(handles);
			pthread_mutex_unlock(&ja.names_mu);
			return ja.limit_h;
		}
		for (uint32_t i = 0; i < ja.cap; i++) {
			if (ja.names[i] == NULL)
				continue;
			uint32_t j = (uint32_t)ja_hash(ja.names[i]) & (cap - 1);
			while (names[j] != NULL)
				j = (j + 1) & (cap - 1);
			names[j] = ja.names[i];
			handles[j] = ja.handles[i];
		}
		free(ja.names);
		free(ja.handles);
		ja.names = names;
		ja.handles = handles;
		ja.cap = cap;
	}
	uint32_t i = (uint32_t)ja_hash(name) & (ja.cap - 1);
	while (ja.names[i] != NULL && strcmp(ja.names[i], name) != 0)
		i = (i + 1) & (ja.cap - 1);
	if (ja.names[i] == NULL) {
		char *copy = strdup(name);
		if (copy == NULL) {
			pthread_mutex_unlock(&ja.names_mu);
			return ja.limit_h;
		}
		ja.names[i] = copy;
		ja.handles[i] = jp_method_register(name, JP_T_OTHER);
		ja.n++;
	}
	uint32_t h = ja.handles[i];
	pthread_mutex_unlock(&ja.names_mu);
	return h;
}

static void ja_free(jp_athread *a)
{
	jp_pcct_free(&a->pcct);
	free(a->frames);
	free(a->path);
	free(a);
}

static jp_athread *ja_thread(jvmtiEnv *jvmti, jthread thread)
{
	jp_athread *a = ja_self;
	if (a != NULL)
		return a;
	jp_thread *t = jp_thread_self();
	if (t == NULL && (t = jp_vm_thread(jvmti, thread)) == NULL)
		return NULL;
	a = calloc(1, sizeof *a);
	if (a == NULL)
		return NULL;
	a->frames = calloc(ja.depth, sizeof(jvmtiFrameInfo));
	a->path = calloc((size_t)ja.depth + 2, sizeof(uint32_t));
	if (a->frames == NULL || a->path == NULL ||
	    jp_pcct_init(t, &a->pcct, ja.max_nodes, ja.depth + 2, ja.limit_h) != 0) {
		ja_free(a);
		return NULL;
	}
	a->t = t;
	a->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)a ^ jp_mono_ns();
	pthread_mutex_lock(&ja.lock);
	a->next = ja.list;
	if (ja.list != NULL)
		ja.list->prev = a;
	ja.list = a;
	pthread_mutex_unlock(&ja.lock);
	ja_self = a;
	__atomic_add_fetch(&ja.st.threads, 1, __ATOMIC_RELAXED);
	return a;
}

static void JNICALL cb_sampled_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jclass klass,
				     jlong size)
{
	(void)jni;
	(void)object;
	if (!ja.on || size <= 0)
		return;
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	jp_athread *a = ja_thread(jvmti, thread);
	if (a == NULL) {
		__atomic_add_fetch(&ja.st.lost, 1, __ATOMIC_RELAXED);
		return;
	}
	jint n = 0;
	if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, (jint)ja.depth, a->frames, &n) != JVMTI_ERROR_NONE)
		n = 0;
	char *sig = NULL;
	char name[512] = "<unknown class>";
	if ((*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) == JVMTI_ERROR_NONE && sig != NULL) {
		ja_class_name(sig, name, sizeof name);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	}
	a->path[0] = ja_class_handle(name);
	for (jint i = 0; i < n; i++)
		a->path[1 + i] = jp_mid_resolve((uintptr_t)a->frames[i].method);
	/* Sampled with p = 1 - exp(-s/I): s/p bytes, 1/p objects, the
	 * latter rounded at random (up with the fraction's probability) so
	 * that whole counts stay unbiased. */
	double s = (double)size, p = -expm1(-s / (double)ja.interval);
	if (p <= 0)
		p = 1;
	double objs = 1.0 / p, whole = floor(objs);
	a->rng ^= a->rng << 13;
	a->rng ^= a->rng >> 7;
	a->rng ^= a->rng << 17;
	if ((double)(a->rng >> 11) * 0x1.0p-53 < objs - whole)
		whole += 1;
	uint64_t w[2] = { (uint64_t)llround(s / p), (uint64_t)whole };
	jp_pcct_add_w(a->t, &a->pcct, a->path, (uint32_t)n + 1, w, 2);
	__atomic_add_fetch(&ja.st.samples, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ja.st.sampled_bytes, (uint64_t)size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ja.st.weight_bytes, w[0], __ATOMIC_RELAXED);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	__atomic_add_fetch(&ja.st.callback_ns,
			   (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec)), __ATOMIC_RELAXED);
}

static int ja_setup(jvmtiEnv *jvmti, jvmtiCapabilities *caps, jvmtiEventCallbacks *cb, int live, char *err,
		    int errlen)
{
	(void)jvmti;
	(void)live;
	(void)err;
	(void)errlen;
	caps->can_generate_sampled_object_alloc_events = 1;
	cb->SampledObjectAlloc = cb_sampled_alloc;
	ja.limit_h = jp_method_register("<sample-node-limit>", JP_T_OTHER);
	return 0;
}

int jp_alloc_set(int on)
{
	pthread_mutex_lock(&ja.lock);
	int rc = 0;
	if (on && jp.dead) {
		rc = -1;
	} else {
		jvmtiEnv *jvmti = jpvm.jvmti;
		if (on) {
			jp_collect(1);
			(*jvmti)->SetHeapSamplingInterval(jvmti, (jint)ja.interval);
		}
		ja.on = on;
		jvmtiError e = (*jvmti)->SetEventNotificationMode(jvmti, on ? JVMTI_ENABLE : JVMTI_DISABLE,
								  JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
		if (e != JVMTI_ERROR_NONE)
			rc = (int)e;
		if (!on || rc != 0) {
			ja.on = 0;
			jp_collect(0);
		}
	}
	pthread_mutex_unlock(&ja.lock);
	return rc;
}

static void ja_thread_end(void)
{
	jp_athread *a = ja_self;
	if (a == NULL)
		return;
	ja_self = NULL;
	pthread_mutex_lock(&ja.lock);
	if (a->prev != NULL)
		a->prev->next = a->next;
	else
		ja.list = a->next;
	if (a->next != NULL)
		a->next->prev = a->prev;
	pthread_mutex_unlock(&ja.lock);
	/* The tree stays in the thread's arena for the reports; only the
	 * sampler's buffers go. */
	ja_free(a);
}

static void ja_die(void)
{
	pthread_mutex_lock(&ja.lock);
	jp.dead = 1;
	ja.on = 0;
	(*jpvm.jvmti)->SetEventNotificationMode(jpvm.jvmti, JVMTI_DISABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
	jp_collect(0);
	pthread_mutex_unlock(&ja.lock);
}

void jp_alloc_stats_read(jp_alloc_stats *out)
{
	out->samples = __atomic_load_n(&ja.st.samples, __ATOMIC_RELAXED);
	out->sampled_bytes = __atomic_load_n(&ja.st.sampled_bytes, __ATOMIC_RELAXED);
	out->weight_bytes = __atomic_load_n(&ja.st.weight_bytes, __ATOMIC_RELAXED);
	out->threads = __atomic_load_n(&ja.st.threads, __ATOMIC_RELAXED);
	out->lost = __atomic_load_n(&ja.st.lost, __ATOMIC_RELAXED);
	out->callback_ns = __atomic_load_n(&ja.st.callback_ns, __ATOMIC_RELAXED);
}

/* Events off at stop: nothing is left in the program to take out. */
const jp_source_ops jp_alloc_ops = {
	.engine = &jp_alloc,
	.setup = ja_setup,
	.set = jp_alloc_set,
	.thread_start = jp_thread_start_record,
	.thread_end = ja_thread_end,
	.die = ja_die,
};
