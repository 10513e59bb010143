/*
 * count.c: an independent JVMTI agent for tests. It enables MethodEntry
 * in Agent_OnLoad and counts entries per method (global table, atomic
 * increments); at VM death it writes "<count> <class>.<method><sig>"
 * lines to the file named by its option. Tests compare libjprof's call
 * counts with it.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <jvmti.h>

#define BITS 20
static struct { jmethodID mid; uint64_t n; } tab[1 << BITS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *out;

static uint32_t mix(uintptr_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & ((1u << BITS) - 1);
}

static void JNICALL entry(jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m)
{
	(void)j, (void)e, (void)t;
	uint32_t i = mix((uintptr_t)m);
	for (;;) {
		jmethodID cur = __atomic_load_n(&tab[i].mid, __ATOMIC_ACQUIRE);
		if (cur == m)
			break;
		if (cur == NULL) {
			pthread_mutex_lock(&lock);
			if (tab[i].mid == NULL)
				__atomic_store_n(&tab[i].mid, m, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&lock);
			continue;
		}
		i = (i + 1) & ((1u << BITS) - 1);
	}
	__atomic_fetch_add(&tab[i].n, 1, __ATOMIC_RELAXED);
}

static void JNICALL exit_cb(jvmtiEnv *j, JNIEnv *e, jthread t, jmethodID m, jboolean exc, jvalue v)
{
	(void)j, (void)e, (void)t, (void)m, (void)exc, (void)v;
}

static void JNICALL death(jvmtiEnv *j, JNIEnv *e)
{
	(void)e;
	(*j)->SetEventNotificationMode(j, JVMTI_DISABLE, JVMTI_EVENT_METHOD_ENTRY, NULL);
	FILE *f = fopen(out, "w");
	if (f == NULL)
		return;
	for (uint32_t i = 0; i < (1u << BITS); i++) {
		if (tab[i].mid == NULL)
			continue;
		char *name = NULL, *sig = NULL, *csig = NULL;
		jclass k = NULL;
		(*j)->GetMethodName(j, tab[i].mid, &name, &sig, NULL);
		(*j)->GetMethodDeclaringClass(j, tab[i].mid, &k);
		if (k != NULL)
			(*j)->GetClassSignature(j, k, &csig, NULL);
		size_t cl = csig ? strlen(csig) : 0;
		if (cl >= 2 && csig[0] == 'L')
			fprintf(f, "%llu %.*s.%s%s\n", (unsigned long long)tab[i].n, (int)cl - 2, csig + 1, name, sig);
		else
			fprintf(f, "%llu %s.%s%s\n", (unsigned long long)tab[i].n, csig ? csig : "?", name, sig);
	}
	fclose(f);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	jvmtiEnv *j;
	if ((*vm)->GetEnv(vm, (void **)&j, JVMTI_VERSION_1_2) != JNI_OK || options == NULL)
		return JNI_ERR;
	out = strdup(options);
	jvmtiCapabilities c;
	memset(&c, 0, sizeof c);
	c.can_generate_method_entry_events = 1;
	c.can_generate_method_exit_events = 1;
	(*j)->AddCapabilities(j, &c);
	jvmtiEventCallbacks cb;
	memset(&cb, 0, sizeof cb);
	cb.MethodEntry = entry;
	cb.VMDeath = death;
	cb.MethodExit = exit_cb;
	(*j)->SetEventCallbacks(j, &cb, sizeof cb);
	(*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, NULL);
	(*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, NULL);
	(*j)->SetEventNotificationMode(j, JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, NULL);
	return JNI_OK;
}
