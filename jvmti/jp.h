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
	uint8_t pad;
	uint16_t seqkey; /* key of *seq, the last sequence counted here; JP_NOKEY if none */
	jp_method *m;    /* NULL for the thread root */
	struct jp_seqcount *seq; /* owner-only cache: most events of a node repeat its last key */
	uint64_t calls;  /* entries into this context */
	uint64_t excs;   /* exits from it by exception */
	uint64_t ds;     /* dispatches while this was the running method */
	uint64_t in;     /* interrupts while this was the running method */
	uint64_t base[]; /* [nmetrics]: metric spent running this method */
} jp_node;

/* Shadow-stack frame. The node's address (nodes never move) and type are
 * kept here so that the event path needs no arena lookup for the method
 * that was running. */
typedef struct jp_frame {
	jmethodID mid;
	struct jp_node *np;
	uint32_t node;
	uint32_t type;
} jp_frame;

/* Calibration keys: the sequence (running type of the previous event,
 * its transition, running type of this event, this transition, type that
 * runs next), 8*3*8*3*8 keys. Package calibration uses the same code. */
#define JP_NKEYS (JP_NTYPES * JP_NTRANSITIONS * JP_NTYPES * JP_NTRANSITIONS * JP_NTYPES)
#define JP_KEY_UNCLEAN 0x8000
#define JP_NOKEY 0xffff
static inline uint32_t jp_key(uint32_t a, uint32_t t1, uint32_t b, uint32_t t2, uint32_t c)
{
	return (((a * JP_NTRANSITIONS + t1) * JP_NTYPES + b) * JP_NTRANSITIONS + t2) * JP_NTYPES + c;
}

/* How many events of one key were attributed to one node: what lets the
 * reports calibrate with the final minima instead of those current when
 * each event happened. */
typedef struct jp_seqcount {
	uint32_t node;
	uint32_t key;
	uint64_t count;
} jp_seqcount;

/* log-gen: events are recorded into per-thread buffers by the hot path
 * and formatted by a Go goroutine. A full buffer is handed over through a
 * lock-free list; none is ever dropped (the hot path waits if the writer
 * falls far behind). */
#define JP_GENBUF_BYTES (64 * 1024)
typedef struct jp_genrec {
	jp_method *m;    /* the method entered or exited */
	uint8_t kind;    /* enum jp_transition */
	uint8_t type;    /* enum jp_type shown as the name's prefix */
	uint16_t key;    /* calibration key of the event, when calibrating;
			  * JP_KEY_UNCLEAN set: it lowered no minimum */
	uint32_t pad;
	uint64_t v[];    /* [nmetrics]: amounts since the previous event */
} jp_genrec;

typedef struct jp_genbuf {
	struct jp_genbuf *next;   /* in the handover list; first member (jp_list_push) */
	struct jp_thread *thread; /* owner */
	uint32_t used;            /* bytes of records, published with release */
	uint32_t seq;             /* per-thread buffer number, for ordering */
	char data[];
} jp_genbuf;

/* JIT code records (JITA2N, perf map): made by the compiler threads'
 * callbacks, handed to Go through a lock-free list, freed by Go. */
enum jp_jit_kind {
	JP_JIT_LOAD = 0,   /* CompiledMethodLoad */
	JP_JIT_UNLOAD = 1, /* CompiledMethodUnload */
	JP_JIT_DYNAMIC = 2 /* DynamicCodeGenerated (stubs, interpreter) */
};
typedef struct jp_jitrec {
	struct jp_jitrec *next;   /* first member (jp_list_push) */
	int kind;
	uint64_t ts;      /* CLOCK_MONOTONIC ns */
	uint64_t addr;
	uint64_t size;
	char *name;       /* class.method(sig) or the stub's name; malloc'd */
	int ninlined;
	char **inlined;   /* distinct methods inlined into this code */
} jp_jitrec;

/* Append-only storage whose elements never move, so that Go can read
 * element i < n (n loaded with acquire) while the owner appends. Chunk k
 * holds 64<<k elements. */
#define JP_CHUNK0_SHIFT 6
#define JP_NCHUNKS 26 /* up to 2^32 elements */
typedef struct jp_arena {
	uint32_t n;      /* published with release ordering */
	uint32_t stride; /* element size in bytes */
	char *chunks[JP_NCHUNKS];
} jp_arena;

static inline void *jp_arena_at(const jp_arena *a, uint32_t i)
{
	uint64_t j = (uint64_t)i + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j); /* j in [2^k, 2^(k+1)) */
	uint64_t off = j - (1ull << k);
	return a->chunks[k - JP_CHUNK0_SHIFT] + off * a->stride;
}

