package reports

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRename: a method's frames of different types merge into one, with
// their values summed and their children merged too; thread roots stay
// apart; the profile given is not changed.
func TestRename(t *testing.T) {
	p := &Profile{PID: 1, Metrics: testMetrics[:1], Threads: []*Node{
		{Name: "00000001_main", Base: []uint64{5}, Children: []*Node{
			{Name: "J:a/B.f(I)V", Calls: 3, Base: []uint64{30}, Delta: []uint64{3}, DS: 1, IN: 2, Children: []*Node{
				{Name: "J:a/B.g()V", Calls: 3, Base: []uint64{9}},
			}},
			{Name: "J:a/B.f(J)V", Calls: 1, Base: []uint64{1}},
			{Name: "I:a/B.f(I)V", Calls: 2, Base: []uint64{20}, Delta: []uint64{2}, DS: 4, IN: 8, Children: []*Node{
				{Name: "I:a/B.h()V", Calls: 1, Base: []uint64{7}},
				{Name: "I:a/B.g()V", Calls: 2, Base: []uint64{6}},
			}},
		}},
		{Name: "00000002_main", Children: []*Node{{Name: "n:a/B.f(I)V", Calls: 1, Base: []uint64{1}}}},
	}}
	var before bytes.Buffer
	require.NoError(t, WriteLogRT(&before, p))

	q, types := rename(p, JavaNames, true)
	require.Len(t, q.Threads, 2)
	main := q.Threads[0]
	assert.Equal(t, "00000001_main", main.Name)
	assert.Equal(t, []uint64{5}, main.Base)
	require.Len(t, main.Children, 2)
	f := main.Children[0]
	assert.Equal(t, &Node{Name: "a.B.f(int)", Calls: 5, Base: []uint64{50}, Delta: []uint64{5}, DS: 5, IN: 10, Children: []*Node{
		{Name: "a.B.g()", Calls: 5, Base: []uint64{15}},
		{Name: "a.B.h()", Calls: 1, Base: []uint64{7}},
	}}, f)
	assert.Equal(t, "a.B.f(long)", main.Children[1].Name)
	assert.Equal(t, "a.B.f(int)", q.Threads[1].Children[0].Name)
	assert.Equal(t, "JIn", types["a.B.f(int)"], "the types of a name in the order seen")
	assert.Equal(t, "", types["00000001_main"])

	var after bytes.Buffer
	require.NoError(t, WriteLogRT(&after, p))
	assert.Equal(t, before.String(), after.String(), "the profile given is not changed")
	assert.Same(t, p, Rename(p, JVMNames))
	_, types = rename(p, JVMNames, true)
	assert.Equal(t, "I", types["I:a/B.f(I)V"])

	// The merged profile keeps the xarc invariants (checked by the
	// arcflow's own tests) and every total.
	tot := func(p *Profile) (calls, base uint64) {
		for _, th := range p.Threads {
			th.Walk(func(n *Node, _ int) { calls += n.Calls; base += at0(n.Base, 0) })
		}
		return
	}
	c1, b1 := tot(p)
	c2, b2 := tot(q)
	assert.Equal(t, c1, c2)
	assert.Equal(t, b1, b2)
}

// TestRenameManyKids: a node with more children than a scan serves, some
// of them one method in two types.
func TestRenameManyKids(t *testing.T) {
	th := &Node{Name: "00000001_main"}
	for i := range 40 {
		th.Children = append(th.Children, &Node{Name: fmt.Sprintf("J:a/B.f%d()V", i%25), Calls: 1})
	}
	for i := range 40 {
		th.Children = append(th.Children, &Node{Name: fmt.Sprintf("I:a/B.f%d()V", i%30), Calls: 1})
	}
	q := Rename(&Profile{Threads: []*Node{th}}, JavaNames)
	kids := q.Threads[0].Children
	require.Len(t, kids, 30)
	for i, k := range kids {
		assert.Equal(t, fmt.Sprintf("a.B.f%d()", i), k.Name)
	}
	var calls uint64
	for _, k := range kids {
		calls += k.Calls
	}
	assert.Equal(t, uint64(80), calls)
	assert.Equal(t, uint64(2+2), kids[0].Calls, "f0: twice in each type")
}

// BenchmarkRename renames a deep and wide tree of many methods.
func BenchmarkRename(b *testing.B) {
	p := randomBig(200000)
	b.ResetTimer()
	for range b.N {
		Rename(p, JavaNames)
	}
}

// randomBig is a profile of about n nodes with realistic method names.
func randomBig(n int) *Profile {
	rng := rand.New(rand.NewSource(1))
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("%c:pkg%d/sub/Class%d.method%d(ILjava/lang/String;[J)V", "IJij"[rng.Intn(4)], i%50, i%700, i)
	}
	root := &Node{Name: "00000001_main"}
	nodes := []*Node{root}
	for len(nodes) < n {
		parent := nodes[rng.Intn(len(nodes))]
		c := &Node{Name: names[rng.Intn(len(names))], Calls: 1, Base: []uint64{10}}
		parent.Children = append(parent.Children, c)
		nodes = append(nodes, c)
	}
	return &Profile{Metrics: testMetrics[:1], Threads: []*Node{root}}
}
