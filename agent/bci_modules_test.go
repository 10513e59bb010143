package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// Classes of a named JDK module (java.logging) run instrumented: their
// probes, in the boot loader's unnamed module, are reachable without the
// agent adding read edges (HotSpot adds them to the module of a class a
// class file hook changed), with every method and with a root there.
func TestBCINamedModules(t *testing.T) {
	for _, opts := range []string{"BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER", "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=java.util.logging.Logger.setLevel"} {
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "ModuleCalls", Args: []string{"25"}, Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, "loggers=25\n", r.Stdout)
			assert.NotContains(t, r.Stderr, "IllegalAccessError")
			calls := methodCalls(asInterpreted(r.LogRT(t, 1)))
			assert.GreaterOrEqual(t, calls["java/util/logging/Logger.setLevel(Ljava/util/logging/Level;)V"], uint64(25))
			assert.GreaterOrEqual(t, calls["java/util/logging/Logger.updateEffectiveLevel()V"], uint64(25), "setLevel's callee, in java.logging too")
			assert.NotContains(t, r.ReadFile(t, "msg"), "left as it was")
		})
	}
}
