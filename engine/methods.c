/*
 * methods.c: the method registry. Every method an event source reports
 * gets a dense handle, its name and its type. The registry grows in
 * chunks that never move, so readers need no lock; it stops at a limit
 * (jp.max_methods) that bounds its memory, and handles past it name one
 * overflow method per type, counted and stated in the reports.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "store.h"

static jp_arena jp_registry = { .stride = sizeof(jp_method) };
static pthread_mutex_t jp_registry_lock = PTHREAD_MUTEX_INITIALIZER;

static jp_method jp_overflow[JP_NTYPES] = {
	{ .type = 0, .name = "<method-limit-reached>" }, { .type = 1, .name = "<method-limit-reached>" }, { .type = 2, .name = "<method-limit-reached>" },
	{ .type = 3, .name = "<method-limit-reached>" }, { .type = 4, .name = "<method-limit-reached>" }, { .type = 5, .name = "<method-limit-reached>" },
	{ .type = 6, .name = "<method-limit-reached>" }, { .type = 7, .name = "<method-limit-reached>" },
};

uint32_t jp_method_register(const char *name, int type)
{
	type &= JP_NTYPES - 1;
	char *copy = name != NULL ? strdup(name) : NULL;
	if (name != NULL && copy == NULL) {
		__atomic_fetch_add(&jp.methods_over, 1, __ATOMIC_RELAXED);
		return JP_METHOD_OVERFLOW(type);
	}
	pthread_mutex_lock(&jp_registry_lock);
	uint32_t h = jp_registry.n < jp.max_methods ? jp_arena_push(&jp_registry) : UINT32_MAX;
	if (h != UINT32_MAX) {
		jp_method *m = jp_arena_at(&jp_registry, h);
		m->type = (uint8_t)type;
		m->used = 0;
		m->compiled = 0;
		__atomic_store_n(&m->name, copy, __ATOMIC_RELEASE);
		jp_arena_publish(&jp_registry, h);
	}
	pthread_mutex_unlock(&jp_registry_lock);
	if (h == UINT32_MAX) {
		free(copy);
		__atomic_fetch_add(&jp.methods_over, 1, __ATOMIC_RELAXED);
		return JP_METHOD_OVERFLOW(type);
	}
	return h;
}

uint32_t jp_method_reserve(int type)
{
	return jp_method_register(NULL, type);
}

void jp_method_name(uint32_t h, const char *name)
{
	if (JP_IS_OVERFLOW(h) || h >= jp_arena_len(&jp_registry))
		return;
	jp_method *m = jp_arena_at(&jp_registry, h);
	char *copy = strdup(name);
	char *none = NULL;
	if (copy != NULL &&
	    !__atomic_compare_exchange_n(&m->name, &none, copy, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		free(copy); /* named by another thread meanwhile */
}

void jp_method_compiled(uint32_t h)
{
	if (JP_IS_OVERFLOW(h) || h >= jp_arena_len(&jp_registry))
		return;
	jp_method *m = jp_arena_at(&jp_registry, h);
	__atomic_store_n(&m->compiled, 1, __ATOMIC_RELAXED);
}

const jp_method *jp_method_at(uint32_t h)
{
	if (JP_IS_OVERFLOW(h))
		return &jp_overflow[h - JP_METHOD_OVERFLOW(0)];
	return jp_arena_at(&jp_registry, h);
}

uint32_t jp_methods_len(void)
{
	return jp_arena_len(&jp_registry);
}

const jp_arena *jp_methods_arena(void)
{
	return &jp_registry;
}
