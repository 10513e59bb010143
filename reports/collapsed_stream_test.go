package reports

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collapsedByMap is WriteCollapsed as it was before it streamed: every
// stack's text in a map, written at the end in first-seen order. It is
// the reference the streaming one must agree with.
func collapsedByMap(w io.Writer, p *Profile, o CollapsedOptions) error {
	v, err := SelectValue(p, o.Value)
	if err != nil {
		return err
	}
	stack := p.StackCounts() != ""
	p = Rename(p, o.Names)
	sums := map[string]uint64{}
	var order []string
	add := func(stack string, val uint64) {
		if _, ok := sums[stack]; !ok {
			order = append(order, stack)
		}
		sums[stack] += val
	}
	var frames []string
	var walk func(n *Node)
	walk = func(n *Node) {
		frames = append(frames, collapsedFrame(n.Name))
		if val := selfValue(n, v, stack); val != 0 {
			add(strings.Join(frames, ";"), val)
		}
		for _, c := range n.Children {
			walk(c)
		}
		frames = frames[:len(frames)-1]
	}
	for _, th := range p.Threads {
		if !o.MergeThreads {
			walk(th)
			continue
		}
		if val := selfValue(th, v, stack); val != 0 {
			add(ThreadFrame, val)
		}
		for _, c := range th.Children {
			walk(c)
		}
	}
	bw := bufio.NewWriter(w)
	for _, s := range order {
		fmt.Fprintf(bw, "%s %d\n", s, sums[s])
	}
	return bw.Flush()
}

// typedTree is a random tree whose siblings may be one method in several
// types (merged in the java and short forms), whose names have ';' (and
// two that differ only in ';' against ','), and, sampled, whose CALLS
// count the samples with the context on the stack, some nodes fewer than
// their children's.
func typedTree(rng *rand.Rand, k int, sampled bool) *Profile {
	p := &Profile{Metrics: testMetrics[:k]}
	if sampled {
		p.Notes = []string{"CALLS = samples with this context on the stack"}
	}
	names := []string{"J:p/A.f()V", "I:p/A.f()V", "n:p/A.f()V", "J:p/B.g(Ljava/lang/String;)V", "I:q/B.g(I)V",
		"J:p/C.h(Lp/X;)V", "J:p/C.h(Lp/X,)V", "I:p/C.<init>()V", "J:fib(I)I"}
	var grow func(depth int) *Node
	grow = func(depth int) *Node {
		nd := &Node{Calls: uint64(rng.Intn(40))}
		for range k {
			nd.Base = append(nd.Base, uint64(rng.Intn(3))*uint64(rng.Intn(1000)))
		}
		if depth < 6 {
			for _, j := range rng.Perm(len(names))[:rng.Intn(5)] {
				c := grow(depth + 1)
				c.Name = names[j]
				nd.Children = append(nd.Children, c)
			}
		}
		return nd
	}
	for i := range 1 + rng.Intn(4) {
		root := grow(1)
		root.Name = []string{"0000b718_main", "0000b71c_w;1", "0000b720_w,1", "0000b718_main"}[i]
		p.Threads = append(p.Threads, root)
	}
	return p
}

// The streaming WriteCollapsed writes the lines the map-based one did,
// each stack once with the same sum; in the same order where no two
// lines were summed across threads or across names that read alike.
func TestWriteCollapsedAsBefore(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for i := range 300 {
		p := typedTree(rng, rng.Intn(2), rng.Intn(2) == 0)
		for _, o := range []CollapsedOptions{
			{}, {Names: JVMNames}, {Names: ShortNames}, {Value: "calls"}, {Value: "calls", Names: JVMNames},
			{MergeThreads: true}, {MergeThreads: true, Names: JVMNames}, {MergeThreads: true, Value: "calls"},
		} {
			var want, got bytes.Buffer
			require.NoError(t, collapsedByMap(&want, p, o))
			require.NoError(t, WriteCollapsed(&got, p, o))
			wl := strings.Split(want.String(), "\n")
			gl := strings.Split(got.String(), "\n")
			slices.Sort(wl)
			slices.Sort(gl)
			require.Equal(t, wl, gl, "tree %d %+v", i, o)
		}
	}
	// One thread, java names (no ';' left to read alike): the same bytes.
	for range 100 {
		p := typedTree(rng, 1, false)
		p.Threads = p.Threads[:1]
		var want, got bytes.Buffer
		require.NoError(t, collapsedByMap(&want, p, CollapsedOptions{}))
		require.NoError(t, WriteCollapsed(&got, p, CollapsedOptions{}))
		require.Equal(t, want.String(), got.String())
	}
}

// WriteCollapsed's memory is bounded by the tree's depth, not by the
// text of every stack: a recursion 4,000 deep (the map-based writer held
// 4,000 lines of up to 4,000 frames, over 100 MB) allocates little more
// than one stack's text.
func TestWriteCollapsedMemory(t *testing.T) {
	const depth = 4000
	root := &Node{Name: "0000b718_main"}
	n := root
	for range depth {
		c := &Node{Name: "J:p/Rec.down(I)V", Calls: 1, Base: []uint64{7}}
		n.Children = []*Node{c}
		n = c
	}
	p := &Profile{Metrics: testMetrics[:1], Threads: []*Node{root}}
	var cw lineCounter
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	require.NoError(t, WriteCollapsed(&cw, p, CollapsedOptions{}))
	runtime.ReadMemStats(&after)
	assert.Equal(t, depth, cw.lines)
	alloc := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(8<<20), "allocated %d bytes for %d lines of %d bytes in all", alloc, cw.lines, cw.bytes)
}

type lineCounter struct{ lines, bytes int }

func (w *lineCounter) Write(b []byte) (int, error) {
	w.lines += bytes.Count(b, []byte{'\n'})
	w.bytes += len(b)
	return len(b), nil
}
