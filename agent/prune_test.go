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
// path (the node with the most own time, and its callers) by name,
// instead of folding it into a <pruned> row; usually that is hellop.myC,
// where the demo spends its own time, but a slow start-up on a loaded
// machine can make a single JDK method's node hotter, so the test finds
// the hot node itself.
func TestPruneDemoKeepsHotMethod(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,RTARCF,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	full := r.LogRT(t, 1)
	var total, myA, myC, hotBase uint64
	var hotPath []string // root's child first
	var path []string
	for _, th := range full.Threads {
		th.Walk(func(n *reports.Node, d int) {
			total += n.Base[0]
			path = append(path[:d], n.Name)
			if d > 0 && n.Base[0] > hotBase {
				hotBase, hotPath = n.Base[0], append([]string(nil), path[1:]...)
			}
			switch {
			case strings.HasSuffix(n.Name, "hellop.myA()V"):
				myA += cum(n)
			case strings.HasSuffix(n.Name, "hellop.myC()J"):
				myC += cum(n)
			}
		})
	}
	require.NotZero(t, myC)
	require.NotEmpty(t, hotPath)
	myCHot := strings.HasSuffix(hotPath[len(hotPath)-1], "hellop.myC()J")
	if !myCHot {
		t.Logf("this run's hottest node is %s (%d ns own), not hellop.myC", hotPath[len(hotPath)-1], hotBase)
	}
	// The demo's threshold, and one between myC's and myA's share of the
	// total: myC is below it whatever this run measured, and is myA's
	// only child, so the lone-leaf rule keeps it.
	between := (float64(myC) + float64(myA-myC)/2) / float64(total) * 100
	for _, pct := range []float64{5, between} {
		pruned := reports.Prune(full, pct)
		var kept [][]string
		var foundC bool
		for _, th := range pruned.Threads {
			th.Walk(func(n *reports.Node, d int) {
				path = append(path[:d], n.Name)
				kept = append(kept, append([]string(nil), path[1:]...))
				foundC = foundC || strings.HasSuffix(n.Name, "hellop.myC()J")
			})
		}
		assert.Contains(t, kept, hotPath, "the hot path was folded into <pruned> at %.2f%%", pct)
		if pct == between || myCHot {
			assert.True(t, foundC, "hellop.myC was folded into <pruned> at %.2f%%", pct)
		}
	}

	out, err := exec.Command(jvmtest.Tool("jprof"), "report", "xtree", "-prune", "5", r.File("rt.1")).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "<pruned>")
	if myCHot {
		assert.Contains(t, string(out), "hellop.myC()") // Java-style names by default
		assert.Contains(t, string(out), "hellop.myA()")
	}
}

func cum(n *reports.Node) uint64 {
	var c uint64
	n.Walk(func(m *reports.Node, _ int) { c += m.Base[0] })
	return c
}
