package pccttest

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ref is the tree the samples make, computed the obvious way: per path
// from the root, the samples that had it on the stack and the weight of
// those that had it on top.
type ref struct {
	calls, base map[string]uint64
	names       map[uint32]string
}

func newRef(names map[uint32]string) ref {
	return ref{map[string]uint64{}, map[string]uint64{}, names}
}

func (r ref) add(leaf []uint32, w uint64) {
	key := ""
	for i := len(leaf) - 1; i >= 0; i-- {
		key += "/" + r.names[leaf[i]]
		r.calls[key]++
	}
	r.base[key] += w
}

// paths turns the C tree into the same path keys, leaving out the
// contexts with no samples (the reports do too) and those under the
// limit node.
func paths(t *testing.T, nodes []Node, names map[uint32]string) ref {
	got := newRef(names)
	key := make([]string, len(nodes))
	for i := 1; i < len(nodes); i++ {
		n := nodes[i]
		require.Less(t, n.Parent, i, "a parent comes before its children")
		key[i] = key[n.Parent] + "/" + names[n.Method]
		if n.Calls == 0 || strings.HasPrefix(key[i], "/<limit>") {
			continue
		}
		got.calls[key[i]] = n.Calls
		if n.Base != 0 {
			got.base[key[i]] = n.Base
		}
	}
	return got
}

func setup(t *testing.T, maxNodes, depth int) {
	runtime.LockOSThread()
	require.NoError(t, Setup(maxNodes, depth))
	t.Cleanup(func() {
		Done()
		runtime.UnlockOSThread()
	})
}

func methods(n int) ([]uint32, map[uint32]string) {
	hs := make([]uint32, n)
	names := map[uint32]string{Limit(): "<limit>"}
	for i := range hs {
		hs[i] = Method("m")
		names[hs[i]] = string(rune('a'+uint32(i)%26)) + string(rune('0'+uint32(i)/26))
	}
	return hs, names
}

func TestSampleMeanings(t *testing.T) {
	setup(t, 64, 16)
	hs, _ := methods(4)
	a, b, c, d := hs[0], hs[1], hs[2], hs[3]
	for i := 0; i < 3; i++ {
		Add([]uint32{c, b, a}, 10)
	}
	Add([]uint32{b, a}, 5)
	Add([]uint32{d, a}, 7)
	Add([]uint32{d, a}, 7)
	nodes := Nodes()
	byPath := map[[2]uint32]Node{}
	for _, n := range nodes[2:] { // 0: root, 1: limit node
		byPath[[2]uint32{nodes[n.Parent].Method, n.Method}] = n
	}
	assert.Len(t, nodes, 2+4, "a, a/b, a/b/c, a/d")
	rootA := nodes[2]
	assert.Equal(t, Node{Parent: 0, Method: a, Calls: 6, Base: 0}, rootA, "a is on the stack in every sample, never on top")
	assert.Equal(t, uint64(4), byPath[[2]uint32{a, b}].Calls)
	assert.Equal(t, uint64(5), byPath[[2]uint32{a, b}].Base)
	assert.Equal(t, uint64(3), byPath[[2]uint32{b, c}].Calls)
	assert.Equal(t, uint64(30), byPath[[2]uint32{b, c}].Base)
	assert.Equal(t, uint64(2), byPath[[2]uint32{a, d}].Calls)
	assert.Equal(t, uint64(14), byPath[[2]uint32{a, d}].Base)
	samples, limited, events := Counters()
	assert.Equal(t, uint64(6), samples)
	assert.Zero(t, limited)
	assert.Equal(t, uint64(6), events)
}

