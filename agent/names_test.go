package main

import (
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
	r := jvmtest.Start(t, jvmtest.Run{Class: "OddNames", Options: "START,NORTDRIVER"})
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
