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
 *
 * This header only includes the engine's parts, one header each:
 * types.h (method types, transitions), arena.h (storage layout),
 * registry.h (methods), tree.h (nodes, shadow-stack frames), calib.h
 * (calibration keys and counts), thread.h (thread records), loggen.h
 * (log-gen buffers), state.h (the process-wide state and the source's
 * hooks), vthread.h (virtual threads), event.h (the event path),
 * util.h (lock-free lists, clock) and pcct.h (sampled trees). Include
 * it, or only the parts a file needs.
 */
#ifndef JP_ENGINE_H
#define JP_ENGINE_H

#include "types.h"
#include "arena.h"
#include "registry.h"
#include "tree.h"
#include "calib.h"
#include "thread.h"
#include "loggen.h"
#include "state.h"
#include "vthread.h"
#include "event.h"
#include "util.h"
#include "pcct.h"

#endif /* JP_ENGINE_H */
