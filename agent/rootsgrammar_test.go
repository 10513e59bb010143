package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// rootsTableRow is one line of testdata/roots-table.txt.
type rootsTableRow struct {
	root, class, method string
	want                bool
}

func rootsTable(t *testing.T) []rootsTableRow {
	t.Helper()
	f, err := os.Open("testdata/roots-table.txt")
	require.NoError(t, err)
	defer f.Close()
	var rows []rootsTableRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		require.Len(t, f, 4, line)
		require.Contains(t, []string{"yes", "no"}, f[3], line)
		rows = append(rows, rootsTableRow{f[0], f[1], f[2], f[3] == "yes"})
	}
	require.NoError(t, sc.Err())
	return rows
}

// One table of roots and names, matched by the Go parser's matcher and
// by the BCI transformer's (libjprof.bci.Selective, run by a harness
// compiled here against build/jprof-bci.jar), each root given to Java in
// the normalized form the agent hands it.
func TestRootsGrammarTable(t *testing.T) {
	rows := rootsTable(t)
	var in strings.Builder
	for _, r := range rows {
		ps, err := parseRoots(r.root)
		require.NoError(t, err, r.root)
		require.Len(t, ps, 1, r.root)
		assert.Equal(t, r.want, ps[0].matches(r.class, r.method), "Go: %s against %s.%s", r.root, r.class, r.method)
		fmt.Fprintf(&in, "%s %s %s\n", normalRoots(ps), r.class, r.method)
	}

	jvmtest.Build(t)
	bin := filepath.Dir(jvmtest.Java())
	jar := filepath.Join(jvmtest.Root(), "build", "jprof-bci.jar")
	dir := t.TempDir()
	out, err := exec.Command(filepath.Join(bin, "javac"), "-d", dir, "-cp", jar, "testdata/RootsTable.java").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd := exec.Command(filepath.Join(bin, "java"), "-cp", dir+":"+jar, "libjprof.bci.RootsTable")
	cmd.Stdin = strings.NewReader(in.String())
	res, err := cmd.Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	require.Len(t, lines, len(rows))
	for i, r := range rows {
		f := strings.Fields(lines[i])
		require.Len(t, f, 4, lines[i])
		assert.Equal(t, r.want, f[3] == "yes", "Java: %s against %s.%s", r.root, r.class, r.method)
	}
}

func TestParseRootsErrors(t *testing.T) {
	for bad, says := range map[string]string{
		"Foo":             `root "Foo": want Class.method`,
		"Foo.bar(I)V":     `method part "bar(I)V" is not a Java method name`,
		"com..Foo.bar":    `class part "com..Foo" is not a dotted Java name`,
		"+":               "no root in",
		"Foo.bar+Baz.q-x": `root "Baz.q-x"`,
	} {
		_, err := parseRoots(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), says, bad)
		}
	}
	n, err := normalizeRoots(" a/b/C.m : D.* + E$F.<init> ")
	require.NoError(t, err)
	assert.Equal(t, "a.b.C.m+D.*+E$F.<init>", n)
	assert.Equal(t, []string{"a.b.Outer.Inner", "a.b.Outer$Inner", "a.b$Outer$Inner", "a$b$Outer$Inner"}, nestedCandidates("a.b.Outer.Inner"))
}

