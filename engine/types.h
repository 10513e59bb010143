/*
 * types.h: method types and event transitions, the vocabulary that the
 * registry, the calibration keys and the event path share. A header of
 * its own so that each of those can include it without the others.
 */
#ifndef JP_TYPES_H
#define JP_TYPES_H

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

#endif /* JP_TYPES_H */
