/*
 * thread.h: a thread's record (threads.c): its tree, shadow stack, PTT
 * state and counters; the packed form of an ended thread; the calls that
 * make, rename, end and retire records. Apart from the process-wide
 * state (state.h) and from virtual threads (vthread.h), built on it.
 */
#ifndef JP_THREAD_H
#define JP_THREAD_H

#include <stdint.h>
#include "ptt.h"
#include "arena.h"
#include "tree.h"
#include "calib.h"

/* A thread's current log-gen buffer; defined in loggen.h, which
 * includes this header. */
typedef struct jp_genbuf jp_genbuf;

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
	/* The event made a node (naming a method the first time asks the
	 * JVM), grew a hash map or the shadow stack (a rehash of a big tree's
	 * map takes milliseconds) or faulted in an arena's next pages
	 * (jp_arena_prefault): jp_event then reads the PTT again at its end,
	 * so that the agent's work is charged to no method (it went to the
	 * method that ran next, often the one just entered), and the next
	 * event, whose delta lacks the usual tail of the agent's work, is not
	 * calibrated (as log-gen marks it, so that post-processing agrees). */
	uint8_t grew;
	jp_frame *stack;  /* stack[0] is the thread root */
	uint32_t depth;   /* index of the top frame */
	uint32_t stack_cap;
	uint32_t lost;    /* frames entered that could not be recorded (no memory) */
	jp_map children;  /* (source key, parent) -> node; the Other context of a key has its low bit set */
	/* Once the map holds JP_EDGES_FROM edges: a direct-mapped cache of
	 * the edges found last (JP_EDGES slots, in L2), NULL before. Past a
	 * few megabytes of map, most lookups the frame and node caches miss
	 * are a cache miss in the map; the edges a program walks over and
	 * over are few. */
	jp_slot *edges;
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
	/* A source's own state of the thread (JLM: the monitors it holds),
	 * in the record for the same reason; freed by jp.src_state_free with
	 * the rest of the owner's state. */
	void *src_state;
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
	/* A virtual thread's worst fallback carrier so far (enum
	 * jp_ptt_backend; 0: none): it reads through whichever carrier it
	 * is mounted on, so one mount on a carrier whose reads fell back
	 * (a perf or clock carrier of a bpf process) marks its numbers for
	 * good, whatever carrier it ends on, in later collections too:
	 * a mark too many rather than one too few. */
	int vt_fallback;
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

/* The calling thread's record, NULL if it has none. initial-exec: one
 * pointer of static TLS, so a read is a single %fs-relative load. */
extern __thread jp_thread *jp_self __attribute__((tls_model("initial-exec")));
static inline jp_thread *jp_thread_self(void)
{
	return jp_self;
}
/* jp_arena_room says whether the next more elements of a have storage
 * already (chunks are allocated in order). */
static inline int jp_arena_room(const jp_arena *a, uint32_t more)
{
	uint64_t j = (uint64_t)a->n + more - 1 + (1u << JP_CHUNK0_SHIFT);
	int k = 63 - __builtin_clzll(j) - JP_CHUNK0_SHIFT;
	return k < JP_NCHUNKS && a->chunks[k] != NULL;
}

/* jp_event_grows says whether t's next event may allocate: grow one of
 * its hash maps (a rehash of up to millions of slots; jp_map_put grows
 * at 3/4 load, an event adds at most one entry to each), its shadow
 * stack, or its node or count arenas (a node; a group of counts, which
 * may first pad to the next chunk), or make its edge cache (when the
 * child map reaches JP_EDGES_FROM edges; after that allocation failed,
 * every event says so, as the next new edge tries again). A caller that
 * must be quick and take no lock, such as an FFM critical downcall,
 * which holds off safepoints while it runs, takes its slow path then. */
static inline int jp_event_grows(const jp_thread *t)
{
	return jp_map_due(&t->children) || jp_map_due(&t->seqmap) ||
	       t->depth + 2 >= t->stack_cap || !jp_arena_room(&t->nodes, 1) ||
	       !jp_arena_room(&t->seqs, 2 * JP_SEQ_GROUP + 1) ||
	       (t->edges == NULL && t->children.used + 1 >= JP_EDGES_FROM);
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

static inline jp_node *jp_node_at(const jp_thread *t, uint32_t i)
{
	return (jp_node *)jp_arena_at(&t->nodes, i);
}

static inline jp_seqcount *jp_seq_at(const jp_thread *t, uint32_t i)
{
	return (jp_seqcount *)jp_arena_at(&t->seqs, i);
}

#endif /* JP_THREAD_H */
