/*
 * loggen.c: log-gen records. The event path encodes each event compactly
 * into its thread's buffer (a handful of bytes, where a text line is
 * seventy), so that the Go writer only copies buffers to the file and a
 * Java thread never waits on formatting. Record format (all integers
 * unsigned LEB128 varints):
 *
 *   flags   one byte: transition (bits 0-1), type (bits 2-4), a key
 *           follows (bit 5), the key is unclean (bit 6), the method was
 *           not recorded for lack of memory (bit 7: no handle follows)
 *   handle  registry handle of the method entered or exited
 *   key     calibration key, when bit 5 is set (RAWGEN)
 *   values  one per metric: the amount since the previous event
 *
 * reports/loggenbin.go reads them.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "engine.h"

#define JP_GENREC_MAX (1 + 5 + 3 + 10 * JP_PTT_MAX_METRICS)

/* jp_gen_handover puts a buffer on the writer's list. If the writer is far
 * behind, the thread waits for it rather than drop events. */
void jp_gen_handover(jp_genbuf *b)
{
	jp_list_push(&jp.gen_full, b);
	uint32_t pending = __atomic_add_fetch(&jp.gen_pending, 1, __ATOMIC_RELAXED);
	if (pending > 4096 && !jp.dead) { /* 256 MiB waiting to be written */
		__atomic_fetch_add(&jp.gen_waits, 1, __ATOMIC_RELAXED);
		while (__atomic_load_n(&jp.gen_pending, __ATOMIC_RELAXED) > 2048 && !jp.dead)
			usleep(1000);
	}
}

static jp_genbuf *jp_gen_newbuf(jp_thread *t)
{
	jp_genbuf *b = malloc(sizeof(jp_genbuf) + JP_GENBUF_BYTES);
	if (b == NULL)
		return NULL;
	b->next = NULL;
	b->thread = t->id;
	b->used = 0;
	b->nrec = 0;
	return b;
}

static inline unsigned char *jp_uvarint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

/* jp_gen_record appends one event to the thread's log-gen buffer. */
void jp_gen_record(jp_thread *t, uint32_t node, int tr, uint32_t key, const uint64_t *v)
{
	jp_genbuf *b = t->gen;
	if (b == NULL || b->used + JP_GENREC_MAX > JP_GENBUF_BYTES) {
		if (b != NULL)
			jp_gen_handover(b);
		b = t->gen = jp_gen_newbuf(t);
		if (b == NULL) {
			t->alloc_failures++;
			return;
		}
	}
	unsigned char *p0 = (unsigned char *)b->data + b->used, *p = p0;
	jp_node *nd = jp_node_at(t, node);
	unsigned flags = (unsigned)tr | (unsigned)(nd->type & 7) << 2;
	if (jp.genraw)
		flags |= 0x20 | ((key & JP_KEY_UNCLEAN) ? 0x40 : 0);
	if (node == 0) /* only in the lost-frames case: no method to name */
		flags |= 0x80;
	*p++ = (unsigned char)flags;
	if (node != 0)
		p = jp_uvarint(p, nd->method);
	if (jp.genraw)
		p = jp_uvarint(p, key & ~(uint32_t)JP_KEY_UNCLEAN);
	for (int k = 0; k < jp.nmetrics; k++)
		p = jp_uvarint(p, v[k]);
	b->nrec++;
	__atomic_store_n(&b->used, b->used + (uint32_t)(p - p0), __ATOMIC_RELEASE);
}

jp_genbuf *jp_gen_take(void)
{
	return jp_list_take(&jp.gen_full);
}

void jp_gen_done(jp_genbuf *b)
{
	free(b);
	__atomic_fetch_sub(&jp.gen_pending, 1, __ATOMIC_RELAXED);
}

jp_genbuf *jp_gen_take_partial(jp_thread *t)
{
	/* Swapped out: the thread's own detach may be racing (see
	 * jp_thread_detach). */
	jp_genbuf *b = __atomic_exchange_n(&t->gen, NULL, __ATOMIC_ACQ_REL);
	if (b == NULL)
		return NULL;
	__atomic_add_fetch(&jp.gen_pending, 1, __ATOMIC_RELAXED); /* jp_gen_done balances it */
	return b;
}
