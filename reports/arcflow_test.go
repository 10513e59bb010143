package reports

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tn builds a node with one metric.
func tn(name string, calls, base uint64, kids ...*Node) *Node {
	return &Node{Name: name, Calls: calls, Base: []uint64{base}, Children: kids}
}

func oneMetric(threads ...*Node) *Profile {
	return &Profile{PID: 1, Metrics: testMetrics[:1], Threads: threads}
}

// line abbreviates an ArcLine with one metric.
func line(name string, calls, base, cum uint64) ArcLine {
	return ArcLine{Name: name, Calls: calls, Base: []uint64{base}, Cum: []uint64{cum}}
}

func stanza(t *testing.T, a *Arcflow, name string) Stanza {
	t.Helper()
	for _, s := range a.Stanzas {
		if s.Self.Name == name {
			return s
		}
	}
	t.Fatalf("no stanza for %s", name)
	return Stanza{}
}

// acTest is the running example of seed 001 (Table 3): CPU seconds per
// context of AC_test.
func acTest() *Profile {
	return oneMetric(
		tn("AC_test_pidtid", 0, 0,
			tn("Main", 1, 0,
				tn("A", 1, 1,
					tn("B", 2, 2,
						tn("C", 1, 1))),
				tn("B", 1, 1,
					tn("A", 1, 1,
						tn("C", 1, 1),
						tn("X", 1, 0,
							tn("E", 1, 1),
							tn("F", 1, 1),
							tn("G", 1, 1)))))))
}

func TestXArcPaperExample(t *testing.T) {
	a := NewArcflow(acTest())
	assert.Equal(t, []uint64{10}, a.Total)
	// Main: all of the time, none of it its own; B drives 60%, A 40%.
	assert.Equal(t, Stanza{
		Self:     line("Main", 1, 0, 10),
		Parents:  []ArcLine{line("AC_test_pidtid", 1, 0, 10)},
		Children: []ArcLine{line("B", 1, 1, 6), line("A", 1, 1, 4)},
	}, stanza(t, a, "Main"))
	assert.Equal(t, Stanza{
		Self:     line("A", 2, 2, 9),
		Parents:  []ArcLine{line("B", 1, 1, 5), line("Main", 1, 1, 4)},
		Children: []ArcLine{line("B", 2, 2, 3), line("X", 1, 0, 3), line("C", 1, 1, 1)},
	}, stanza(t, a, "A"))
	assert.Equal(t, Stanza{
		Self:     line("AC_test_pidtid", 0, 0, 10),
		Parents:  []ArcLine{line(Spontaneous, 0, 0, 10)},
		Children: []ArcLine{line("Main", 1, 0, 10)},
	}, stanza(t, a, "AC_test_pidtid"))
	// xprof: X has no base but 30% cum.
	x := a.XProf()
	assert.Equal(t, line("B", 3, 3, 9), x[0])
	assert.Contains(t, x, line("X", 1, 0, 3))
	checkInvariants(t, a)
}

func TestXArcRecursion(t *testing.T) {
	t.Run("fib", func(t *testing.T) {
		p := oneMetric(tn("T", 0, 0,
			tn("main", 1, 1,
				tn("fib", 1, 10,
					tn("fib", 2, 20,
						tn("fib", 4, 40),
						tn("L", 2, 5)),
					tn("L", 1, 3)))))
		a := NewArcflow(p)
		checkInvariants(t, a)
		// The inner fibs are inside the outer one's cum: counted once.
		assert.Equal(t, Stanza{
			Self:     line("fib", 7, 70, 78),
			Parents:  []ArcLine{line("main", 1, 10, 78), line("fib", 6, 60, 0)},
			Children: []ArcLine{line("L", 3, 8, 8), line("fib", 6, 60, 0)},
		}, stanza(t, a, "fib"))
		assert.Equal(t, Stanza{
			Self:     line("main", 1, 1, 79),
			Parents:  []ArcLine{line("T", 1, 1, 79)},
			Children: []ArcLine{line("fib", 1, 10, 78)},
		}, stanza(t, a, "main"))
		assert.Equal(t, []ArcLine{line("fib", 3, 8, 8)}, stanza(t, a, "L").Parents)
	})
	t.Run("mutual", func(t *testing.T) {
		p := oneMetric(tn("T", 0, 0,
			tn("a", 1, 1,
				tn("b", 1, 2,
					tn("a", 1, 4,
						tn("b", 1, 8,
							tn("c", 1, 16)))))))
		a := NewArcflow(p)
		checkInvariants(t, a)
		assert.Equal(t, Stanza{
			Self:     line("a", 2, 5, 31),
			Parents:  []ArcLine{line("T", 1, 1, 31), line("b", 1, 4, 0)},
			Children: []ArcLine{line("b", 2, 10, 26)},
		}, stanza(t, a, "a"))
		// b's cum counts the outer b only; its child a is credited only
		// with what the inner a did itself, the rest being the inner b's.
		assert.Equal(t, Stanza{
			Self:     line("b", 2, 10, 30),
			Parents:  []ArcLine{line("a", 2, 10, 30)},
			Children: []ArcLine{line("c", 1, 16, 16), line("a", 1, 4, 4)},
		}, stanza(t, a, "b"))
	})
	t.Run("across threads", func(t *testing.T) {
		p := oneMetric(
			tn("T1", 0, 2, tn("r", 1, 3, tn("r", 1, 4))),
			tn("T2", 0, 0, tn("r", 2, 5)))
		a := NewArcflow(p)
		checkInvariants(t, a)
		assert.Equal(t, line("r", 4, 12, 12), stanza(t, a, "r").Self)
		assert.Equal(t, []ArcLine{line(Spontaneous, 0, 2, 9)}, stanza(t, a, "T1").Parents)
	})
}

