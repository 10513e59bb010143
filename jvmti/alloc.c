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

#include "eventstacks.h"

static struct {
	uint64_t interval;
	jp_alloc_stats st;
} ja;

static jp_estack_events ja_events; /* defined below, with its events */

const jp_source jp_alloc = { "alloc-sampling", jp_mid_resolve, 1 };


int jp_alloc_configure(uint64_t interval, uint32_t max_nodes, uint32_t depth, char *err, int errlen)
{
	if (interval == 0 || interval > (1u << 31)) {
		snprintf(err, errlen, "ALLOC: interval %llu out of range", (unsigned long long)interval);
		return -1;
	}
	if (jp_estacks_configure(max_nodes, depth, err, errlen) != 0)
		return -1;
	ja.interval = interval;
	jpvm.alloc = 1;
	return 0;
}

static void JNICALL cb_sampled_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object, jclass klass,
				     jlong size)
{
	(void)object;
	if (!ja_events.on || size <= 0)
		return;
	/* The callback's own time: the monotonic clock (a vDSO read; the
	 * thread CPU clock is a system call, which would cost more than a
	 * tenth of the callback). */
	uint64_t t0 = jp_mono_ns();
	jp_estack *e = jp_estack_self(jvmti, thread);
	if (e == NULL) {
		__atomic_add_fetch(&ja.st.lost, 1, __ATOMIC_RELAXED);
		return;
	}
	if (e->events++ == 0)
		__atomic_add_fetch(&ja.st.threads, 1, __ATOMIC_RELAXED);
	/* Sampled with p = 1 - exp(-s/I): s/p bytes, 1/p objects, the
	 * latter rounded at random (up with the fraction's probability) so
	 * that whole counts stay unbiased. */
	double s = (double)size, p = -expm1(-s / (double)ja.interval);
	if (p <= 0)
		p = 1;
	double objs = 1.0 / p, whole = floor(objs);
	if (jp_estack_random(e) < objs - whole)
		whole += 1;
	uint64_t w[2] = { (uint64_t)llround(s / p), (uint64_t)whole };
	jp_estack_record(jvmti, e, jp_estack_leaf(jvmti, jni, e, klass, ""), 0, w, 2);
	__atomic_add_fetch(&ja.st.samples, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ja.st.sampled_bytes, (uint64_t)size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ja.st.weight_bytes, w[0], __ATOMIC_RELAXED);
	__atomic_add_fetch(&ja.st.callback_ns, jp_mono_ns() - t0, __ATOMIC_RELAXED);
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
	jp_estacks_setup();
	return 0;
}

static void ja_interval(void)
{
	(*jpvm.jvmti)->SetHeapSamplingInterval(jpvm.jvmti, (jint)ja.interval);
}

static const jvmtiEvent ja_evs[] = { JVMTI_EVENT_SAMPLED_OBJECT_ALLOC };
static jp_estack_events ja_events = { .lock = PTHREAD_MUTEX_INITIALIZER, .evs = ja_evs, .n = 1, .before_on = ja_interval };

int jp_alloc_set(int on)
{
	return jp_estack_switch(&ja_events, on);
}

static void ja_die(void)
{
	jp_estack_die(&ja_events);
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
	.thread_end = jp_estack_thread_end,
	.die = ja_die,
};
