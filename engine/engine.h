/*
 * engine.h: the profiling engine that every event source feeds.
 *
 * The engine keeps, per thread, a call tree of calling contexts, the
 * shadow stack that places each event in it, the PTT readings around each
 * event and the calibration state (per-key minima and per-node key
 * counts), plus the log-gen buffers. It does not know where events come
 * from: an event source (JVMTI method events, injected bytecode calls,
 * samples) turns its own method identifiers into engine events.
 *
 * Methods: the engine's method registry gives every method a handle (a
 * dense uint32 index) with its name and type. A source also has a cheap
 * key of its own for a method (a jmethodID, or the handle itself); the
 * per-thread child lookup and the shadow stack use that key, so that an
 * event needs no registry lookup, and the source's resolve function turns
 * a key into a handle only the first time a calling context is seen.
 *
 * Ownership: a jp_thread and its nodes are written only by the thread it
 * belongs to. Go reads them while that thread may still be running, so
 * storage never moves while the thread lives: nodes live in chunks that
 * double in size, and a node becomes visible to readers only when the
 * arena's count is published with a release store after it is written.
 */
#ifndef JP_ENGINE_H
#define JP_ENGINE_H

#include <stdint.h>
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
	JP_TR_EXCEPTION = 2, /* exit by exception */
	JP_NTRANSITIONS = 3,
};

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

/* ---------------------------------------------------------------------
 * Append-only storage: elements never move, so Go can read element
 * i < n (n loaded with acquire) while the owner appends. Chunk k holds
 * 8<<k elements: small threads stay small.
 */
#define JP_CHUNK0_SHIFT 3
#define JP_NCHUNKS 29 /* up to 2^32 elements */
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
 * an empty slot. */
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

/* ---------------------------------------------------------------------
 * Per-thread call tree.
 */

/* One calling context. The metric arrays follow the fixed part; a node's
 * size (jp.node_stride) depends on how many metrics are collected. */
typedef struct jp_node {
	uint32_t parent; /* index of the caller's node; the root is its own parent */
	uint8_t type;    /* enum jp_type as seen in this context */
	uint8_t pad;
	uint16_t seqkey; /* key of *seq, the last sequence counted here; JP_NOKEY if none */
	uint32_t method; /* registry handle; unused for the root */
	uint32_t seqs;   /* 1 + index of the node's own group of JP_SEQ_GROUP counts, 0 if none yet */
	struct jp_seqcount *seq; /* owner-only cache: most events of a node repeat its last key */
	uint64_t calls;  /* entries into this context */
	uint64_t excs;   /* exits from it by exception */
	uint64_t ds;     /* dispatches while this was the running method */
	uint64_t in;     /* interrupts while this was the running method */
	uint64_t base[]; /* [nmetrics]: metric spent running this method */
} jp_node;

/* Shadow-stack frame. The node's address is kept here so that the event
 * path needs no arena lookup for the method that was running (its type
 * is the node's). 32 bytes. */
typedef struct jp_frame {
	uintptr_t key;   /* the source's key of the method */
	struct jp_node *np;
	/* The child this activation entered last, by source key (0: none):
	 * a method calling the same one again, as loops do, finds its node
	 * here instead of in the thread's child map, a cache miss on large
	 * trees. */
	uintptr_t ckey;
	uint32_t node;
	uint32_t cnode;
} jp_frame;

/* jp_frame_set fills a frame for an activation of node (key's method),
 * with no child entered yet. */
static inline void jp_frame_set(jp_frame *f, uintptr_t key, uint32_t node, struct jp_node *np)
{
	f->key = key;
	f->np = np;
	f->ckey = 0;
	f->node = node;
}

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

/* jp_overhead is what calibration removes for an event of a key: the
 * minimum delta less what is kept of it (kept: the glue that runs without
 * profiling too, less the key's typical excess over its minimum; below
 * zero when the excess is larger), never below zero. The Go side has the
 * same rule (calibration.Overhead). */