static inline uint32_t jp_arena_len(const jp_arena *a)
{
	return __atomic_load_n(&a->n, __ATOMIC_ACQUIRE);
}

/* Owner-only hash map (k1, k2) -> val, open addressing; k1 == 0 marks
 * an empty slot. Used for (method id, parent node) -> child node and for
 * (key+1, node) -> seqcount index. */
typedef struct jp_slot {
	uintptr_t k1;
	uint32_t k2;
	uint32_t val;
} jp_slot;

typedef struct jp_map {
	jp_slot *slots;
	uint32_t mask;
	uint32_t used;
} jp_map;

typedef struct jp_thread {
	struct jp_thread *next; /* list of all threads, newest first; first member (jp_list_push) */
	int tid;
	char *name;
	volatile int ended;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC, for log-jtnm */
	jp_arena nodes;   /* jp_node, stride jp.node_stride */
	jp_arena seqs;    /* jp_seqcount, when calibrating */

	/* Owner-only state below. */
	jp_frame *stack; /* stack[0] is the thread root */
	uint32_t depth;  /* index of the top frame */
	uint32_t stack_cap;
	jp_map children; /* (mid, parent) -> node; the Other context of a mid has its low bit set */
	jp_map seqmap;   /* (key+1, node) -> index in seqs */
	uint32_t prev_running; /* type that ran before the previous event */
	uint32_t prev_tr;      /* transition of the previous event */
	uint32_t epoch;  /* last jp_state.epoch seen; a change resets the stack */
	jp_ptt_thread ptt;
	jp_ptt_reading last; /* Late Read of the previous event */
	jp_genbuf *gen;      /* current log-gen buffer, NULL until needed */
	uint32_t gen_seq;

	/* Counters for log-msg, written by the owner. */
	uint64_t events;
	uint64_t unmatched_exits; /* exits whose entry was never seen */
	uint64_t missed_exits;    /* frames popped without their own exit */
	uint64_t alloc_failures;
} jp_thread;

/* Process-wide agent state (one instance). */
typedef struct jp_state {
	JavaVM *vm;
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
	/* Calibration: minimum delta per key and metric, [key*nmetrics+k],
	 * shared by all threads, lowered with CAS; UINT64_MAX = never seen. */
	uint64_t *minima;
	/* Environmental overhead per key and metric (same layout), for the
	 * online-calibrated values of log-gen. */
	uint64_t *env;
	int calibrate;
	/* log-gen */
	int loggen;
	int genraw;                      /* raw deltas, for post-processing */
	uint32_t genrec_size;            /* sizeof(jp_genrec) + 8*nmetrics */
	jp_genbuf *gen_full;             /* handover list, newest first */
	volatile uint32_t gen_pending;   /* buffers handed over, not yet freed */
	uint64_t gen_waits;              /* times a thread waited for the writer */
	/* JITA2N */
	int jit;
	jp_jitrec *jit_recs;             /* newest first */
} jp_state;

extern jp_state jp;

/* Setup and control, called from Go. */
int jp_setup(JavaVM *vm, uintptr_t go_handle, int start_at_init, int calibrate, int loggen, int jit, char *err, int errlen);
/* jp_jit_take takes the JIT records made so far, oldest first. */
jp_jitrec *jp_jit_take(void);
void jp_jit_free(jp_jitrec *r);
/* jp_gen_take takes the list of full log-gen buffers, oldest first. */
jp_genbuf *jp_gen_take(void);
/* jp_gen_done frees a buffer the writer has written. */
void jp_gen_done(jp_genbuf *b);
int jp_set_method_events(int on);
/* jp_attach_current attaches the calling (Go-locked) thread to the VM as a
 * daemon, so that it may call JVMTI functions that need a Java thread. */
int jp_attach_current(char *name);
int jp_force_gc(void);
/* jp_sysprop returns a VM system property (JVMTI-allocated; free with
 * jp_dealloc), or NULL. */
char *jp_sysprop(const char *name);
void jp_dealloc(char *p);

static inline jp_node *jp_node_at(const jp_thread *t, uint32_t i)
{
	return (jp_node *)jp_arena_at(&t->nodes, i);
}

static inline jp_seqcount *jp_seq_at(const jp_thread *t, uint32_t i)
{
	return (jp_seqcount *)jp_arena_at(&t->seqs, i);
}

static inline jp_thread *jp_threads(void)
{
	return __atomic_load_n(&jp.threads, __ATOMIC_ACQUIRE);
}

/* The event core, independent of where the event came from (JVMTI now;
 * injected bytecode calls later). */
void jp_event(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jmethodID mid, int transition);

#endif /* JP_H */
