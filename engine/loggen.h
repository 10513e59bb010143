/*
 * loggen.h: log-gen (loggen.c): the per-thread buffers the hot path
 * encodes each event into, and the Go writer's side of their handover.
 * Apart because only the event path and the writer use it.
 */
#ifndef JP_LOGGEN_H
#define JP_LOGGEN_H

#include <stdint.h>
#include "thread.h"

/* log-gen: the hot path encodes each event into the thread's buffer
 * (loggen.c has the record format); a full buffer is handed to the Go
 * writer through a lock-free list. None is ever dropped: the hot path
 * waits if the writer falls far behind. */
#define JP_GENBUF_BYTES (64 * 1024)
typedef struct jp_genbuf {
	struct jp_genbuf *next;   /* in the handover list; first member (jp_list_push) */
	uint32_t thread;          /* owner's jp_thread.id */
	uint32_t used;            /* bytes of records, published with release */
	uint32_t nrec;            /* records in it */
	uint32_t pad;
	char data[];
} jp_genbuf;

/* log-gen, for the Go writer. */
jp_genbuf *jp_gen_take(void);
void jp_gen_done(jp_genbuf *b);
/* jp_gen_take_partial takes a thread's partly filled buffer once no
 * event can be running on it (collection off, t->busy clear). */
jp_genbuf *jp_gen_take_partial(jp_thread *t);

#endif /* JP_LOGGEN_H */
