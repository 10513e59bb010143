package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// Threads end while Go's periodic pass packs and frees ended records. A
// test-only LD_PRELOAD shim makes the ending thread wait milliseconds
// before it takes the list's lock to pack its own record: a record that
// was published as ended before that lock was freed under it (SIGSEGV in
// jp_thread_pack). Under each event source, thousands of short threads
// end with the window widened, the JVM exits normally and every thread
// has its exact tree.
func TestThreadEndRace(t *testing.T) {
	shim := jvmtest.FaultShim(t)
	const n = 2000
	for _, c := range []struct{ name, opts, work, leaf string }{
		{"methodevents", "METHODEVENTS,CALLTREE,START,NORTDRIVER", "ThreadChurn.work(I)V", "ThreadChurn.leaf(I)J"},
		{"bci", "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER", "ThreadChurn.work(I)V", "ThreadChurn.leaf(I)J"},
		{"sample", "SAMPLE=1ms,START,NORTDRIVER", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "ThreadChurn", Args: []string{strconv.Itoa(n), "4"},
				Options: c.opts, Env: []string{"LD_PRELOAD=" + shim, "JP_TRYLOCK_DELAY_US=3000"}})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			require.Contains(t, r.Stdout, "ThreadChurn: done")
			if c.work == "" {
				return
			}
			prof := r.LogRT(t, 1)
			got := 0
			for _, th := range jvmtest.Threads(prof, "") {
				if !strings.Contains(th.Name, "_churn-") {
					continue
				}
				got++
				var work, leaf uint64
				th.Walk(func(nd *reports.Node, _ int) {
					switch nd.Name[2:] { // without the type letter
					case c.work:
						work += nd.Calls
					case c.leaf:
						leaf += nd.Calls
					}
				})
				require.Equal(t, uint64(1), work, th.Name)
				require.Equal(t, uint64(3), leaf, th.Name)
			}
			assert.Equal(t, n, got, "every churn thread has its tree")
		})
	}
}