static inline uint64_t jp_overhead(uint64_t min, int64_t kept)
{
	if (kept < 0)
		return min + (uint64_t)-kept;
	return min > (uint64_t)kept ? min - (uint64_t)kept : 0;
}

/* How many events of one key were attributed to one node: what lets the
 * reports calibrate with the final minima instead of those current when
 * each event happened. A node's keys after its first have adjacent counts,
 * JP_SEQ_GROUP of them allocated together (a count of 0 is a free place;
 * readers add 0 for it), so that a node switching between its few keys
 * touches one place in memory instead of probing a thread-wide map (a
 * cache miss per event on trees of millions of nodes); keys beyond those
 * go through the map (event.c). */
#define JP_SEQ_GROUP 4
typedef struct jp_seqcount {
	uint32_t node;
	uint32_t key;
	uint64_t count;
} jp_seqcount;

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

typedef struct jp_thread {
	struct jp_thread *next; /* list of all threads, newest first; first member (jp_list_push) */
	uint32_t id;     /* dense, in creation order: names the thread in log-gen */
	int tid;
	char *name;      /* may be replaced (atomically) once the VM can tell it */
	char *name_old;  /* the name it replaced, freed with the record */
	volatile int ended;
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC, for log-jtnm */
	jp_arena nodes;   /* jp_node, stride jp.node_stride */
	jp_arena seqs;    /* jp_seqcount, when calibrating */

	/* Owner-only state below, freed at thread end. */
	volatile int busy; /* inside an event: the final drain waits for 0 */
	jp_frame *stack;  /* stack[0] is the thread root */
	uint32_t depth;   /* index of the top frame */
	uint32_t stack_cap;
	uint32_t lost;    /* frames entered that could not be recorded (no memory) */
	jp_map children;  /* (source key, parent) -> node; the Other context of a key has its low bit set */
	jp_map seqmap;    /* (key+1, node) -> index in seqs */
	uint32_t prev_running; /* type that ran before the previous event */
	uint32_t prev_tr;      /* transition of the previous event */
	uint32_t epoch;  /* last jp.epoch seen; a change resets the stack */
	/* The source's own count of frames open inside a root (ROOTS, both
	 * sources), and the collection epoch it counts in (BCI resets it at
	 * a new epoch). In the record, not in OS-thread TLS: a virtual
	 * thread takes it along from carrier to carrier. */
	uint32_t src_frames;
	uint32_t src_epoch;
	jp_ptt_thread ptt;
	jp_ptt_reading last; /* Late Read of the previous event */
	jp_genbuf *gen;      /* current log-gen buffer, NULL until needed */

	/* Counters for log-msg, written by the owner. */
	uint64_t events;
	uint64_t unmatched_exits; /* exits whose entry was never seen */
	uint64_t missed_exits;    /* frames popped without their own exit */
	uint64_t alloc_failures;

	/* The calibration minima this thread's events lower: jp.minima, or
	 * jp.minima_fb when its PTT reads fell back to the clock while the
	 * process's backend is a fast one (chosen once, at attach). */
	uint64_t *minima;
	/* The backend its reads used (enum jp_ptt_backend), kept past the
	 * PTT's fini (after which ptt.backend says clock), for the reports. */
	int ptt_used;

	/* Virtual threads (vthread.c): a record of a thread the JVM runs on
	 * top of OS threads. It has no PTT registration of its own: while
	 * mounted it reads through a copy of its carrier's (ptt), and
	 * carrier points to the carrier's record. */
	int virt;
	struct jp_thread *carrier;
	/* At the last switch (mount or unmount): events and depth, which
	 * tell jp_event that an exit without a seen entry is the hidden
	 * other half of the frame left on top then. */
	uint64_t switch_events;
	uint32_t switch_depth;
} jp_thread;

