/*
 * jp.h: the agent's per-thread call-tree state, shared by the C hot path
 * (hotpath.c) and the Go side that reads it for reports (tree.go).
 *
 * Ownership: a jp_thread and its nodes are written only by the Java thread
 * it belongs to. Go reads them while that thread may still be running, so
 * storage never moves: nodes live in chunks that double in size, reached
 * through a fixed array of chunk pointers, and a node becomes visible to
 * readers only when nnodes is published with a release store after the
 * node (and its chunk pointer) is written.
 */
#ifndef JP_H
#define JP_H

#include <stdint.h>
#include <jvmti.h>
#include "ptt.h"

/* Method types, JProf's letters "iIjJnNCO" (lower case: static). */
enum jp_type {
	JP_T_INTERP_STATIC = 0, /* i */
	JP_T_INTERP = 1,        /* I */
	JP_T_JIT_STATIC = 2,    /* j */
	JP_T_JIT = 3,           /* J */
	JP_T_NATIVE_STATIC = 4, /* n */
	JP_T_NATIVE = 5,        /* N */
	JP_T_COMPILING = 6,     /* C */
	JP_T_OTHER = 7,         /* O: kind unknown, entry never seen */
	JP_NTYPES = 8,
};

/* Transitions. */
enum jp_transition {
	JP_TR_ENTRY = 0,
	JP_TR_EXIT = 1,
	JP_TR_EXCEPTION = 2, /* exit by exception (was_popped_by_exception) */
	JP_NTRANSITIONS = 3,
};

/* One Java method, resolved once and never freed. */
typedef struct jp_method {
	jmethodID mid;
	int type;   /* enum jp_type, from the modifiers */
	char *name; /* "java/lang/String.valueOf(I)Ljava/lang/String;" */
} jp_method;

/* One calling context. The metric arrays follow the fixed part; a node's
 * size (jp_node_stride) depends on how many metrics are collected. */
typedef struct jp_node {
	uint32_t parent; /* index of the caller's node; the root is its own parent */
	uint8_t type;    /* enum jp_type as seen in this context */
	uint8_t pad[3];
	jp_method *m;    /* NULL for the thread root */
	uint64_t calls;  /* entries into this context */
	uint64_t excs;   /* exits from it by exception */
	uint64_t ds;     /* dispatches while this was the running method */
	uint64_t in;     /* interrupts while this was the running method */
	uint64_t base[]; /* [nmetrics]: metric spent running this method */
} jp_node;

/* Shadow-stack frame. */
typedef struct jp_frame {
	jmethodID mid;
	uint32_t node;
} jp_frame;

/* Child lookup: (parent node, method id) -> node, open addressing. */
typedef struct jp_slot {
	jmethodID mid; /* NULL: empty; low bit set: the Other-type context */
	uint32_t parent;
	uint32_t node;
} jp_slot;

#define JP_CHUNK0_SHIFT 6  /* first chunk holds 64 nodes, then 128, ... */
#define JP_NCHUNKS 26      /* up to 2^32 nodes */

typedef struct jp_thread {
	struct jp_thread *next; /* list of all threads, newest first */
	int tid;
	char *name;
	volatile int ended;
	uint32_t nnodes;            /* published with release ordering */
	char *chunks[JP_NCHUNKS];   /* node storage, never moved */

	/* Owner-only state below. */
	jp_frame *stack; /* stack[0] is the thread root */
	uint32_t depth;  /* index of the top frame */
	uint32_t stack_cap;
	jp_slot *hash;
	uint32_t hash_mask;
	uint32_t hash_used;
	uint32_t epoch;  /* last jp_state.epoch seen; a change resets the stack */
	jp_ptt_thread ptt;
	jp_ptt_reading last; /* Late Read of the previous event */

	/* Counters for log-msg, written by the owner. */
	uint64_t events;
	uint64_t unmatched_exits; /* exits whose entry was never seen */
	uint64_t missed_exits;    /* frames popped without their own exit */
	uint64_t alloc_failures;
} jp_thread;

/* Process-wide agent state (one instance). */
typedef struct jp_state {
	jvmtiEnv *jvmti;
	uintptr_t go_handle;      /* cgo.Handle of the Go agent */
	int nmetrics;             /* copy of jp_ptt.nmetrics */
	uint32_t node_stride;     /* sizeof(jp_node) + 8*nmetrics */
	int start_at_init;        /* enable method events at VMInit */
	volatile uint32_t epoch;  /* bumped when collection (re)starts */
	jp_thread *threads;       /* list head, pushed with CAS */
	volatile int collecting;
	volatile int dead;        /* VMDeath seen */
	uint64_t method_overflow; /* methods not cached: table full */
} jp_state;

extern jp_state jp;

/* Setup and control, called from Go. */
int jp_setup(JavaVM *vm, uintptr_t go_handle, int start_at_init, char *err, int errlen);
int jp_set_method_events(int on);
int jp_force_gc(void);

/* Node access for readers (Go). */
static inline jp_node *jp_node_at(jp_thread *t, uint32_t i)
{
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j); /* j in [2^k, 2^(k+1)) */
	uint64_t off = j - (1ull << k);
	return (jp_node *)(t->chunks[k - JP_CHUNK0_SHIFT] + off * jp.node_stride);
}

static inline uint32_t jp_nnodes(jp_thread *t)
{
	return __atomic_load_n(&t->nnodes, __ATOMIC_ACQUIRE);
}

static inline jp_thread *jp_threads(void)
{
	return __atomic_load_n(&jp.threads, __ATOMIC_ACQUIRE);
}

/* The event core, independent of where the event came from (JVMTI now;
 * injected bytecode calls later). */
void jp_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid, int transition);

#endif /* JP_H */