// The grammar through the real agent, on both sources: rtdriver roots=
// answers with the number of methods each pattern matches in
// RootsNames's classes (breakpoints set with method events, root methods
// instrumented with BCI), and a pattern that matches nothing gets a
// warning saying why.
func TestRootsGrammarThroughAgent(t *testing.T) {
	counts := []struct {
		roots string
		n     int
	}{
		{"RootsNames.run", 1},
		{"RootsNames.ru?", 2},
		{"RootsNames.run*", 2},
		{"RootsNames.*", 5},
		{"RootsNames.Inner.run", 1},
		{"RootsNames$Inner.run", 1},
		{"RootsNames.Inner.*", 3},
		{"RootsNames.Inner*.run", 3},
		{"RootsNames?Inner.r?n", 2},
		{"RootsNames.Inner.Deep.run", 1},
		{"RootsNames*.<init>", 4},
		{"Roots?ames.run+RootsNames.Inner2.run", 2},
		{"RootsNames.run:RootsNames/rux", 2},
	}
	for _, src := range []string{"METHODEVENTS,", "BCI,ALLMETHODS,"} {
		t.Run("source="+src, func(t *testing.T) {
			port := freePort(t)
			p := jvmtest.Launch(t, jvmtest.Run{Class: "RootsNames",
				Options: fmt.Sprintf("%sCALLTREE,START,ROOTS=RootsNames.Inner.ran,PORT=%d", src, port)})
			p.Expect("ready")
			for _, c := range counts {
				replies := rt(t, tcpCtl(port), "roots="+c.roots)
				require.Len(t, replies, 1)
				assert.True(t, replies[0].OK, replies[0].String())
				want := fmt.Sprintf("%d methods match ", c.n)
				if c.n == 1 {
					want = "1 method matches "
				}
				assert.True(t, strings.HasPrefix(replies[0].Detail, want), "%s: %s", c.roots, replies[0].Detail)
			}
			for roots, why := range map[string]string{
				"RootsNames.rnu":  "class RootsNames has no method rnu (its methods: <init>, run, runA, rux, main)",
				"RootsNamez.run":  "no class RootsNamez is loaded or on the class path",
				"RootsNames.In.*": "no class RootsNames.In is loaded",
			} {
				replies := rt(t, tcpCtl(port), "roots="+roots)
				require.Len(t, replies, 1)
				assert.True(t, replies[0].OK, replies[0].String())
				assert.Contains(t, replies[0].Detail, "warning: 0 methods match "+roots, roots)
				assert.Contains(t, replies[0].Detail, why, roots)
			}
			if src == "BCI,ALLMETHODS," {
				replies := rt(t, tcpCtl(port), "roots=java.lang.String.hashCode")
				require.Len(t, replies, 1)
				assert.Contains(t, replies[0].Detail, "warning: 0 methods match java.lang.String.hashCode")
				assert.Contains(t, replies[0].Detail, "1 method matches in the loaded classes but none is instrumented (java.base never is")
			}
			replies := rt(t, tcpCtl(port), "roots=RootsNames.run(I)V")
			require.Len(t, replies, 1)
			assert.False(t, replies[0].OK)
			assert.Contains(t, replies[0].Detail, `method part "run(I)V" is not a Java method name`)
			requireOK(t, rt(t, tcpCtl(port), "roots=RootsNames.run"))
			p.Send("x")
			p.Send("x")
			p.Send("quit")
			r := p.Wait()
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Contains(t, r.Stderr, " roots=RootsNames.Inner.ran (")
			assert.Equal(t, uint64(2), methodCalls(asInterpreted(r.LogRT(t, 1)))["RootsNames.run()V"], "the last roots")
		})
	}
}

// A misspelt root is said on stderr when the VM starts, before its
// class loads: a class that is not on the class path, a method the
// class file does not have.
func TestRootsTypoSaidAtStart(t *testing.T) {
	for _, src := range []string{"METHODEVENTS,", "BCI,ALLMETHODS,"} {
		t.Run("source="+src, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "RootsChain", Args: []string{"2000", "2"},
				Options: src + "CALLTREE,START,NORTDRIVER,ROOTS=RootsChain.rooot+RootsChian.root+RootsChain.C0.m"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			state := strings.Index(r.Stderr, " roots=RootsChain.rooot+RootsChian.root+RootsChain.C0.m (")
			require.GreaterOrEqual(t, state, 0, r.Stderr)
			after := r.Stderr[state:]
			assert.Contains(t, after, "libjprof: warning: ROOTS: root RootsChain.rooot: class RootsChain has no method rooot (its methods: ")
			assert.Contains(t, after, "libjprof: warning: ROOTS: root RootsChian.root: no class RootsChian is loaded or on the class path")
			assert.NotContains(t, after, "root RootsChain.C0.m:", "RootsChain$C0 has m")
			assert.Equal(t, uint64(2002), methodCalls(asInterpreted(r.LogRT(t, 1)))["RootsChain$C0.m(I)J"], "the root that is right")
		})
	}
}

// The tests of this ROOTS grammar, constructor paths, named
// modules and class churn run again on every other JDK installed
// (Temurin 25 beside OpenJDK 17, say).
func TestRootsAndBCIOnOtherJDKs(t *testing.T) {
	jvmtest.OnOtherJDKs(t, map[string]func(*testing.T){
		"roots-grammar-table": TestRootsGrammarTable,
		"roots-grammar-agent": TestRootsGrammarThroughAgent,
		"roots-table-agent":   TestRootsGrammarTableThroughAgent,
		"roots-typo":          TestRootsTypoSaidAtStart,
		"bci-ctor-paths":      TestBCICtorPaths,
		"bci-named-modules":   TestBCINamedModules,
		"bci-roots-churn":     TestBCIRootsClassChurnBounded,
		"bci-churn-names":     TestBCIClassChurnMethodNamesBounded,
	})
}

