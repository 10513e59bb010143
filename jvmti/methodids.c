/*
 * methodids.c: jmethodID -> registry handle, for the sources that name
 * methods by jmethodID (method events, JIT records). Lookups are
 * lock-free; an insert, once per method, takes a mutex. The table grows
 * by copying into one twice the size and publishing it; an old table is
 * kept (readers may still be probing it), which bounds the waste at the
 * size of the current one.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"
#include "store.h"

typedef struct jp_midslot {
	jmethodID mid; /* published with release after h */
	uint32_t h;
} jp_midslot;

typedef struct jp_midtab {
	struct jp_midtab *older;
	uint32_t mask;
	uint32_t used;
	jp_midslot slots[];
} jp_midtab;

static jp_midtab *jp_mids;
static pthread_mutex_t jp_mids_lock = PTHREAD_MUTEX_INITIALIZER;

static jp_midtab *jp_midtab_new(uint32_t cap)
{
	jp_midtab *t = calloc(1, sizeof(jp_midtab) + (size_t)cap * sizeof(jp_midslot));
	if (t != NULL)
		t->mask = cap - 1;
	return t;
}

int jp_mid_init(void)
{
	/* The sampler registers every prepared method (tens of thousands in
	 * a large program): sized for them, the table is not copied while
	 * classes load. The other sources register the methods that run. */
	jp_mids = jp_midtab_new(jpvm.sample ? 1u << 16 : 1u << 14);
	return jp_mids != NULL ? 0 : -1;
}

static uint32_t jp_midtab_find(const jp_midtab *t, jmethodID mid)
{
	uint32_t i = (uint32_t)jp_mix((uint64_t)(uintptr_t)mid) & t->mask;
	for (;;) {
		jmethodID m = __atomic_load_n(&t->slots[i].mid, __ATOMIC_ACQUIRE);
		if (m == mid)
			return t->slots[i].h;
		if (m == NULL)
			return UINT32_MAX;
		i = (i + 1) & t->mask;
	}
}

uint32_t jp_mid_find(jmethodID mid)
{
	return jp_midtab_find(__atomic_load_n(&jp_mids, __ATOMIC_ACQUIRE), mid);
}

static void jp_midtab_put(jp_midtab *t, jmethodID mid, uint32_t h)
{
	uint32_t i = (uint32_t)jp_mix((uint64_t)(uintptr_t)mid) & t->mask;
	while (t->slots[i].mid != NULL)
		i = (i + 1) & t->mask;
	t->slots[i].h = h;
	__atomic_store_n(&t->slots[i].mid, mid, __ATOMIC_RELEASE);
	t->used++;
}

/* jp_class_name turns a class signature "Ljava/lang/String;" into
 * "java/lang/String" (malloc'd); array and primitive signatures stay as
 * they are. */
char *jp_class_name(const char *sig)
{
	size_t len = strlen(sig);
	if (len >= 2 && sig[0] == 'L' && sig[len - 1] == ';')
		return strndup(sig + 1, len - 2);
	return strdup(sig);
}

/* jp_mid_type is a method's type, from its modifiers. */
static int jp_mid_type(jvmtiEnv *jvmti, jmethodID mid)
{
	jint mods = 0;
	(*jvmti)->GetMethodModifiers(jvmti, mid, &mods);
	int is_static = (mods & 0x0008) != 0; /* ACC_STATIC */
	int native = (mods & 0x0100) != 0;    /* ACC_NATIVE */
	return native ? (is_static ? JP_T_NATIVE_STATIC : JP_T_NATIVE) : (is_static ? JP_T_INTERP_STATIC : JP_T_INTERP);
}

/* jp_mid_fullname is "class.name(sig)" for a method of the class named
 * cname (NULL: unknown), malloc'd; NULL without memory. */
static char *jp_mid_fullname(jvmtiEnv *jvmti, jmethodID mid, const char *cname)
{
	char *mname = NULL, *msig = NULL;
	jvmtiError e = (*jvmti)->GetMethodName(jvmti, mid, &mname, &msig, NULL);
	if (e == JVMTI_ERROR_INVALID_METHODID)
		return strdup("<unloaded-method>"); /* its class is gone */
	if (e != JVMTI_ERROR_NONE)
		mname = msig = NULL;
	char *name = NULL;
	if (asprintf(&name, "%s.%s%s", cname ? cname : "?", mname ? mname : "?", msig ? msig : "") < 0)
		name = NULL;
	if (mname)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)mname);
	if (msig)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)msig);
	return name;
}

/* jp_klass_name is the name of a class (malloc'd), NULL if unknown. */
static char *jp_klass_name(jvmtiEnv *jvmti, jclass klass)
{
	char *csig = NULL, *cname = NULL;
	if ((*jvmti)->GetClassSignature(jvmti, klass, &csig, NULL) == JVMTI_ERROR_NONE) {
		cname = jp_class_name(csig);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
	}
	return cname;
}

/* jp_mid_name_class is the name of a method's declaring class (malloc'd),
 * NULL if unknown. The class reference is local: deleted here, since the
 * callers may name many methods in one native frame. */
static char *jp_mid_name_class(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID mid)
{
	jclass klass = NULL;
	char *cname = NULL;
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, mid, &klass) == JVMTI_ERROR_NONE) {
		cname = jp_klass_name(jvmti, klass);
		if (jni != NULL)
			(*jni)->DeleteLocalRef(jni, klass);
	}
	return cname;
}