// checkInvariants checks the four xarc invariants of every stanza, per
// metric, and that the selves add up to the total.
func checkInvariants(t *testing.T, a *Arcflow) {
	t.Helper()
	k := len(a.Metrics)
	base := make([]uint64, k)
	for _, s := range a.Stanzas {
		var pc uint64
		pb, pcum, ccum := make([]uint64, k), make([]uint64, k), make([]uint64, k)
		for _, l := range s.Parents {
			pc += l.Calls
			addVec(pb, l.Base)
			addVec(pcum, l.Cum)
		}
		for _, l := range s.Children {
			addVec(ccum, l.Cum)
		}
		require.Equal(t, s.Self.Calls, pc, "%s: Σparent.calls", s.Self.Name)
		require.Equal(t, s.Self.Base, pb, "%s: Σparent.base", s.Self.Name)
		require.Equal(t, s.Self.Cum, pcum, "%s: Σparent.cum", s.Self.Name)
		want := slices.Clone(s.Self.Cum)
		subVec(want, s.Self.Base)
		require.Equal(t, want, ccum, "%s: Σchild.cum = self.cum − self.base", s.Self.Name)
		for i := range k {
			require.LessOrEqual(t, s.Self.Cum[i], a.Total[i], "%s: cum ≤ total", s.Self.Name)
		}
		addVec(base, s.Self.Base)
	}
	require.Equal(t, a.Total, base, "Σ self.base = total")
}

// bruteSelf computes a method's self line from the definitions: cum over
// the contexts with no same-named ancestor.
func bruteSelf(p *Profile, name string, k int) ArcLine {
	l := ArcLine{Name: name, Base: make([]uint64, k), Cum: make([]uint64, k)}
	val := func(n *Node, i int) uint64 {
		if len(p.Metrics) == 0 {
			return n.Calls
		}
		return at0(n.Base, i)
	}
	var cum func(n *Node, i int) uint64
	cum = func(n *Node, i int) uint64 {
		c := val(n, i)
		for _, ch := range n.Children {
			c += cum(ch, i)
		}
		return c
	}
	var rec func(n *Node, inside bool)
	rec = func(n *Node, inside bool) {
		if n.Name == name {
			l.Calls += n.Calls
			for i := range k {
				l.Base[i] += val(n, i)
				if !inside {
					l.Cum[i] += cum(n, i)
				}
			}
		}
		for _, c := range n.Children {
			rec(c, inside || n.Name == name)
		}
	}
	for _, t := range p.Threads {
		rec(t, false)
	}
	return l
}

func TestXArcInvariantsRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for i := range 300 {
		p := randomTree(rng, i%3)
		a := NewArcflow(p)
		checkInvariants(t, a)
		k := len(a.Metrics)
		for _, s := range a.Stanzas {
			require.Equal(t, bruteSelf(p, s.Self.Name, k), s.Self, "tree %d", i)
		}
		x := a.XProf()
		require.Len(t, x, len(a.Stanzas))
		require.True(t, slices.IsSortedFunc(x, func(a, b ArcLine) int { return cmp.Compare(b.Base[0], a.Base[0]) }))
	}
}

func TestArcflowGolden(t *testing.T) {
	for _, k := range []int{0, 1, 2} {
		p := hellop(k)
		for _, r := range []struct {
			name  string
			write func(*bytes.Buffer, *Profile) error
		}{
			{"xtree", func(b *bytes.Buffer, p *Profile) error { return WriteXTree(b, p) }},
			{"xarc", func(b *bytes.Buffer, p *Profile) error { return WriteXArc(b, p) }},
			{"xprof", func(b *bytes.Buffer, p *Profile) error { return WriteXProf(b, p) }},
		} {
			t.Run(fmt.Sprintf("%s %d metrics", r.name, k), func(t *testing.T) {
				var b bytes.Buffer
				require.NoError(t, r.write(&b, p))
				golden(t, fmt.Sprintf("%s_%d.golden", r.name, k), b.Bytes())
			})
		}
	}
}

