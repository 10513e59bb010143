package reports

import "slices"

// PrunedName is the name of the node that stands for the subtrees Prune
// removed under a parent.
const PrunedName = "<pruned>"

// Prune returns a copy of p without the subtrees whose cum is below pct
// percent of the total, measured with the first metric, or with calls
// when p has none (a node's cum is then the calls in its subtree).
//
// As the seed notes, a node's cum is never more than its parent's, so
// removing every node below a threshold only cuts whole branches and the
// tree stays coherent. What the removed subtrees held is not dropped:
// under each parent that lost children, one leaf named [PrunedName] (at
// the end of the children, merged with an existing one) holds the sums
// over every removed node of Calls, Base, Delta, DS and IN. So every
// total of the profile (calls, each metric, deltas, dispatches,
// interrupts) stays the same, and the xarc invariants still hold. The
// parent's CEE then includes the calls made inside the removed subtrees,
// at every depth: a <pruned> row's CALLS can be more than its parent's.
// In a sampled tree (CALLS: samples with the context on the stack, see
// [Profile.StackCounts]) a <pruned> row's CALLS are those of the removed
// subtrees' roots, the samples with a removed context on the stack, and
// never more than its parent's.
// Thread roots are always kept. p is not modified.
//
// Two kinds of node are kept below the threshold, because folding them
// would hide what the user looks for and save nothing: the hot path (the
// node with the most own measure, not itself a <pruned>, and its
// callers), and a leaf that would be the only node folded under its
// parent (a <pruned> row in its place would be the same size, and
// nameless). Pruning a pruned profile again at the same threshold
// changes nothing.
func Prune(p *Profile, pct float64) *Profile {
	q := *p
	q.Metrics = append([]Metric(nil), p.Metrics...)
	q.Notes = append([]string(nil), p.Notes...)
	q.Threads = make([]*Node, 0, len(p.Threads))
	k := len(p.Metrics)
	// flatten's first cum is the measure: the first metric, or calls.
	f := flatten(p)
	cum := func(j int) uint64 { return f.cum[j*f.k] }
	var total uint64
	for j, par := range f.parent {
		if par < 0 {
			total += cum(j)
		}
	}
	limit := pct / 100 * float64(total)
	keep := keepBelow(f, limit)
	// A sampled tree's CALLS count samples with the context on the stack:
	// a removed subtree's root already counts every sample below it.
	onStack := p.StackCounts() != ""

	// One pass in depth-first order, parents before children, without
	// recursion (trees can be as deep as a recursion). copies[j] is the
	// copy of a kept node; into[j] the <pruned> node that holds a removed
	// one; pruned[j] the <pruned> node gathering kept node j's removed
	// children.
	copies := make([]*Node, len(f.nodes))
	into := make([]*Node, len(f.nodes))
	pruned := make([]*Node, len(f.nodes))
	var lost []int // kept nodes that lost children, in order
	for j, n := range f.nodes {
		par := f.parent[j]
		switch {
		case par < 0:
			copies[j] = copyNode(n, k)
			q.Threads = append(q.Threads, copies[j])
		case copies[par] != nil && (float64(cum(j)) >= limit || keep[j]):
			copies[j] = copyNode(n, k)
			copies[par].Children = append(copies[par].Children, copies[j])
		case copies[par] != nil:
			if pruned[par] == nil {
				pruned[par] = &Node{Name: PrunedName}
				if k > 0 {
					pruned[par].Base, pruned[par].Delta = make([]uint64, k), make([]uint64, k)
				}
				lost = append(lost, int(par))
			}
			into[j] = pruned[par]
			addOwn(into[j], n, k, true)
		default:
			into[j] = into[par]
			addOwn(into[j], n, k, !onStack)
		}
	}
	// Each <pruned> goes last among its parent's children, or into a
	// childless <pruned> child kept from an earlier pruning.
	for _, par := range lost {
		m, pn := copies[par], pruned[par]
		i := slices.IndexFunc(m.Children, func(c *Node) bool { return c.Name == PrunedName && len(c.Children) == 0 })
		if i >= 0 {
			addOwn(m.Children[i], pn, k, true)
		} else {
			m.Children = append(m.Children, pn)
		}
	}
	return &q
}

// copyNode copies n without its children, with Base and Delta of length k.
func copyNode(n *Node, k int) *Node {
	m := &Node{Name: n.Name, Calls: n.Calls, DS: n.DS, IN: n.IN}
	if k > 0 {
		m.Base, m.Delta = make([]uint64, k), make([]uint64, k)
		for i := range k {
			m.Base[i], m.Delta[i] = at0(n.Base, i), at0(n.Delta, i)
		}
	}
	return m
}

// addOwn adds n's own values, not its children's, into dst; its calls
// only if calls.
func addOwn(dst, n *Node, k int, calls bool) {
	if calls {
		dst.Calls += n.Calls
	}
	dst.DS += n.DS
	dst.IN += n.IN
	for i := range k {
		dst.Base[i] += at0(n.Base, i)
		dst.Delta[i] += at0(n.Delta, i)
	}
}

// keepBelow marks the nodes Prune keeps although their cum is below
// limit: the hot path, and lone leaves (see Prune).
func keepBelow(f *flatTree, limit float64) []bool {
	n := len(f.nodes)
	keep := make([]bool, n)
	hot := -1
	for j := range n {
		if f.parent[j] >= 0 && f.nodes[j].Name != PrunedName && (hot < 0 || f.base[j*f.k] > f.base[hot*f.k]) {
			hot = j
		}
	}
	for j := hot; j >= 0; j = int(f.parent[j]) {
		keep[j] = true
	}
	// size[j] is the number of nodes in j's subtree; folded[p] how many
	// of p's children fall below the limit.
	size := make([]int, n)
	folded := make([]int, n)
	for j := n - 1; j >= 0; j-- {
		size[j]++
		if par := f.parent[j]; par >= 0 {
			size[par] += size[j]
			if float64(f.cum[j*f.k]) < limit && !keep[j] {
				folded[par]++
			}
		}
	}
	for j := range n {
		if par := f.parent[j]; par >= 0 && size[j] == 1 && folded[par] == 1 && f.nodes[j].Name != PrunedName {
			keep[j] = true
		}
	}
	return keep
}
