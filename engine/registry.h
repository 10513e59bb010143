/*
 * registry.h: the method registry (methods.c): every method's handle,
 * name and type. Apart because sources and reports use it without the
 * per-thread engine.
 */
#ifndef JP_REGISTRY_H
#define JP_REGISTRY_H

#include <stdint.h>
#include "types.h"
#include "arena.h"

/* ---------------------------------------------------------------------
 * Method registry.
 */

/* One method, registered once and never freed. */
typedef struct jp_method {
	uint8_t type;  /* enum jp_type, from the modifiers */
	uint8_t used;  /* set when a sampled context first names it */
	uint8_t compiled; /* a source that keeps the JIT saw it compiled (jp_method_compiled) */
	char *name;    /* "java/lang/String.valueOf(I)Ljava/lang/String;";
			* NULL while a reserved method waits for its name */
} jp_method;

/* Handles past the registry's limit all name the overflow method of
 * their type, so that the type letter stays true. */
#define JP_METHOD_OVERFLOW(type) (UINT32_MAX - JP_NTYPES + (type))
#define JP_IS_OVERFLOW(h) ((h) >= UINT32_MAX - JP_NTYPES)

/* jp_method_register adds a method (name is copied) and returns its
 * handle; past the limit, or without memory, the overflow handle of its
 * type (counted in jp.methods_over). Any thread; takes a lock. */
uint32_t jp_method_register(const char *name, int type);
/* jp_method_reserve adds a method whose name is not known yet (a source
 * that learns names lazily, off its hot path); jp_method_name gives it
 * one, once (copied; a later call is ignored). Readers see NULL until
 * then. */
uint32_t jp_method_reserve(int type);
void jp_method_name(uint32_t h, const char *name);
/* jp_method_compiled marks a method the JIT compiled (BCI, where the
 * events do not say it). */
void jp_method_compiled(uint32_t h);
/* jp_method_at returns a registered method (or an overflow method). */
const jp_method *jp_method_at(uint32_t h);
uint32_t jp_methods_len(void);
/* The registry's storage, for readers that address it themselves. */
const struct jp_arena *jp_methods_arena(void);

#endif /* JP_REGISTRY_H */
