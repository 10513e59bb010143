/*
 * calib.h: calibration keys, the overhead rule, and the per-node counts
 * of keys that let the reports calibrate with the final minima. Apart
 * because package calibration mirrors this code (calibration.Overhead)
 * and the keys need nothing but types.h.
 */
#ifndef JP_CALIB_H
#define JP_CALIB_H

#include <stdint.h>
#include "types.h"

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

/* calibration.OwnMinimumExcess: a run's minimum this many times the
 * table's spans real work, not glue. */
#define JP_OWN_MIN_EXCESS 4

/* jp_gen_min is the minimum log-gen's online value of a key removes: the
 * run's current one, or the table's tmin where the run's is more than
 * JP_OWN_MIN_EXCESS times it (as the final reports do). */
static inline uint64_t jp_gen_min(uint64_t run, uint64_t tmin)
{
	if (tmin != UINT64_MAX && tmin < UINT64_MAX / JP_OWN_MIN_EXCESS && run != UINT64_MAX && run > JP_OWN_MIN_EXCESS * tmin)
		return tmin;
	return run;
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

#endif /* JP_CALIB_H */
