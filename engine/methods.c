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
	{ 0, "<method-limit-reached>" }, { 1, "<method-limit-reached>" }, { 2, "<method-limit-reached>" },
	{ 3, "<method-limit-reached>" }, { 4, "<method-limit-reached>" }, { 5, "<method-limit-reached>" },
	{ 6, "<method-limit-reached>" }, { 7, "<method-limit-reached>" },
};

uint32_t jp_method_register(const char *name, int type)
{
	type &= JP_NTYPES - 1;
	char *copy = strdup(name);
	if (copy == NULL) {
		__atomic_fetch_add(&jp.methods_over, 1, __ATOMIC_RELAXED);
		return JP_METHOD_OVERFLOW(type);
	}
	pthread_mutex_lock(&jp_registry_lock);
	uint32_t h = jp_registry.n < jp.max_methods ? jp_arena_push(&jp_registry) : UINT32_MAX;
	if (h != UINT32_MAX) {
		jp_method *m = jp_arena_at(&jp_registry, h);
		m->type = (uint8_t)type;
		m->name = copy;
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
