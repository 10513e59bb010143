package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// bciMaps reads log-msg's "BCI maps" line: the transformer's map sizes.
func bciMaps(t *testing.T, r *jvmtest.Result) map[string]uint64 {
	t.Helper()
	msg := r.ReadFile(t, "msg")
	line := regexp.MustCompile(`BCI maps\s+\{[^}]*\}`).FindString(msg)
	require.NotEmpty(t, line, msg)
	out := map[string]uint64{}
	for _, m := range regexp.MustCompile(`"(\w+)": (\d+)`).FindAllStringSubmatch(line, -1) {
		v, err := strconv.ParseUint(m[2], 10, 64)
		require.NoError(t, err)
		out[m[1]] = v
	}
	return out
}

// Class churn under BCI ROOTS: generated classes with new names, in
// loaders that are dropped and collected round after round. What the
// transformer knows of classes stays that of the live loaders: as many
// classes after 40 rounds as after 5, every dropped one forgotten, and
// each class's calls counted exactly, under its root.
func TestBCIRootsClassChurnBounded(t *testing.T) {
	const per = 20
	known := map[int]uint64{}
	for _, rounds := range []int{5, 40} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "ClassChurn", Args: []string{strconv.Itoa(rounds), strconv.Itoa(per)},
			JVMArgs: []string{asmBoot}, Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=gen.*.applyAsInt"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		require.True(t, strings.HasPrefix(r.Stdout, fmt.Sprintf("churn: rounds=%d classes=%d unloaded=%d ", rounds, rounds*per, rounds)), r.Stdout)
		m := bciMaps(t, r)
		known[rounds] = m["classesKnown"]
		assert.GreaterOrEqual(t, m["classesForgotten"], uint64((rounds-1)*per), "rounds=%d", rounds)
		assert.LessOrEqual(t, m["methodsReached"], uint64(3), "rounds=%d: the calls of forgotten classes are forgotten too", rounds)
		p := asInterpreted(r.LogRT(t, 1))
		checkBalanced(t, p)
		calls := methodCalls(p)
		for _, k := range []int{0, per - 1} {
			name := fmt.Sprintf("gen/R%d_%d", rounds-1, k)
			assert.Equal(t, uint64(1), calls[name+".applyAsInt(I)I"], name)
			assert.Equal(t, uint64(1), calls[name+".run(I)I"], name)
		}
	}
	assert.LessOrEqual(t, known[40], known[5]+per, "classes known do not grow with the rounds: %v", known)
}

// Without ROOTS the transformer keeps one entry per method name the
// engine registered: at most MAXMETHODS, whatever the churn.
func TestBCIClassChurnMethodNamesBounded(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "ClassChurn", Args: []string{"40", "20"},
		JVMArgs: []string{asmBoot}, Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,MAXMETHODS=1000"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.True(t, strings.HasPrefix(r.Stdout, "churn: rounds=40 classes=800 unloaded=40 "), r.Stdout)
	m := bciMaps(t, r)
	assert.LessOrEqual(t, m["methodNames"], uint64(1000))
	assert.Greater(t, m["methodNames"], uint64(500), "the registry filled up first")
	p := r.LogRT(t, 1)
	assert.Contains(t, strings.Join(p.Notes, "\n"), "method registry full at 1000 methods")
}

// BCI's class file hook runs the transformer on the thread that loads the
// class, in the middle of the method whose code loaded it: that work is
// the agent's, and no method is charged for it. ClassChurn's rounds
// define 800 small classes, so the transformer is a large part of their
// thread CPU time; the rounds' subtrees, raw (calibration's removals put
// back), hold the rest: with the hook charged to the methods they would
// come to the rounds' whole CPU time.
func TestBCIClassHookNotCharged(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "ClassChurn", Args: []string{"40", "20"},
		JVMArgs: []string{asmBoot}, Options: "BCI,RTARCF,METRICS=PTT_TIME,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	m := regexp.MustCompile(`roundsCpuNs=(\d+)`).FindStringSubmatch(r.Stdout)
	require.NotNil(t, m, r.Stdout)
	cpu, _ := strconv.ParseFloat(m[1], 64)
	var raw float64
	var sum func(n *reports.Node)
	sum = func(n *reports.Node) {
		raw += float64(n.Base[0] + n.Delta[0])
		for _, c := range n.Children {
			sum(c)
		}
	}
	var find func(n *reports.Node)
	find = func(n *reports.Node) {
		if strings.Contains(n.Name, "ClassChurn.round(") {
			sum(n)
			return
		}
		for _, c := range n.Children {
			find(c)
		}
	}
	p := r.LogRT(t, 1)
	for _, th := range p.Threads {
		find(th)
	}
	msg := r.ReadFile(t, "msg")
	t.Logf("rounds: %.1f ms of thread CPU, %.1f ms in their subtrees (raw); %s", cpu/1e6, raw/1e6,
		regexp.MustCompile(`"transformerTime": "[^"]*"`).FindString(msg))
	require.NotZero(t, raw, "no ClassChurn.round in the tree")
	assert.Less(t, raw, 0.8*cpu, "the transformer's time is charged to the methods that loaded the classes")
}
