/*
 * sampling_stubs.c: names for the code a sample was in when its top
 * frame could not be placed and the walk was done from the caller
 * (jp_agct_retry): the JVM's generated code outside compiled methods,
 * such as arraycopy and other stubs, the i2c/c2i adapters and the
 * interpreter, as JVMTI's DynamicCodeGenerated event names it. The sample
 * then hangs under "<stub_NAME>" beneath its caller (the name with only
 * letters, digits, '_' and '-', as every pseudo-frame has), which says where the
 * time went (a copy, a call's adapter), where "<top_frame_not_walkable>"
 * said only that the frame could not be walked.
 *
 * The table only grows (the JVM frees little of this code, and a range
 * it reuses keeps its first name): entries are filled, then published by
 * the count with a release store, so that the signal handler reads them
 * without a lock. Past JP_STUBS entries, or JP_STUB_NAMES distinct names,
 * a stub is not named (the pseudo-frame stays <top_frame_not_walkable>).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "sampling_priv.h"

#define JP_STUBS 4096
#define JP_STUB_NAMES 1024

static struct jp_stub {
	uintptr_t lo, hi;
	uint32_t h;
} jp_stubs[JP_STUBS];
static uint32_t jp_nstubs;
static uint32_t jp_stub_names[JP_STUB_NAMES]; /* handles of the distinct names */
static uint32_t jp_nstub_names;
static pthread_mutex_t jp_stubs_lock = PTHREAD_MUTEX_INITIALIZER;

/* jp_stub_handle is the registry handle of the pseudo-frame for a stub's
 * name: one per distinct name, adapters' signature suffixes left out
 * ("I2C/C2I adapters(0xbb)" is one of hundreds). Under jp_stubs_lock. */
static uint32_t jp_stub_handle(const char *name)
{
	char buf[160] = "<stub_";
	size_t n = 6;
	int adapter = strncmp(name, "I2C/C2I adapters", 16) == 0;
	for (const char *c = name; *c != '\0' && n < sizeof buf - 2; c++) {
		if (adapter && *c == '(')
			break;
		int keep = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-';
		char out = keep ? *c : *c == '/' ? '-' : '_';
		if (out == '_' && buf[n - 1] == '_')
			continue; /* one '_' for a run of others */
		buf[n++] = out;
	}
	while (n > 6 && buf[n - 1] == '_')
		n--;
	buf[n++] = '>';
	buf[n] = '\0';
	for (uint32_t i = 0; i < jp_nstub_names; i++) {
		const char *known = jp_method_at(jp_stub_names[i])->name;
		if (known != NULL && strcmp(known, buf) == 0)
			return jp_stub_names[i];
	}
	if (jp_nstub_names == JP_STUB_NAMES)
		return UINT32_MAX;
	uint32_t h = jp_method_register(buf, JP_T_OTHER);
	if (h != UINT32_MAX)
		jp_stub_names[jp_nstub_names++] = h;
	return h;
}

void jp_stub_add(const char *name, const void *address, int length)
{
	uintptr_t lo = (uintptr_t)address, hi = lo + (uintptr_t)(length > 0 ? length : 0);
	if (name == NULL || lo == hi)
		return;
	pthread_mutex_lock(&jp_stubs_lock);
	uint32_t n = jp_nstubs;
	int known = 0;
	for (uint32_t i = 0; i < n && !known; i++)
		known = jp_stubs[i].lo == lo && jp_stubs[i].hi == hi;
	if (!known && n < JP_STUBS) {
		uint32_t h = jp_stub_handle(name);
		if (h != UINT32_MAX) {
			jp_stubs[n] = (struct jp_stub){ lo, hi, h };
			__atomic_store_n(&jp_nstubs, n + 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&jp_stubs_lock);
}

/* jp_stub_named is the pseudo-frame for code at pc: the narrowest stub
 * holding it (a blob of stubs is reported whole and stub by stub), else
 * <top_frame_not_walkable>. Async-signal-safe. */
uint32_t jp_stub_named(uintptr_t pc)
{
	uint32_t n = __atomic_load_n(&jp_nstubs, __ATOMIC_ACQUIRE), best = jps.top_h;
	uintptr_t width = UINTPTR_MAX;
	for (uint32_t i = 0; i < n; i++) {
		const struct jp_stub *s = &jp_stubs[i];
		if (pc >= s->lo && pc < s->hi && s->hi - s->lo < width) {
			width = s->hi - s->lo;
			best = s->h;
		}
	}
	return best;
}

uint32_t jp_stub_at(const void *uc)
{
#if defined(__x86_64__)
	return jp_stub_named((uintptr_t)((const ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP]);
#else
	(void)uc;
	return jps.top_h;
#endif
}
