package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// Constructors with more than one path to super() or this(), generated
// with ASM (javac writes none): each call is entered once whatever its
// path, the other constructor a this() path calls is its child, an
// exception thrown before super() on the second path leaves through the
// constructor's handler (nothing missed), and the class verifies: with
// every method instrumented and with the constructors as ROOTS. The same
// constructors in a class file of version 49 (no frames, verified by
// inference) verify too and count every call; there an exception before
// super() passes the constructor's catch-all, and the handler that
// catches it (main's) makes the constructor's exit.
func TestBCICtorPaths(t *testing.T) {
	for _, opts := range []string{"BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER", "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=gen.*Paths.<init>"} {
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "BCICtorPaths", Args: []string{"3", "4", "5", "6", "7"},
				JVMArgs: []string{asmBoot}, Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, "paths: sum=66 thrown=7 old: sum=66 thrown=7\n", r.Stdout)
			assert.NotContains(t, r.Stderr, "VerifyError")
			msg := r.ReadFile(t, "msg")
			assert.NotContains(t, msg, "left as it was")
			p := asInterpreted(r.LogRT(t, 1))
			checkBalanced(t, p)
			calls := methodCalls(p)
			for _, c := range []string{"gen/Paths", "gen/OldPaths"} {
				assert.Equal(t, uint64(3+4), calls[c+".<init>(Z)V"], "%s: super(1) and super(2) paths", c)
				assert.Equal(t, uint64(5+6+7), calls[c+".<init>(ZI)V"], "%s: this(x), super(check(x)) and its exception", c)
				assert.Equal(t, uint64(5), calls[c+".<init>(I)V"], c)
				assert.Equal(t, uint64(6+7), calls[c+".check(I)I"], c)
			}
			assert.Equal(t, uint64(2*(3+4+5+6)), calls["gen/PBase.<init>(I)V"])
			var viaThis, viaCheck uint64 // children of Paths(boolean, int)
			for _, th := range p.Threads {
				th.Walk(func(n *reports.Node, d int) {
					if n.Name[2:] != "gen/Paths.<init>(ZI)V" {
						return
					}
					for _, c := range n.Children {
						switch c.Name[2:] {
						case "gen/Paths.<init>(I)V":
							viaThis += c.Calls
						case "gen/Paths.check(I)I":
							viaCheck += c.Calls
						}
					}
				})
			}
			assert.Equal(t, uint64(5), viaThis, "this(x) path")
			assert.Equal(t, uint64(6+7), viaCheck, "super(check(x)) path")
			exc, unmatched, missed := exceptionExits(t, r, "main")
			assert.Zero(t, unmatched)
			if strings.Contains(opts, "ROOTS") {
				// main is not instrumented: no exit of its pops the
				// frames left open, so none is counted missed, nor does
				// a handler of its close them.
				assert.Equal(t, 7+7+7, exc, "check in both classes, and the constructor with frames")
				assert.Regexp(t, `ROOTS summary.*"rootMethods": 6\b`, msg)
			} else {
				// Version 49: no handler before super(); main's handler,
				// which catches the exception, makes that exit.
				assert.Equal(t, 7+7+7+7, exc, "check in both classes, and both constructors")
				assert.Zero(t, missed)
			}
		})
	}
}