/* jp_mid_name_now names the reserved method h of mid, asking the VM. */
static void jp_mid_name_now(jvmtiEnv *jvmti, JNIEnv *jni, jmethodID mid, uint32_t h)
{
	char *cname = jp_mid_name_class(jvmti, jni, mid);
	char *name = jp_mid_fullname(jvmti, mid, cname);
	jp_method_name(h, name != NULL ? name : "?"); /* a class unloaded meanwhile: <unloaded-method> */
	free(name);
	free(cname);
}

char *jp_mid_name_of(jmethodID mid)
{
	char *cname = jp_mid_name_class(jpvm.jvmti, NULL, mid);
	char *name = jp_mid_fullname(jpvm.jvmti, mid, cname);
	free(cname);
	return name;
}

/* jp_mid_register asks the VM for a method's name and type and registers
 * it with the engine. */
static uint32_t jp_mid_register(jmethodID mid)
{
	char *name = jp_mid_name_of(mid);
	uint32_t h = jp_method_register(name != NULL ? name : "?", jp_mid_type(jpvm.jvmti, mid));
	free(name);
	return h;
}

int jp_mid_register_class(jvmtiEnv *jvmti, jclass klass)
{
	jint n = 0;
	jmethodID *ms = NULL;
	/* This call is also what makes the methods' jmethodIDs exist, which
	 * AsyncGetCallTrace needs to name a frame. Names are left for later
	 * (jp_mid_name_used): a program loads far more methods than its
	 * samples ever show, and each name costs several VM calls. */
	if ((*jvmti)->GetClassMethods(jvmti, klass, &n, &ms) != JVMTI_ERROR_NONE)
		return 0;
	int added = 0;
	for (jint i = 0; i < n; i++) {
		/* A prepared class's methods are new, but for a class the
		 * scan at VM init meets too: jp_mid_insert keeps the first
		 * handle, and the spare one is never used. */
		uint32_t h = jp_method_reserve(jp_mid_type(jvmti, ms[i]));
		if (jp_mid_insert(ms[i], h) == h)
			added++;
	}
	(*jvmti)->Deallocate(jvmti, (unsigned char *)ms);
	return added;
}

int jp_mid_name_used(void)
{
	jvmtiEnv *jvmti = jpvm.jvmti;
	JNIEnv *jni = NULL;
	if ((*jpvm.vm)->GetEnv(jpvm.vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK)
		return -1;
	/* Tables are never freed: the current one holds every method
	 * inserted so far; one inserted meanwhile is not sampled yet. */
	const jp_midtab *t = __atomic_load_n(&jp_mids, __ATOMIC_ACQUIRE);
	int named = 0;
	for (uint32_t i = 0; i <= t->mask; i++) {
		jmethodID mid = __atomic_load_n(&t->slots[i].mid, __ATOMIC_ACQUIRE);
		if (mid == NULL)
			continue;
		uint32_t h = t->slots[i].h;
		const jp_method *m = jp_method_at(h);
		if (__atomic_load_n(&m->used, __ATOMIC_RELAXED) && __atomic_load_n(&m->name, __ATOMIC_ACQUIRE) == NULL) {
			jp_mid_name_now(jvmti, jni, mid, h);
			named++;
		}
	}
	return named;
}

uint32_t jp_mid_resolve(uintptr_t key)
{
	jmethodID mid = (jmethodID)key;
	uint32_t h = jp_mid_find(mid);
	if (h != UINT32_MAX) {
		/* Reserved at class prepare: named on first need. */
		if (__atomic_load_n(&jp_method_at(h)->name, __ATOMIC_ACQUIRE) == NULL)
			jp_mid_name_now(jpvm.jvmti, NULL, mid, h);
		return h;
	}
	/* Resolve outside the lock: JVMTI calls can take microseconds. Two
	 * threads racing on one method register it twice; the loser's handle
	 * is never used. */
	return jp_mid_insert(mid, jp_mid_register(mid));
}

uint32_t jp_mid_insert(jmethodID mid, uint32_t fresh)
{
	uint32_t h;
	pthread_mutex_lock(&jp_mids_lock);
	jp_midtab *t = jp_mids;
	h = jp_midtab_find(t, mid);
	if (h == UINT32_MAX) {
		h = fresh;
		if (JP_IS_OVERFLOW(h)) {
			/* not cached: a later call may find room (it never does
			 * with a fixed limit, but costs only the lookup) */
		} else {
			if ((uint64_t)(t->used + 1) * 2 > (uint64_t)t->mask + 1) {
				jp_midtab *n = jp_midtab_new((t->mask + 1) * 2);
				if (n != NULL) {
					for (uint32_t i = 0; i <= t->mask; i++)
						if (t->slots[i].mid != NULL)
							jp_midtab_put(n, t->slots[i].mid, t->slots[i].h);
					n->older = t;
					__atomic_store_n(&jp_mids, n, __ATOMIC_RELEASE);
					t = n;
				}
			}
			if ((uint64_t)(t->used + 1) * 4 <= ((uint64_t)t->mask + 1) * 3)
				jp_midtab_put(t, mid, h);
		}
	}
	pthread_mutex_unlock(&jp_mids_lock);
	return h;
}