func TestPruneExample(t *testing.T) {
	p := acTest()
	q := Prune(p, 25) // keep cum ≥ 2.5 of 10
	// The C leaves are each the only node folded under their parent: a
	// <pruned> row in their place would hide the name and save nothing.
	// X's three leaves fold into one.
	want := oneMetric(
		tn("AC_test_pidtid", 0, 0,
			tn("Main", 1, 0,
				tn("A", 1, 1,
					tn("B", 2, 2,
						tn("C", 1, 1))),
				tn("B", 1, 1,
					tn("A", 1, 1,
						tn("C", 1, 1),
						tn("X", 1, 0,
							tn(PrunedName, 3, 3)))))))
	require.NoError(t, Compare(want, q, CompareOptions{IgnoreDelta: true, IgnoreDSIN: true}))
	require.True(t, Equal(acTest(), p), "the input is not modified")
}

func cloneProfile(p *Profile) *Profile {
	return Prune(p, 0) // prunes nothing: cum ≥ 0 always
}

func TestPruneProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for i := range 300 {
		p := randomTree(rng, i%3)
		orig := cloneProfile(p)
		require.True(t, Equal(p, orig))
		pct := []float64{0, 0.5, 1, 2, 5, 10, 25, 50, 99, 100}[i%10]
		q := Prune(p, pct)
		require.True(t, Equal(p, orig), "tree %d: input modified", i)

		// Every total is kept.
		require.Equal(t, totals(p), totals(q), "tree %d pct %v", i, pct)

		// Kept nodes are above the threshold, on the hot path, or lone
		// leaves, and match the input's nodes in order; each parent has
		// at most one <pruned> child, a leaf.
		a := NewArcflow(p)
		limit := pct / 100 * float64(a.Total[0])
		hot := hottest(q)
		var match func(o, n *Node, depth int)
		match = func(o, n *Node, depth int) {
			require.Equal(t, o.Name, n.Name)
			if depth > 0 && float64(subtreeCum(q.Metrics, n)) < limit && !holds(n, hot) {
				require.Empty(t, n.Children, "tree %d: kept %s below the limit, not on the hot path, not a leaf", i, n.Name)
			}
			j, pruned := 0, 0
			for _, c := range n.Children {
				if c.Name == PrunedName {
					pruned++
					require.Empty(t, c.Children)
					continue
				}
				for j < len(o.Children) && o.Children[j].Name != c.Name {
					j++
				}
				require.Less(t, j, len(o.Children), "tree %d: %s is not a child of %s in the input", i, c.Name, o.Name)
				require.Equal(t, o.Children[j].Calls, c.Calls)
				match(o.Children[j], c, depth+1)
				j++
			}
			require.LessOrEqual(t, pruned, 1)
		}
		require.Len(t, q.Threads, len(p.Threads))
		for ti := range p.Threads {
			match(p.Threads[ti], q.Threads[ti], 0)
		}
		checkInvariants(t, NewArcflow(q))

		// Pruning again at the same threshold changes nothing.
		require.NoError(t, Compare(q, Prune(q, pct), CompareOptions{}), "tree %d", i)
		// And the result is a valid log-rt.
		var b bytes.Buffer
		require.NoError(t, WriteLogRT(&b, q))
		r, err := ParseLogRT(&b)
		require.NoError(t, err)
		require.True(t, Equal(q, r))
	}
}

// hottest is the node with the most own measure (first metric, or
// calls), not a <pruned>, first in depth-first order.
func hottest(p *Profile) *Node {
	var best *Node
	var bv uint64
	own := func(n *Node) uint64 {
		if len(p.Metrics) > 0 {
			return at0(n.Base, 0)
		}
		return n.Calls
	}
	for _, th := range p.Threads {
		th.Walk(func(n *Node, d int) {
			if d > 0 && n.Name != PrunedName && (best == nil || own(n) > bv) {
				best, bv = n, own(n)
			}
		})
	}
	return best
}

// holds says whether x is n or below it.
func holds(n, x *Node) bool {
	found := false
	n.Walk(func(m *Node, _ int) { found = found || m == x })
	return found
}

// subtreeCum is a node's cum in the first report metric.
func subtreeCum(metrics []Metric, n *Node) uint64 {
	c := n.Calls
	if len(metrics) > 0 {
		c = at0(n.Base, 0)
	}
	for _, ch := range n.Children {
		c += subtreeCum(metrics, ch)
	}
	return c
}