// The table itself through the agent, on both sources: RootsTableClasses
// defines every class the table names with the methods it names; for
// each root (those rtdriver's ASCII protocol can carry), rtdriver roots= must count the methods of those classes the
// Go matcher says it matches (at least that many for a root whose class
// part starts with '*', which may match the JDK's classes too).
func TestRootsGrammarTableThroughAgent(t *testing.T) {
	rows := rootsTable(t)
	universe := map[string]map[string]bool{}
	var classes []string
	for _, r := range rows {
		if universe[r.class] == nil {
			universe[r.class] = map[string]bool{}
			classes = append(classes, r.class)
		}
		universe[r.class][r.method] = true
	}
	want := map[string]int{}
	var roots []string
	for _, r := range rows {
		if _, ok := want[r.root]; ok {
			continue
		}
		ps, err := parseRoots(r.root)
		require.NoError(t, err)
		n := 0
		for c, ms := range universe {
			for m := range ms {
				if ps[0].matches(c, m) {
					n++
				}
			}
		}
		want[r.root] = n
		roots = append(roots, r.root)
	}
	for _, src := range []string{"METHODEVENTS,", "BCI,ALLMETHODS,"} {
		t.Run("source="+src, func(t *testing.T) {
			port := freePort(t)
			p := jvmtest.Launch(t, jvmtest.Run{Class: "RootsTableClasses", JVMArgs: []string{asmBoot},
				Options: fmt.Sprintf("%sCALLTREE,START,ROOTS=Foo.bar,PORT=%d", src, port)})
			for _, c := range classes {
				var ms []string
				for m := range universe[c] {
					ms = append(ms, m)
				}
				p.Send(c + " " + strings.Join(ms, " "))
			}
			p.Send("end")
			p.Expect(fmt.Sprintf("ready %d", len(classes)))
			for _, root := range roots {
				if !isASCII(root) {
					continue // rtdriver's protocol is ASCII: ROOTS= only
				}
				replies := rt(t, tcpCtl(port), "roots="+root)
				require.Len(t, replies, 1)
				require.True(t, replies[0].OK, replies[0].String())
				var got int
				if _, err := fmt.Sscanf(replies[0].Detail, "%d method", &got); err != nil {
					_, err = fmt.Sscanf(replies[0].Detail, "warning: %d method", &got)
					require.NoError(t, err, replies[0].Detail)
				}
				if strings.HasPrefix(root, "*") {
					assert.GreaterOrEqual(t, got, want[root], "%s: %s", root, replies[0].Detail)
				} else {
					assert.Equal(t, want[root], got, "%s: %s", root, replies[0].Detail)
				}
			}
			p.Send("quit")
			r := p.Wait()
			require.Equal(t, 0, r.ExitCode, r.Stderr)
		})
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// classMethodNames reads a class file javac wrote, and refuses what is
// not one (cut short, or not a class file at all).
func TestClassMethodNames(t *testing.T) {
	jvmtest.Build(t)
	b, err := os.ReadFile(filepath.Join(jvmtest.Root(), "build", "java", "RootsNames.class"))
	require.NoError(t, err)
	names, err := classMethodNames(b)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"<init>", "run", "runA", "rux", "main"}, names)
	for _, bad := range [][]byte{b[:len(b)/2], b[:9], []byte("not a class file")} {
		_, err := classMethodNames(bad)
		assert.Error(t, err)
	}
}

// The start-time check looks up the classes nestedCandidates lists for
// a root's class part; the matchers must accept exactly those names, or
// a root the check finds would match nothing (or one it warns about
// would match). Every spelling of each name with its dots and '$' mixed
// is tried.
func TestRootsMatcherAgreesWithCheck(t *testing.T) {
	for _, lit := range []string{"odd.Odd.Inner$Dollar", "a.b.Outer.Inner", "Outer$Inner.Deep", "p.Outer.Inner.Deep", "A.B$C.D$E", "Foo"} {
		cands := map[string]bool{}
		for _, c := range nestedCandidates(lit) {
			cands[c] = true
		}
		for _, name := range dotDollarSpellings(lit) {
			assert.Equal(t, cands[name], classMatch(lit, name), "root class %s against class %s", lit, name)
		}
	}
}

// dotDollarSpellings is s with each of its '.' and '$' either way.
func dotDollarSpellings(s string) []string {
	out := []string{""}
	for _, c := range s {
		var next []string
		for _, o := range out {
			if c == '.' || c == '$' {
				next = append(next, o+".", o+"$")
			} else {
				next = append(next, o+string(c))
			}
		}
		out = next
	}
	return out
}
