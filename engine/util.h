/*
 * util.h: helpers of threads.c shared by the engine and the sources:
 * lock-free lists and the monotonic clock. Apart because they belong to
 * no one concern (log-gen buffers, JIT records and thread records use
 * them).
 */
#ifndef JP_UTIL_H
#define JP_UTIL_H

#include <stdint.h>

/* Lock-free lists of records whose first member is their next pointer:
 * any thread pushes, one consumer takes the whole list at once. */
void jp_list_push(void *head, void *node);
void *jp_list_take(void *head);

uint64_t jp_mono_ns(void);

#endif /* JP_UTIL_H */