/* Ended threads up to this many nodes are packed as they end. */
#define JP_PACK_AT_END_NODES 65536

/* An ended thread, packed: what the reports need of it, in exact
 * blocks, without the live record's buffers, maps and PTT state. Threads
 * come and go by the tens of thousands in servers. */
typedef struct jp_ended {
	struct jp_ended *next; /* Go's list of packed threads */
	uint32_t id;
	int tid;
	char *name;
	uint64_t start_ns, end_ns;
	uint64_t events, unmatched_exits, missed_exits, alloc_failures;
	uint32_t nnodes, nseqs;
	uint8_t fallback; /* calibrated with jp.minima_fb: the backend its reads used (enum jp_ptt_backend), else 0 */
	uint8_t virt;     /* a virtual thread's record */
	/* The tree as LEB128 varints, a few bytes a node (threads.c,
	 * jp_thread_pack, has the layout; engine/threads.go decodes it). */
	uint32_t packed_len;
	unsigned char *packed;
} jp_ended;

/* An event source's hooks. resolve turns the source's key of a method
 * into a registry handle; it runs on the event's thread the first time
 * a calling context is seen, and may take locks and call the VM. */
typedef struct jp_source {
	const char *name;
	uint32_t (*resolve)(uintptr_t key);
} jp_source;

/* Process-wide engine state (one instance). */
typedef struct jp_state {
	const jp_source *source;  /* the source feeding the engine */
	int nmetrics;             /* copy of jp_ptt.nmetrics */
	uint32_t node_stride;     /* sizeof(jp_node) + 8*nmetrics */
	volatile uint32_t epoch;  /* bumped when collection (re)starts */
	jp_thread *threads;       /* list head, pushed with CAS; unlinked only by Go */
	jp_ended *ended;          /* packed ended threads: Go's alone */
	uint32_t nthreads;        /* ids given out */
	volatile int collecting;  /* the source delivers events */
	volatile int dead;        /* VM death seen: no more collection */
	uint32_t max_methods;     /* registry limit */
	uint64_t methods_over;    /* registrations refused: limit or memory */
	/* Calibration: minimum delta per key and metric, [key*nmetrics+k],
	 * shared by all threads, lowered with CAS; UINT64_MAX = never seen. */
	uint64_t *minima;
	/* The same for threads whose reads fell back to the clock (a
	 * syscall per read, hundreds of ns more per event than bpf or perf):
	 * NULL unless the backend is bpf or perf. The environmental overhead
	 * (env) is the glue that runs without profiling, the same for both. */
	uint64_t *minima_fb;
	/* What calibration keeps of each key's minimum, per key and metric
	 * (same layout; calibration.Entry.Kept), for the online-calibrated
	 * values of log-gen. */
	int64_t *env;
	int calibrate;
	/* late_read: a second PTT read at the end of each event (JProf's
	 * Early/Late Read split), so that no delta holds the event's own
	 * work; 0: one read per event, the next delta holding this event's
	 * work after its read, which calibration removes with the rest of
	 * the glue. Set before the first event. */
	int late_read;
	/* log-gen */
	int loggen;
	int genraw;                      /* raw deltas, for post-processing */
	jp_genbuf *gen_full;             /* handover list, newest first */
	volatile uint32_t gen_pending;   /* buffers handed over, not yet freed */
	uint64_t gen_waits;              /* times a thread waited for the writer */
} jp_state;

extern jp_state jp;

/* jp_engine_init sets the engine up before any event: metrics come from
 * the PTT configuration (jp_ptt). Returns 0, or -1 with err filled. */
int jp_engine_init(const jp_source *src, int calibrate, int loggen, uint32_t max_methods, char *err, int errlen);

/* The calling thread's record, NULL if it has none. initial-exec: one
 * pointer of static TLS, so a read is a single %fs-relative load. */
