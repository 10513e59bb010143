/*
 * bci_names.c: the BCI methods' handles by name. The transformer
 * registers each method it instruments once (jp_bci_register_name), a
 * class read from BCICACHE too, and a CompiledMethodLoad, which names a
 * method by jmethodID, finds its handle (jp_bci_handle).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bci.h"

/* Name -> handle of the methods the transformer registered, so that a
 * CompiledMethodLoad (which names a method by jmethodID) finds its
 * handle (jp_bci_handle). Open addressing on handle+1; registrations and compilations are
 * rare, so one mutex. */
static pthread_mutex_t bci_names_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *bci_names;
static uint32_t bci_names_cap, bci_names_n;

static uint64_t bci_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint32_t *bci_names_slot(uint32_t *tab, uint32_t cap, const char *name)
{
	for (uint64_t i = bci_hash(name);; i++) {
		uint32_t *sl = &tab[i & (cap - 1)];
		if (*sl == 0 || strcmp(jp_method_at(*sl - 1)->name, name) == 0)
			return sl;
	}
}

static void bci_names_add_locked(const char *name, uint32_t h)
{
	if (JP_IS_OVERFLOW(h))
		return;
	if ((bci_names_n + 1) * 2 > bci_names_cap) {
		uint32_t cap = bci_names_cap ? bci_names_cap * 2 : 4096;
		uint32_t *tab = calloc(cap, sizeof *tab);
		if (tab != NULL) {
			for (uint32_t i = 0; i < bci_names_cap; i++)
				if (bci_names[i] != 0)
					*bci_names_slot(tab, cap, jp_method_at(bci_names[i] - 1)->name) = bci_names[i];
			free(bci_names);
			bci_names = tab;
			bci_names_cap = cap;
		}
	}
	if ((bci_names_n + 1) * 4 <= bci_names_cap * 3) {
		uint32_t *sl = bci_names_slot(bci_names, bci_names_cap, name);
		if (*sl == 0) {
			*sl = h + 1;
			bci_names_n++;
		}
	}
}

uint32_t jp_bci_handle(const char *name)
{
	pthread_mutex_lock(&bci_names_mu);
	uint32_t h = bci_names != NULL ? *bci_names_slot(bci_names, bci_names_cap, name) : 0;
	pthread_mutex_unlock(&bci_names_mu);
	return h != 0 ? h - 1 : UINT32_MAX;
}

uint32_t jp_bci_register_name(const char *name, int type)
{
	/* A class read from BCICACHE registers its methods here, and the
	 * transformer may register them again (retransforming it), as may
	 * two threads loading classes at once: one registration a name,
	 * under the table's lock (the registry's own is taken inside it). */
	pthread_mutex_lock(&bci_names_mu);
	uint32_t h = bci_names != NULL ? *bci_names_slot(bci_names, bci_names_cap, name) : 0;
	if (h != 0) {
		pthread_mutex_unlock(&bci_names_mu);
		return h - 1;
	}
	h = jp_method_register(name, type);
	bci_names_add_locked(name, h);
	pthread_mutex_unlock(&bci_names_mu);
	return h;
}

uint64_t jp_bci_names(void)
{
	pthread_mutex_lock(&bci_names_mu);
	uint64_t n = bci_names_n;
	pthread_mutex_unlock(&bci_names_mu);
	return n;
}