// Random stacks, consecutive ones often sharing their outer frames (the
// prefix the tree update reuses): the C tree matches the reference.
func TestSampleRandomStacks(t *testing.T) {
	setup(t, 1<<14, 32)
	all, names := methods(8)
	hs, lone := all[:6], all[6:] // lone: pseudo-frames, alone on their stack
	want := newRef(names)
	rng := rand.New(rand.NewSource(1))
	var stack []uint32 // root first
	for i := 0; i < 20000; i++ {
		// Now and then a stack the walker could not walk: a lone
		// pseudo-frame between two samples of the running program.
		if rng.Intn(8) == 0 {
			leaf := []uint32{lone[rng.Intn(len(lone))]}
			w := uint64(1 + rng.Intn(1000))
			require.False(t, Add(leaf, w))
			want.add(leaf, w)
			continue
		}
		// Pop a few frames, push a few: like a running program.
		stack = stack[:rng.Intn(len(stack)+1)]
		for k := rng.Intn(4); k > 0 && len(stack) < 12; k-- {
			stack = append(stack, hs[rng.Intn(len(hs))])
		}
		if len(stack) == 0 {
			stack = append(stack, hs[0])
		}
		leaf := make([]uint32, len(stack))
		for j := range stack {
			leaf[len(stack)-1-j] = stack[j]
		}
		w := uint64(1 + rng.Intn(1000))
		require.False(t, Add(leaf, w))
		want.add(leaf, w)
	}
	got := paths(t, Nodes(), names)
	assert.Equal(t, want.calls, got.calls)
	assert.Equal(t, want.base, got.base)
}

// Past the capacity a sample goes whole to the limit node: no context
// shows samples that were not all its own, and none is lost.
func TestSampleNodeLimit(t *testing.T) {
	const maxNodes = 40
	setup(t, maxNodes, 16)
	hs, names := methods(8)
	rng := rand.New(rand.NewSource(2))
	want := newRef(names)
	var total, limitW uint64
	nlimited := 0
	for i := 0; i < 5000; i++ {
		leaf := make([]uint32, 1+rng.Intn(6))
		for j := range leaf {
			leaf[j] = hs[rng.Intn(len(hs))]
		}
		w := uint64(1 + rng.Intn(100))
		total += w
		if Add(leaf, w) {
			nlimited++
			limitW += w
		} else {
			want.add(leaf, w)
		}
	}
	nodes := Nodes()
	assert.LessOrEqual(t, len(nodes), maxNodes)
	require.NotZero(t, nlimited, "the capacity was never reached")
	lim := nodes[1]
	assert.Equal(t, Limit(), lim.Method)
	assert.Equal(t, uint64(nlimited), lim.Calls)
	assert.Equal(t, limitW, lim.Base)
	samples, limited, _ := Counters()
	assert.Equal(t, uint64(5000), samples)
	assert.Equal(t, uint64(nlimited), limited)
	got := paths(t, nodes, names)
	assert.Equal(t, want.calls, got.calls)
	assert.Equal(t, want.base, got.base)
	var sum uint64
	for _, n := range nodes {
		sum += n.Base
	}
	assert.Equal(t, total, sum, "every sample's weight is somewhere")
}

// Past its first JP_PCCT_FIRST (16384) nodes a tree grows, in the
// "handler" (mmap, the map moved to a larger one), up to its maximum; the
// tree stays the reference's through every move, and past the maximum
// samples go to the limit node as before.
func TestSampleTreeGrows(t *testing.T) {
	for _, c := range []struct {
		max     int
		limited bool
	}{{1 << 17, false}, {20000, true}} {
		t.Run(fmt.Sprint(c.max), func(t *testing.T) {
			setup(t, c.max, 16)
			hs, names := methods(200)
			rng := rand.New(rand.NewSource(3))
			want := newRef(names)
			nlimited := 0
			for i := 0; i < 30000; i++ {
				leaf := make([]uint32, 2+rng.Intn(8))
				for j := range leaf {
					leaf[j] = hs[rng.Intn(len(hs))]
				}
				if Add(leaf, 1) {
					nlimited++
				} else {
					want.add(leaf, 1)
				}
			}
			nodes := Nodes()
			assert.Greater(t, len(nodes), 16384, "the tree did not grow past its first storage")
			assert.LessOrEqual(t, len(nodes), c.max)
			assert.Equal(t, c.limited, nlimited > 0, "%d samples to the limit node with %d nodes", nlimited, len(nodes))
			got := paths(t, nodes, names)
			assert.Equal(t, want.calls, got.calls)
			assert.Equal(t, want.base, got.base)
		})
	}
}
