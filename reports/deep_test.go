package reports

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deepDepth is the depth of the synthetic recursion: deep enough that
// anything quadratic in the depth (an indent per level) is far off the
// bound, and that recursing in Go per level overflows the small stack
// the test allows.
const deepDepth = 100_000

// deepProfile is a thread whose main calls rec, which calls itself
// deepDepth times, with a leaf at the bottom; one metric.
func deepProfile() *Profile {
	p := &Profile{PID: 9, Seq: 1, Metrics: testMetrics[:1]}
	root := &Node{Name: "00000001_main", Base: v(1)}
	p.Threads = []*Node{root}
	n := root
	for i := range deepDepth {
		name := "J:Deep.rec(I)V"
		if i == 0 {
			name = "J:Deep.main([Ljava/lang/String;)V"
		}
		c := &Node{Name: name, Calls: 1, Base: v(uint64(i % 7))}
		n.Children = []*Node{c}
		n = c
	}
	n.Children = []*Node{{Name: "J:Deep.leaf()V", Calls: 1, Base: v(3)}}
	return p
}

// boundedWriter fails once more than limit bytes were written, so that a
// report that grows out of bounds fails at once instead of filling the
// disk.
type boundedWriter struct {
	n, limit int
}

var errTooBig = errors.New("output over its bound")

func (w *boundedWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	if w.n > w.limit {
		return 0, errTooBig
	}
	return len(b), nil
}

// smallStack lowers the goroutine stack limit for the test: a tree walk
// that recurses per level overflows it at deepDepth (and kills the test
// binary, which fails the test), one that keeps its own stack does not.
func smallStack(t *testing.T) {
	old := debug.SetMaxStack(4 << 20)
	t.Cleanup(func() { debug.SetMaxStack(old) })
}

func TestDeepRecursion(t *testing.T) {
	p := deepProfile()
	smallStack(t)

	var in bytes.Buffer
	require.NoError(t, WriteLogRT(&in, p))
	q, err := ParseLogRT(bytes.NewReader(in.Bytes()))
	require.NoError(t, err)
	require.NoError(t, Compare(p, q, CompareOptions{}))
	depth := 0
	q.Threads[0].Walk(func(_ *Node, d int) { depth = max(depth, d) })
	assert.Equal(t, deepDepth+1, depth)

	// Every report is bounded by a constant times its input. The reports'
	// lines are at most about as long as log-rt's rows plus the capped
	// indent, so twice the log-rt is ample; without the cap xtree would
	// need about deepDepth² bytes of indent.
	limit := 2 * in.Len()
	for _, r := range []struct {
		name  string
		write func(w *boundedWriter) error
	}{
		{"xtree", func(w *boundedWriter) error { return WriteXTree(w, q) }},
		{"xarc", func(w *boundedWriter) error { return WriteXArc(w, q) }},
		{"xprof", func(w *boundedWriter) error { return WriteXProf(w, q) }},
		{"log-rt", func(w *boundedWriter) error { return WriteLogRT(w, q) }},
	} {
		w := &boundedWriter{limit: limit}
		require.NoError(t, r.write(w), "%s: %d bytes written for a %d-byte log-rt", r.name, w.n, in.Len())
		t.Logf("%s: %d bytes for a %d-byte log-rt", r.name, w.n, in.Len())
	}

	// xtree: one line per node, levels written in full.
	var xt bytes.Buffer
	require.NoError(t, WriteXTree(&xt, q))
	assert.Equal(t, deepDepth+2, len(regexp.MustCompile(`(?m)^ *\d+ +\d+ `).FindAllIndex(xt.Bytes(), -1)))
	assert.Contains(t, xt.String(), fmt.Sprintf("names below level %d are indented as level %d", XTreeMaxIndent, XTreeMaxIndent))
	last := fmt.Sprintf("%4d", deepDepth+1)
	i := strings.Index(xt.String(), "\n"+last+" ")
	require.GreaterOrEqual(t, i, 0, "no row at level %d", deepDepth+1)
	row := xt.String()[i+1:]
	row = row[:strings.IndexByte(row, '\n')]
	assert.True(t, strings.HasSuffix(row, "  "+strings.Repeat(" ", 2*XTreeMaxIndent)+"J:Deep.leaf()V"), "deepest row %q", row)

	// xarc: rec's recursion counted once in its cum, its self arc with
	// cum 0, and the leaf's cum once.
	a := NewArcflow(q)
	var rec *Stanza
	for i := range a.Stanzas {
		if a.Stanzas[i].Self.Name == "J:Deep.rec(I)V" {
			rec = &a.Stanzas[i]
		}
	}
	require.NotNil(t, rec)
	assert.Equal(t, uint64(deepDepth-1), rec.Self.Calls)
	var recBase uint64
	for i := 1; i < deepDepth; i++ {
		recBase += uint64(i % 7)
	}
	assert.Equal(t, recBase, rec.Self.Base[0])
	assert.Equal(t, recBase+3, rec.Self.Cum[0])
	for _, par := range rec.Parents {
		if par.Name == "J:Deep.rec(I)V" {
			assert.Zero(t, par.Cum[0])
		}
	}

	// Pruning and pprof walk the tree as well.
	pr := Prune(q, 0)
	require.NoError(t, Compare(q, pr, CompareOptions{}))
	pruned := Prune(q, 50)
	n := 0
	pruned.Threads[0].Walk(func(*Node, int) { n++ })
	assert.Less(t, n, deepDepth)
}
