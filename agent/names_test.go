package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// Thread names may hold any bytes: a line break in one used to cost the
// whole log-rt. OddNames runs 100 work → leaf calls in each of two threads
// with odd names; the log-rt must parse and hold both subtrees under their
// real names.
func TestOddThreadNamesLogRT(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "OddNames", Options: "METHODEVENTS,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Contains(t, r.Stdout, "oddnames: sum=")
	p := r.LogRT(t, 1)

	for _, name := range []string{
		"evil\nname with spaces\tand\\slash",
		// The JVM hands names to agents in modified UTF-8: a character
		// outside the BMP is two 3-byte surrogates, not valid UTF-8.
		"ünïcödé 日本 \xed\xa0\xbd\xed\xb8\x80",
	} {
		th := p.Thread(name)
		require.NotNil(t, th, "no thread %q in %q", name, threadNames(p))
		run := childrenLike(th, "OddNames$Named.run()V")
		require.Len(t, run, 1, "thread %q", name)
		var work, leaf uint64
		for _, w := range childrenLike(run[0], "OddNames.work(I)I") {
			work += w.Calls
			for _, l := range childrenLike(w, "OddNames.leaf(I)I") {
				leaf += l.Calls
			}
		}
		assert.Equal(t, uint64(100), work, "thread %q", name)
		assert.Equal(t, uint64(100), leaf, "thread %q", name)
	}
	// In the file, each name is one escaped token on its row.
	assert.Contains(t, r.ReadFile(t, "rt.1"), "_evil\\nname with spaces\\tand\\\\slash\n")
}

// childrenLike returns n's children for method, whatever their type
// letter (a method can be interpreted on some calls and compiled on
// others).
func childrenLike(n *reports.Node, method string) []*reports.Node {
	var out []*reports.Node
	for _, c := range n.Children {
		if _, m, ok := strings.Cut(c.Name, ":"); ok && m == method {
			out = append(out, c)
		}
	}
	return out
}

func threadNames(p *reports.Profile) []string {
	var names []string
	for _, th := range p.Threads {
		names = append(names, th.Name)
	}
	return names
}

// Class names have no length limit in the JVM: a class whose name is
// over 511 bytes (three package levels of 200 characters) keeps its
// whole name, so two such classes never merge into one.
func TestLongClassNames(t *testing.T) {
	jvmtest.Build(t)
	dir := t.TempDir()
	pkg := []string{strings.Repeat("a", 200), strings.Repeat("b", 200), strings.Repeat("c", 200)}
	src := filepath.Join(dir, "src", filepath.Join(pkg...))
	require.NoError(t, os.MkdirAll(src, 0o755))
	for _, cls := range []string{"LongOne", "LongTwo"} {
		code := "package " + strings.Join(pkg, ".") + ";\npublic class " + cls + " { public static int f(int x) { return x + 1; } }\n"
		require.NoError(t, os.WriteFile(filepath.Join(src, cls+".java"), []byte(code), 0o644))
	}
	main := "public class LongMain { public static void main(String[] a) { int s = 0; for (int i = 0; i < 10; i++) { s += " +
		strings.Join(pkg, ".") + ".LongOne.f(i); s += " + strings.Join(pkg, ".") + ".LongTwo.f(i); } System.out.println(s); } }\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "LongMain.java"), []byte(main), 0o644))
	classes := filepath.Join(dir, "classes")
	files, _ := filepath.Glob(filepath.Join(src, "*.java"))
	out, err := exec.Command("javac", append([]string{"-d", classes, filepath.Join(dir, "src", "LongMain.java")}, files...)...).CombinedOutput()
	require.NoError(t, err, string(out))

	r := jvmtest.Start(t, jvmtest.Run{Class: "LongMain", Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER", ClassPath: []string{classes}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	calls := methodCalls(r.LogRT(t, 1))
	prefix := strings.Join(pkg, "/")
	assert.Equal(t, uint64(10), calls[prefix+"/LongOne.f(I)I"])
	assert.Equal(t, uint64(10), calls[prefix+"/LongTwo.f(I)I"])
}
