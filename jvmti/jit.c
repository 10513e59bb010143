/*
 * jit.c: JIT code records (JITA2N, perf map). The compiler threads'
 * callbacks make them; Go takes them through a lock-free list and writes
 * them out as they come.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "jvmtiagent.h"
#include <jvmticmlr.h> /* needs jni.h's types first */

static jp_jitrec *jp_jit_recs; /* newest first */

jp_jitrec *jp_jit_take(void)
{
	return jp_list_take(&jp_jit_recs);
}

void jp_jit_free(jp_jitrec *r)
{
	for (int i = 0; i < r->ninlined; i++)
		free(r->inlined[i]);
	free(r->inlined);
	free(r->name);
	free(r);
}

/* jp_jit_name is a method's name, through the registry, so each method's
 * JVMTI lookups happen once. */
static char *jp_jit_name(jmethodID mid)
{
	return strdup(jp_method_at(jp_mid_resolve((uintptr_t)mid))->name);
}

/* jp_jit_inlined collects the distinct methods inlined into compiled code
 * from CompiledMethodLoad's compile_info (HotSpot's PC-stack records). */
static void jp_jit_inlined(jp_jitrec *r, jmethodID self, const void *compile_info)
{
	const jvmtiCompiledMethodLoadRecordHeader *h = compile_info;
	jmethodID seen[256];
	int nseen = 0;
	for (; h != NULL; h = h->next) {
		if (h->kind != JVMTI_CMLR_INLINE_INFO)
			continue;
		const jvmtiCompiledMethodLoadInlineRecord *ir = (const void *)h;
		for (jint p = 0; p < ir->numpcs; p++) {
			const PCStackInfo *pc = &ir->pcinfo[p];
			for (jint d = 0; d < pc->numstackframes; d++) {
				jmethodID m = pc->methods[d];
				if (m == self)
					continue;
				int dup = 0;
				for (int i = 0; i < nseen && !dup; i++)
					dup = seen[i] == m;
				if (dup || nseen == (int)(sizeof seen / sizeof seen[0]))
					continue;
				seen[nseen++] = m;
			}
		}
	}
	if (nseen == 0)
		return;
	r->inlined = calloc((size_t)nseen, sizeof(char *));
	if (r->inlined == NULL)
		return;
	for (int i = 0; i < nseen; i++) {
		char *n = jp_jit_name(seen[i]);
		if (n != NULL)
			r->inlined[r->ninlined++] = n;
	}
}

/* jp_jit_new makes a record of kind stamped now; name is taken over. */
static jp_jitrec *jp_jit_new(int kind, const void *addr, uint64_t size, char *name)
{
	jp_jitrec *r = calloc(1, sizeof(*r));
	if (r == NULL || name == NULL) {
		free(r);
		free(name);
		return NULL;
	}
	r->kind = kind;
	r->ts = jp_mono_ns();
	r->addr = (uint64_t)(uintptr_t)addr;
	r->size = size;
	r->name = name;
	return r;
}

void JNICALL jp_cb_compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
					const void *code_addr, jint map_length,
					const jvmtiAddrLocationMap *map, const void *compile_info)
{
	(void)jvmti;
	(void)map_length;
	(void)map;
	if (jpvm.bci) {
		/* BCI's J/j letters: the events cannot say whether a method
		 * runs compiled, the JIT can say that it was compiled. The
		 * method's BCI handle is found by name once, then cached by
		 * jmethodID (where jp_jit_name finds it too). */
		uint32_t h = jp_mid_find(method);
		if (h == UINT32_MAX) {
			char *n = jp_mid_name_of(method);
			h = n != NULL ? jp_bci_handle(n) : UINT32_MAX;
			free(n);
			if (h != UINT32_MAX)
				jp_mid_insert(method, h);
		}
		if (h != UINT32_MAX)
			jp_method_compiled(h);
	}
	if (!jpvm.jit)
		return;
	jp_jitrec *r = jp_jit_new(JP_JIT_LOAD, code_addr, (uint64_t)code_size, jp_jit_name(method));
	if (r == NULL)
		return;
	if (compile_info != NULL)
		jp_jit_inlined(r, method, compile_info);
	jp_list_push(&jp_jit_recs, r);
}

void JNICALL jp_cb_compiled_method_unload(jvmtiEnv *jvmti, jmethodID method, const void *code_addr)
{
	(void)jvmti;
	if (!jpvm.jit)
		return;
	/* The method may already be gone: use the registry only if it is there. */
	uint32_t h = jp_mid_find(method);
	const char *name = h != UINT32_MAX ? __atomic_load_n(&jp_method_at(h)->name, __ATOMIC_ACQUIRE) : NULL;
	jp_jitrec *r = jp_jit_new(JP_JIT_UNLOAD, code_addr, 0, strdup(name != NULL ? name : "?unloaded"));
	if (r != NULL)
		jp_list_push(&jp_jit_recs, r);
}

void JNICALL jp_cb_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address, jint length)
{
	(void)jvmti;
	if (jpvm.sample)
		jp_stub_add(name, address, length);
	if (!jpvm.jit)
		return;
	jp_jitrec *r = jp_jit_new(JP_JIT_DYNAMIC, address, (uint64_t)length, strdup(name != NULL ? name : "?"));
	if (r != NULL)
		jp_list_push(&jp_jit_recs, r);
}
