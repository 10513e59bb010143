package reports

import (
	"flag"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got), "%s differs; run go test -update if the change is intended", path)
}

var testMetrics = []Metric{
	{Name: "PTT_TIME", Unit: "ns", Calibrated: true},
	{Name: "PTT_INSTS", Unit: "instructions"},
}

// n builds a node whose values are derived from seed, for k metrics.
func n(name string, calls uint64, k int, seed uint64, children ...*Node) *Node {
	nd := &Node{Name: name, Calls: calls, Children: children}
	if k > 0 {
		nd.DS, nd.IN = seed%7, seed%3
	}
	for i := range k {
		nd.Base = append(nd.Base, seed*uint64(10+i*990))
		nd.Delta = append(nd.Delta, seed*uint64(3+i))
	}
	return nd
}

// hellop is seed 000's example (main calls myA 1000 times, myA calls
// myC) plus a second thread whose name has a space and an exit without an
// entry, with k metrics.
func hellop(k int) *Profile {
	p := &Profile{
		PID:     4242,
		Seq:     1,
		Metrics: testMetrics[:k],
		Notes:   []string{"PTT backend: ebpf", "calibration: trained table hotspot17-x86_64"},
		Threads: []*Node{
			n("0000b718_main", 0, k, 1,
				n("J:hellop.main([Ljava/lang/String;)V", 1, k, 50,
					n("J:hellop.myA()V", 1000, k, 11,
						n("J:hellop.myC()V", 1000, k, 7004)),
					n("I:java/lang/StringBuffer.<init>()V", 1, k, 9,
						n("I:java/lang/Object.<init>()V", 1, k, 3)),
					n("N:java/io/PrintStream.println(Ljava/lang/String;)V", 1, k, 120))),
			n("0000b71c_Reference Handler", 0, k, 2,
				n("O:java/lang/ref/Reference.waitForReferencePendingList()V", 1, k, 0),
				n("I:java/lang/ref/Reference.processPendingReferences()V", 3, k, 17,
					n("n:java/lang/Object.notifyAll()V", 2, k, 5))),
		},
	}
	return p
}

// randomTree returns a random profile with k metrics, recursion (names
// drawn from a small set, so they repeat along paths) and several threads.
func randomTree(rng *rand.Rand, k int) *Profile {
	p := &Profile{PID: rng.Intn(1 << 16), Metrics: testMetrics[:k]}
	names := []string{"J:a()V", "J:b()V", "I:c()V", "J:fib(I)I", "n:d()V", "I:e()V"}
	var grow func(depth int) *Node
	grow = func(depth int) *Node {
		nd := &Node{Name: names[rng.Intn(len(names))], Calls: uint64(1 + rng.Intn(50))}
		if k > 0 {
			nd.DS, nd.IN = uint64(rng.Intn(5)), uint64(rng.Intn(5))
		}
		for range k {
			v := uint64(0)
			if rng.Intn(4) > 0 {
				v = uint64(rng.Intn(10000))
			}
			nd.Base = append(nd.Base, v)
			nd.Delta = append(nd.Delta, uint64(rng.Intn(100)))
		}
		if depth < 7 {
			// Siblings have distinct names: a context is unique.
			for _, j := range rng.Perm(len(names))[:rng.Intn(4)] {
				c := grow(depth + 1)
				c.Name = names[j]
				nd.Children = append(nd.Children, c)
			}
		}
		return nd
	}
	for i := range 1 + rng.Intn(3) {
		root := grow(1)
		root.Name = []string{"0000b718_main", "0000b71c_worker 1", "0000b720_worker 2"}[i]
		root.Calls = 0
		p.Threads = append(p.Threads, root)
	}
	return p
}

// walk calls f for every node of p with its depth.
func walk(p *Profile, f func(n *Node, depth int)) {
	var rec func(n *Node, d int)
	rec = func(n *Node, d int) {
		f(n, d)
		for _, c := range n.Children {
			rec(c, d+1)
		}
	}
	for _, t := range p.Threads {
		rec(t, 0)
	}
}

// totals sums calls, each metric's base and delta, DS and IN over p.
type totalsT struct {
	Calls, DS, IN uint64
	Base, Delta   []uint64
}

func totals(p *Profile) totalsT {
	k := len(p.Metrics)
	t := totalsT{Base: make([]uint64, k), Delta: make([]uint64, k)}
	walk(p, func(n *Node, _ int) {
		t.Calls += n.Calls
		t.DS += n.DS
		t.IN += n.IN
		for i := range k {
			t.Base[i] += at0(n.Base, i)
			t.Delta[i] += at0(n.Delta, i)
		}
	})
	return t
}