extern __thread jp_thread *jp_self __attribute__((tls_model("initial-exec")));
static inline jp_thread *jp_thread_self(void)
{
	return jp_self;
}
/* jp_thread_attach makes the calling thread's record (name copied);
 * jp_thread_detach ends it: what only the owner used is freed, the tree
 * stays for the reports until Go retires it. */
jp_thread *jp_thread_attach(const char *name);

/* jp_thread_foreign makes and lists a record for an OS thread other than
 * the caller (tid), named name, that never runs jp_event: a JVM thread
 * the sampling source samples from its signal handler. No PTT
 * registration. jp_thread_foreign_end ends it once the thread is gone. */
jp_thread *jp_thread_foreign(const char *name, int tid);
void jp_thread_foreign_end(jp_thread *t);
void jp_thread_detach(void);
/* jp_thread_rename replaces a record's name (owner thread only). */
void jp_thread_rename(jp_thread *t, const char *name);
/* Go, with its thread-list lock held: jp_thread_pack moves an ended
 * thread into a jp_ended on jp.ended (NULL without memory: it stays as it
 * is); jp_thread_retire unlinks and frees an ended thread, and
 * jp_ended_free a packed one (prev is the predecessor in its list, NULL
 * at the head). */
jp_ended *jp_thread_pack(jp_thread *t, jp_thread *prev);
/* The thread list's lock: Go holds it while it reads or changes the
 * lists; an ending thread packs itself when it can take it at once. */
void jp_list_lock(void);
void jp_list_unlock(void);
void jp_thread_retire(jp_thread *t, jp_thread *prev);
void jp_ended_free(jp_ended *e, jp_ended *prev);

/* Virtual threads: threads the JVM runs on top of OS threads (carriers),
 * which can leave one carrier in the middle of a method (unmount) and go
 * on later on another (mount). Each gets a record and a tree of its own;
 * events on a carrier go to the virtual thread mounted on it, through
 * jp_self. The PTT state stays the OS thread's: a mounted virtual thread
 * reads through its carrier's registration. At a switch the thread that
 * stops is charged up to a reading taken there, the one that goes on
 * starts from a reading taken just after, and the time in between (the
 * JVM's switch itself) is charged to neither; the first event after a
 * switch is not used to calibrate.
 *
 * jp_vthread_new makes a virtual thread's record (tid: the JVM's id of
 * the thread), not mounted. jp_vthread_mount, on the carrier's OS thread,
 * makes vt the calling thread's current record (the carrier's record is
 * made first if it has none, named carrier_name); jp_vthread_unmount
 * gives the carrier its own record back; jp_vthread_end, on the carrier,
 * unmounts vt and ends its record. */
jp_thread *jp_vthread_new(const char *name, int tid);
void jp_vthread_mount(jp_thread *vt, const char *carrier_name);
void jp_vthread_unmount(jp_thread *vt);
void jp_vthread_end(jp_thread *vt);

/* jp_event records one event of the calling thread, t being its record
 * (jp_thread_self(), or jp_thread_attach() for its first). key is the
 * source's key of the method entered or exited; tr an enum jp_transition.
 * Sources call it first thing: it makes the Early Read. */
void jp_event(jp_thread *t, uintptr_t key, int tr);

/* jp_event_skip makes what the thread ran since its last event's Late
 * Read invisible to every metric, as if the next event followed at once:
 * for work a source does on the thread between events (the agent's own,
 * not the program's). */
static inline void jp_event_skip(jp_thread *t)
{
	if (jp.nmetrics)
		jp_ptt_read(&t->ptt, &t->last);
}

/* jp_thread_stale says whether t's next event is its first in a new
 * collection epoch: its shadow stack is then discarded (jp_event), or
 * seeded with the frames the source knows to be open (jp_thread_seed). */
static inline int jp_thread_stale(const jp_thread *t)
{
	return t->epoch != __atomic_load_n(&jp.epoch, __ATOMIC_RELAXED);
}

