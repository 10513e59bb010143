package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// ROOTS with method events: a chain of ten classes runs 20000 times
// outside the root (where the JIT compiles it: the thread is not held in
// the interpreter) and 10 times under it, where every call is counted,
// and nothing outside it is.
func TestRootsMethodEventsExact(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "RootsChain", Args: []string{"20000", "10"},
		Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER,JITA2N,ROOTS=RootsChain.root"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	want := map[string]uint64{"RootsChain.root(I)J": 10}
	for i := 0; i < 10; i++ {
		want[fmt.Sprintf("RootsChain$C%d.m(I)J", i)] = 10
	}
	assert.Equal(t, want, methodCalls(p))
	root := mainThread(t, p)
	require.Len(t, root.Children, 1, "only the root under the thread")
	assert.NotNil(t, root.Path("i:RootsChain.root(I)J", "i:RootsChain$C0.m(I)J", "i:RootsChain$C1.m(I)J"))
	assert.Contains(t, strings.Join(p.Notes, "\n"), "ROOTS: method events only on a thread inside a root method")
	assert.Contains(t, r.Stderr, "roots=RootsChain.root")
	assert.True(t, strings.Contains(r.ReadFile(t, "jita2n"), " LOAD RootsChain$C0.m(I)J"), "C0.m compiled outside the root")
}

// A root that calls itself: the nested calls are counted once each (fib
// makes 2*fib(n+1)-1 calls), and events stop with the outer root's exit.
// A root left by an exception: each frame's exception exit balances its
// entry, and events stop there too.
func TestRootsMethodEventsRecursionExceptions(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"15"},
		Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER,ROOTS=Fib.fib"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	assert.Equal(t, map[string]uint64{"Fib.fib(I)I": 2*987 - 1}, methodCalls(p))

	r = jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER,ROOTS=Exceptions.level1"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p = r.LogRT(t, 1)
	checkBalanced(t, p)
	calls := methodCalls(p)
	for _, m := range []string{"level1", "level2", "level3"} {
		assert.Equal(t, uint64(100), calls["Exceptions."+m+"(I)V"], m)
	}
	assert.NotContains(t, calls, "Exceptions.run()I")
	assert.NotContains(t, calls, "Exceptions.after()V", "runs after level1 has returned")
	assert.Contains(t, r.ReadFile(t, "msg"), `"unmatchedExits": 0, "missedExits": 0`)
}

// rtdriver roots= moves the roots of a running JVM; roots=all is refused
// (events on every thread are a JVM started without ROOTS).
func TestRootsMethodEventsByRTDriver(t *testing.T) {
	p, port := rootsLeafThenWork(t, "METHODEVENTS,CALLTREE")
	for _, bad := range []string{"roots=all", "roots=nodot"} {
		replies := rt(t, port, bad)
		require.Len(t, replies, 1)
		assert.False(t, replies[0].OK, bad)
	}
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, map[string]uint64{"Driven.leaf(I)J": 100}, methodCalls(r.LogRT(t, 1)))
	second := r.LogRT(t, 2)
	assert.Equal(t, map[string]uint64{"Driven.work(I)J": 50, "Driven.leaf(I)J": 50}, methodCalls(second))
	require.NotNil(t, mainThread(t, second).Path("i:Driven.work(I)J", "i:Driven.leaf(I)J"))
	assert.Contains(t, r.ReadFile(t, "msg"), "roots changed")
}

// rootsLeafThenWork drives Driven with the given options: ROOTS=Driven.leaf,
// start, 100 calls, flush and reset (log-rt 1), roots=Driven.work, 50
// calls; the caller goes on from there.
func rootsLeafThenWork(t *testing.T, opts string) (*jvmtest.Proc, ctl) {
	t.Helper()
	p, port := driven(t, opts+",ROOTS=Driven.leaf")
	requireOK(t, rt(t, port, "start"))
	p.Send("call 100")
	p.Expect("done 100")
	requireOK(t, rt(t, port, "flush,reset"))
	requireOK(t, rt(t, port, "roots=Driven.work"))
	p.Send("call 50")
	p.Expect("done 50")
	return p, port
}

// ROOTS that match no method (a typo) are said on stderr and in log-msg,
// with either source, and the run's end names the roots rather than
// saying that no Java method ran.
func TestRootsMatchingNothing(t *testing.T) {
	for _, src := range []string{"METHODEVENTS,", "BCI,ALLMETHODS,"} {
		t.Run("source="+src, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "RootsChain", Args: []string{"2000", "2"},
				Options: src + "CALLTREE,START,NORTDRIVER,ROOTS=RootsChain.rooot"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			if strings.HasPrefix(src, "BCI") {
				assert.Contains(t, r.Stderr, "libjprof: warning: ROOTS: no instrumented method matched RootsChain.rooot (none loaded, or only in classes never instrumented")
			} else {
				assert.Contains(t, r.Stderr, "libjprof: warning: ROOTS: no loaded method matched RootsChain.rooot")
			}
			assert.Contains(t, r.Stderr, "no root method (ROOTS=RootsChain.rooot) ran")
			assert.NotContains(t, r.Stderr, "no Java method ran")
			assert.Contains(t, r.Stderr, " roots=RootsChain.rooot (0 methods")
			assert.Regexp(t, `ROOTS summary.*"rootMethods": 0`, r.ReadFile(t, "msg"))
		})
	}
}

// A nested class whose own name holds '$' (RootsDollar$Inner$Dollar),
// named in the source's spelling: the start-time check finds the class,
// so the matchers of both sources must too, and every call is counted.
func TestRootsNestedDollarName(t *testing.T) {
	for _, src := range []string{"METHODEVENTS,", "BCI,ALLMETHODS,"} {
		t.Run("source="+src, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "RootsDollar", Args: []string{"500"},
				Options: src + "CALLTREE,START,NORTDRIVER,ROOTS=RootsDollar.Inner$Dollar.m$ethod+RootsDollar.Inner$Dollar.Deep.run"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.NotContains(t, r.Stderr, "warning: ROOTS")
			assert.NotContains(t, r.Stderr, "nothing collected")
			assert.Equal(t, map[string]uint64{
				"RootsDollar$Inner$Dollar.m$ethod(I)I":  500,
				"RootsDollar$Inner$Dollar$Deep.run(I)I": 500,
			}, methodCalls(asInterpreted(r.LogRT(t, 1))))
		})
	}
}
