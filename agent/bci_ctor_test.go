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
// constructor's handler (balanced, nothing missed), and the class
// verifies: with every method instrumented and with the constructors as
// ROOTS.
func TestBCICtorPaths(t *testing.T) {
	for _, opts := range []string{"BCI,CALLTREE,START,NORTDRIVER", "BCI,CALLTREE,START,NORTDRIVER,ROOTS=gen.Paths.<init>"} {
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "BCICtorPaths", Args: []string{"3", "4", "5", "6", "7"},
				JVMArgs: []string{asmBoot}, Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, "paths: sum=66 thrown=7\n", r.Stdout)
			assert.NotContains(t, r.Stderr, "VerifyError")
			msg := r.ReadFile(t, "msg")
			assert.NotContains(t, msg, "left as it was")
			p := asInterpreted(r.LogRT(t, 1))
			checkBalanced(t, p)
			calls := methodCalls(p)
			assert.Equal(t, uint64(3+4), calls["gen/Paths.<init>(Z)V"], "super(1) and super(2) paths")
			assert.Equal(t, uint64(5+6+7), calls["gen/Paths.<init>(ZI)V"], "this(x), super(check(x)) and its exception")
			assert.Equal(t, uint64(5), calls["gen/Paths.<init>(I)V"])
			assert.Equal(t, uint64(6+7), calls["gen/Paths.check(I)I"])
			assert.Equal(t, uint64(3+4+5+6), calls["gen/PBase.<init>(I)V"])
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
			assert.Equal(t, 14, exc, "check and the constructor, 7 each")
			assert.Zero(t, unmatched)
			assert.Zero(t, missed)
			if strings.Contains(opts, "ROOTS") {
				assert.Regexp(t, `ROOTS summary.*"rootMethods": 3\b`, msg)
			}
		})
	}
}