/* jp_thread_seed starts t's epoch with the frames already open on the
 * thread, keys[0] the outermost, as Other-type contexts (O:, one call
 * each): the events that follow hang below them instead of off the
 * thread root, and their exits match. The owner calls it before
 * jp_event, at the thread's first event in an epoch (jp_thread_stale, or
 * a record just attached). The event right after a seed is charged
 * nothing and teaches calibration nothing, like any first event of an
 * epoch. */
void jp_thread_seed(jp_thread *t, const uintptr_t *keys, uint32_t n);

/* jp_collect turns collection on or off in the engine: on starts a new
 * epoch, so stacks left from an earlier period are discarded at each
 * thread's next event. The source's own switch is the caller's. */
void jp_collect(int on);

/* log-gen, for the Go writer. */
jp_genbuf *jp_gen_take(void);
void jp_gen_done(jp_genbuf *b);
/* jp_gen_take_partial takes a thread's partly filled buffer once no
 * event can be running on it (collection off, t->busy clear). */
jp_genbuf *jp_gen_take_partial(jp_thread *t);
/* jp_gen_fence makes every thread's stores so far visible (membarrier);
 * 0 if the kernel refused. */
int jp_gen_fence(void);

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

/* Lock-free lists of records whose first member is their next pointer:
 * any thread pushes, one consumer takes the whole list at once. */
void jp_list_push(void *head, void *node);
void *jp_list_take(void *head);

uint64_t jp_mono_ns(void);

/* ---------------------------------------------------------------------
 * Sampled trees (sample.c): a partial calling context tree (Whaley's
 * PCCT) built from stack samples in a thread's own node arena, so the
 * reports read it as they read an exact tree. jp_pcct_add runs in a
 * signal handler: it neither allocates nor locks. Its storage (the nodes
 * in the thread's arena, a child map that never grows, the previous
 * sample's path) is made up front by jp_pcct_init, with a fixed node
 * capacity; a sample whose path needs a node past it is counted, and
 * charged to the limit node under the root.
 *
 * Node values: calls = samples with this context on the stack (Whaley's
 * edge weight); base[0] (when there is a metric) = the metric the
 * samples with this context on top stand for (his node time).
 */
typedef struct jp_pcct {
	jp_slot *slots;      /* (handle+1, parent) -> node; never grows */
	uint32_t mask;
	uint32_t max_nodes;  /* nodes the arena holds without allocating */
	uint32_t limit_node; /* where samples past the capacity go */
	uint32_t depth;      /* room in the path buffers */
	uint32_t prev_n;     /* length of the previous sample's path */
	uint32_t *prev_h;    /* its handles, root first */
	uint32_t *prev_node; /* its nodes */
	uint64_t samples;    /* samples recorded */
	uint64_t limited;    /* samples charged to the limit node */
} jp_pcct;

/* jp_pcct_init makes p's storage for thread t (owner thread, or before
 * any sample of t can run): the arena reserved for max_nodes nodes in
 * all, a child map that holds them, path buffers for depth frames, and
 * the limit node (method limit_method) under the root. 0, or -1 without
 * memory. */
int jp_pcct_init(jp_thread *t, jp_pcct *p, uint32_t max_nodes, uint32_t depth, uint32_t limit_method);
/* jp_pcct_free frees the storage jp_pcct_init made beside the arena. */
void jp_pcct_free(jp_pcct *p);
/* jp_pcct_add records one sample of thread t: leaf[0] is the handle of
 * the method on top of the stack, leaf[n-1] the outermost one (the order
 * stack walkers give). weight goes to the top context's base[0].
 * Async-signal-safe; runs on t's own thread (or with t stopped).
 * Returns 1 when the sample went to the limit node, else 0. */
int jp_pcct_add(jp_thread *t, jp_pcct *p, const uint32_t *leaf, uint32_t n, uint64_t weight);

#endif /* JP_ENGINE_H */
