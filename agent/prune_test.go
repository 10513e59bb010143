package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// jprof report xtree -prune 5 on the README demo's log-rt keeps the hot
// method (hellop.myC, where the demo spends its own time) by name, under
// its callers, instead of folding it into a <pruned> row.
func TestPruneDemoKeepsHotMethod(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "RTARCF,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	full := r.LogRT(t, 1)
	// The demo's own threshold, and one between myC's and myA's share of
	// the total, so that myC is below it whatever this run measured.
	var total, myA, myC uint64
	for _, th := range full.Threads {
		th.Walk(func(n *reports.Node, d int) {
			total += n.Base[0]
			switch {
			case strings.HasSuffix(n.Name, "hellop.myA()V"):
				myA += cum(n)
			case strings.HasSuffix(n.Name, "hellop.myC()J"):
				myC += cum(n)
			}
		})
	}
	require.NotZero(t, myC)
	between := (float64(myC) + float64(myA-myC)/2) / float64(total) * 100
	for _, pct := range []float64{5, between} {
		found := false
		for _, th := range reports.Prune(full, pct).Threads {
			th.Walk(func(n *reports.Node, d int) {
				found = found || strings.HasSuffix(n.Name, "hellop.myC()J")
			})
		}
		assert.True(t, found, "hellop.myC was folded into <pruned> at %.2f%%", pct)
	}

	out, err := exec.Command(jvmtest.Tool("jprof"), "report", "xtree", "-prune", "5", r.File("rt.1")).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "hellop.myC()") // Java-style names by default
	assert.Contains(t, string(out), "hellop.myA()")
}

func cum(n *reports.Node) uint64 {
	var c uint64
	n.Walk(func(m *reports.Node, _ int) { c += m.Base[0] })
	return c
}
