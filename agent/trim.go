package main

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static int jp_malloc_trim(void) { return malloc_trim(0); }
#else
static int jp_malloc_trim(void) { return 0; }
#endif
*/
import "C"

import (
	"os"
	"strconv"
	"strings"
)

// trimMalloc gives the C library's free memory back to the system after a
// detach. Between attaches the JVM's own native memory (its compilers'
// and class redefinition's arenas, freed again) leaves free pages in the
// C library's per-thread arenas, which it keeps: over 50 attach/profile/
// detach cycles that was most of the process's growth outside the Java
// heap, while the agent's own allocations stayed the same. It returns
// the resident set's change in bytes (negative: given back), 0 when it
// cannot be told.
func trimMalloc() int64 {
	before := residentBytes()
	C.jp_malloc_trim()
	after := residentBytes()
	if before == 0 || after == 0 {
		return 0
	}
	return after - before
}

// residentBytes is the process's resident set (/proc/self/statm), 0 if
// it cannot be read.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
