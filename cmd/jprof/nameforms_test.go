package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// TestNameFormsReal profiles the NameForms program with the agent and
// reads its log-rt with every command that shows method names: Java's
// names by default (the JDK's TimSort, overloads, arrays of arrays, a
// nested class's constructor, a lambda's hidden class), the short form,
// and the log-rt's own names with -names jvm; the values are the same
// whatever the names.
func TestNameFormsReal(t *testing.T) {
	// CALLTREE: every node's value is its calls, never 0 (a calibrated
	// tiny method's can be, and collapsed stacks leave 0 out).
	r := jvmtest.Start(t, jvmtest.Run{Class: "NameForms", Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Contains(t, r.Stdout, "nameforms: first=0")
	logRT := r.File("rt.1")
	p := jvmtest.ParseLogRT(t, logRT)

	// What the log-rt holds: JVM names with their type prefixes, and the
	// calls of each method whatever its type.
	calls := map[string]uint64{}
	var lambda string // the lambda's class, as the JVM names it
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, depth int) {
			if depth == 0 {
				return
			}
			_, id, ok := strings.Cut(n.Name, ":")
			require.True(t, ok, "a method without its type prefix in log-rt: %q", n.Name)
			calls[id] += n.Calls
			if strings.HasPrefix(id, "NameForms$$Lambda") && strings.HasSuffix(id, ".applyAsInt(I)I") {
				lambda = strings.TrimSuffix(id, ".applyAsInt(I)I")
			}
		})
	}
	mergeLo := "java/util/TimSort.mergeLo(IIII)V"
	require.Positive(t, calls[mergeLo], "Arrays.sort ran TimSort's mergeLo")
	require.Positive(t, calls["NameForms.over(I)J"])
	require.Positive(t, calls["NameForms.over(Ljava/lang/String;)J"])
	require.NotEmpty(t, lambda, "the lambda's applyAsInt(I)I ran")
	hidden := regexp.MustCompile(`^NameForms\$\$Lambda(\$\d+)?\.0x[0-9a-f]+$`)
	require.Regexp(t, hidden, lambda, "a hidden class's name as JVMTI gives it")
	lambdaJava := strings.Replace(lambda, ".0x", "/0x", 1) // as Class.getName() and stack traces write it

	javaNames := []string{
		"java.util.TimSort.mergeLo(int, int, int, int)",
		"java.util.TimSort.sort(Object[], int, int, Comparator, Object[], int, int)",
		"NameForms.over(int)",
		"NameForms.over(String)",
		"NameForms.cells(String[][], int[])",
		"NameForms.main(String[])",
		"NameForms$Box.<init>(int)",
		lambdaJava + ".applyAsInt(int)",
	}
	jvmNames := []string{
		":java/util/TimSort.mergeLo(IIII)V",
		":NameForms.over(I)J",
		":NameForms.over(Ljava/lang/String,)J", // collapsed writes ';' as ','
		":NameForms.cells([[Ljava/lang/String,[I)I",
	}

	// The outputs are large: say what is missing, not all of them.
	has := func(out, sub, what string) {
		t.Helper()
		assert.True(t, strings.Contains(out, sub), "%s has no %q", what, sub)
	}
	hasNot := func(out, sub, what string) {
		t.Helper()
		assert.False(t, strings.Contains(out, sub), "%s has %q", what, sub)
	}

	// Collapsed stacks: Java's names, no type prefix, no descriptor.
	def := collapsedOf(t, logRT)
	for _, n := range javaNames {
		assert.Regexp(t, regexp.MustCompile(`;`+regexp.QuoteMeta(n)+`[; ]`), def, "collapsed has %s", n)
	}
	hasNot(def, "(IIII)V", "collapsed")
	assert.False(t, regexp.MustCompile(`(^|;)[iIjJnNCO]:`).MatchString(def), "a type prefix in collapsed")
	// The log-rt's own names with -names jvm.
	jvm := collapsedOf(t, "-names", "jvm", logRT)
	for _, n := range jvmNames {
		has(jvm, n, "collapsed -names jvm")
	}
	var want bytes.Buffer
	require.NoError(t, reports.WriteCollapsed(&want, p, reports.CollapsedOptions{Names: reports.JVMNames}))
	assert.True(t, want.String() == jvm, "-names jvm is the log-rt's text")
	// Short names, overloads still apart.
	short := collapsedOf(t, "-names", "short", logRT)
	for _, n := range []string{";TimSort.mergeLo;", ";NameForms.over(int) ", ";NameForms.over(String)", ";NameForms.cells ", ";NameForms$Box.<init>"} {
		has(short, n, "collapsed -names short")
	}
	// The same values in every form.
	assert.Equal(t, collapsedSum(t, jvm), collapsedSum(t, def))
	assert.Equal(t, collapsedSum(t, jvm), collapsedSum(t, short))

	// xprof: one row per method, its calls those of all its types.
	code, xprof, stderr := jprof("report", "xprof", logRT)
	require.Equal(t, 0, code, stderr)
	rows := xprofCalls(t, xprof)
	assert.Equal(t, calls[mergeLo], rows["java.util.TimSort.mergeLo(int, int, int, int)"])
	assert.Equal(t, calls["NameForms.over(Ljava/lang/String;)J"], rows["NameForms.over(String)"])
	assert.Equal(t, calls[lambda+".applyAsInt(I)I"], rows[lambdaJava+".applyAsInt(int)"])
	code, xprofJVM, stderr := jprof("report", "xprof", "-names", "jvm", logRT)
	require.Equal(t, 0, code, stderr)
	assert.True(t, regexp.MustCompile(`  [iIjJ]:java/util/TimSort\.mergeLo\(IIII\)V\n`).MatchString(xprofJVM), "xprof -names jvm has mergeLo(IIII)V")
	hasNot(xprof, "(IIII)V", "xprof")

	// xtree and xarc name the same way.
	for _, rep := range []string{"xtree", "xarc"} {
		code, out, stderr := jprof("report", rep, logRT)
		require.Equal(t, 0, code, stderr)
		has(out, "java.util.TimSort.mergeLo(int, int, int, int)\n", rep)
		code, out, stderr = jprof("report", rep, "-names", "jvm", logRT)
		require.Equal(t, 0, code, stderr)
		has(out, ":java/util/TimSort.mergeLo(IIII)V\n", rep+" -names jvm")
	}

	// The flame graph's names, and pprof's functions.
	code, page, stderr := jprof("flame", logRT)
	require.Equal(t, 0, code, stderr)
	has(page, `"java.util.TimSort.mergeLo(int, int, int, int)"`, "flame")
	hasNot(page, "mergeLo(IIII)V", "flame")
	code, page, stderr = jprof("flame", "-names", "jvm", logRT)
	require.Equal(t, 0, code, stderr)
	has(page, `:java/util/TimSort.mergeLo(IIII)V"`, "flame -names jvm")
	code, pb, stderr := jprof("pprof", logRT)
	require.Equal(t, 0, code, stderr)
	pp, err := profile.Parse(strings.NewReader(pb))
	require.NoError(t, err)
	found := false
	for _, f := range pp.Function {
		if f.Name == "java.util.TimSort.mergeLo(int, int, int, int)" {
			found = true
			assert.Regexp(t, `^[iIjJ]:java/util/TimSort\.mergeLo\(IIII\)V$`, f.SystemName)
		}
	}
	assert.True(t, found, "pprof has java.util.TimSort.mergeLo(int, int, int, int)")
}

// collapsedSum is the sum of the values of collapsed stacks.
func collapsedSum(t *testing.T, s string) uint64 {
	var sum uint64
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		require.NoError(t, err, line)
		sum += v
	}
	return sum
}

// xprofCalls reads an xprof's rows: calls by name; a name twice fails.
func xprofCalls(t *testing.T, s string) map[string]uint64 {
	rows := map[string]uint64{}
	row := regexp.MustCompile(`^ +(\d+) +\d+ +\d+  (.+)$`)
	for _, line := range strings.Split(s, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c, err := strconv.ParseUint(m[1], 10, 64)
		require.NoError(t, err)
		_, dup := rows[m[2]]
		assert.False(t, dup, "%q is two rows of xprof", m[2])
		rows[m[2]] = c
	}
	require.NotEmpty(t, rows)
	return rows
}
