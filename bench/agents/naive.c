/*
 * naive.c: the naive per-method timing agent, the reference libjprof must
 * beat.
 *
 * Per event it does what a first attempt would: clock_gettime(
 * CLOCK_THREAD_CPUTIME_ID) (a real syscall), a per-thread shadow stack
 * (__thread, no lock) and a per-thread open-addressing table from
 * jmethodID to calls and self time. No calibration, no call tree: a flat
 * profile. At VM death it prints one summary line to stderr so that a
 * harness can check it saw the events.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <jvmti.h>

#include "refagent.h"

#define MAX_DEPTH 4096
#define TAB_BITS 14 /* methods per thread before the table is full */

struct method_stat {
	jmethodID mid;
	uint64_t calls;
	uint64_t self_ns;
};

struct frame {
	struct method_stat *m;
	uint64_t start;    /* thread CPU time at entry */
	uint64_t children; /* time spent in callees */
};

struct thread_state {
	struct thread_state *next; /* all threads, for the summary */
	int depth;
	uint64_t events, dropped;
	struct frame stack[MAX_DEPTH];
	struct method_stat tab[1 << TAB_BITS];
};

static __thread struct thread_state *self;
static struct thread_state *all_threads;
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct thread_state *get_self(void)
{
	struct thread_state *t = self;
	if (t != NULL)
		return t;
	t = calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	pthread_mutex_lock(&all_lock);
	t->next = all_threads;
	all_threads = t;
	pthread_mutex_unlock(&all_lock);
	self = t;
	return t;
}

static struct method_stat *lookup(struct thread_state *t, jmethodID mid)
{
	uint32_t mask = (1u << TAB_BITS) - 1;
	uint64_t h = (uint64_t)(uintptr_t)mid * 0x9e3779b97f4a7c15ull;
	for (uint32_t i = (uint32_t)(h >> 40) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		struct method_stat *m = &t->tab[i];
		if (m->mid == mid)
			return m;
		if (m->mid == NULL) {
			m->mid = mid;
			return m;
		}
	}
	return NULL;
}

static void JNICALL on_method_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method)
{
	(void)jvmti, (void)jni, (void)thread;
	uint64_t now = thread_ns();
	struct thread_state *t = get_self();
	if (t == NULL)
		return;
	t->events++;
	struct method_stat *m = lookup(t, method);
	if (m == NULL || t->depth == MAX_DEPTH) {
		t->dropped++;
		return;
	}
	m->calls++;
	struct frame *f = &t->stack[t->depth++];
	f->m = m;
	f->start = now;
	f->children = 0;
}

static void JNICALL on_method_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID method,
			    jboolean popped_by_exception, jvalue return_value)
{
	(void)jvmti, (void)jni, (void)thread, (void)popped_by_exception, (void)return_value;
	uint64_t now = thread_ns();
	struct thread_state *t = get_self();
	if (t == NULL)
		return;
	t->events++;
	/* An exit whose entry was not seen (events enabled mid-call): drop it. */
	if (t->depth == 0 || t->stack[t->depth - 1].m->mid != method) {
		t->dropped++;
		return;
	}
	struct frame *f = &t->stack[--t->depth];
	uint64_t total = now - f->start;
	f->m->self_ns += total > f->children ? total - f->children : 0;
	if (t->depth > 0)
		t->stack[t->depth - 1].children += total;
}

static void JNICALL on_vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
	(void)jni, (void)thread;
	ref_enable_method_events(jvmti, "naive agent");
}

static void JNICALL on_vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
	(void)jni;
	uint64_t events = 0, dropped = 0, methods = 0, ns = 0;
	(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_METHOD_ENTRY, NULL);
	(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE, JVMTI_EVENT_METHOD_EXIT, NULL);
	/* Other threads may still be finishing an event: the sums are a
	 * summary for a sanity check, not exact. */
	pthread_mutex_lock(&all_lock);
	for (struct thread_state *t = all_threads; t != NULL; t = t->next) {
		events += t->events;
		dropped += t->dropped;
		for (size_t i = 0; i < sizeof t->tab / sizeof t->tab[0]; i++)
			if (t->tab[i].mid != NULL)
				methods++, ns += t->tab[i].self_ns;
	}
	pthread_mutex_unlock(&all_lock);
	fprintf(stderr, "naive agent: events=%llu dropped=%llu methods=%llu self_ns=%llu\n",
		(unsigned long long)events, (unsigned long long)dropped, (unsigned long long)methods,
		(unsigned long long)ns);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	jvmtiEventCallbacks cb = { 0 };

	(void)options, (void)reserved;
	cb.MethodEntry = on_method_entry;
	cb.MethodExit = on_method_exit;
	cb.VMInit = on_vm_init;
	cb.VMDeath = on_vm_death;
	return ref_agent_load(vm, "naive agent", &cb);
}
