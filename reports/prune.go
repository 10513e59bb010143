package reports

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
// parent's CEE then includes the calls made inside the removed subtrees.
// Thread roots are always kept. p is not modified.
func Prune(p *Profile, pct float64) *Profile {
	q := *p
	q.Metrics = append([]Metric(nil), p.Metrics...)
	q.Notes = append([]string(nil), p.Notes...)
	q.Threads = make([]*Node, len(p.Threads))
	k := len(p.Metrics)
	measure := func(n *Node) uint64 {
		if k == 0 {
			return n.Calls
		}
		return at0(n.Base, 0)
	}
	cums := map[*Node]uint64{}
	var cum func(n *Node) uint64
	cum = func(n *Node) uint64 {
		c := measure(n)
		for _, ch := range n.Children {
			c += cum(ch)
		}
		cums[n] = c
		return c
	}
	var total uint64
	for _, t := range p.Threads {
		total += cum(t)
	}
	limit := pct / 100 * float64(total)
	keep := func(n *Node) bool { return float64(cums[n]) >= limit }

	var cp func(n *Node) *Node
	cp = func(n *Node) *Node {
		m := copyNode(n, k)
		var pruned *Node
		for _, c := range n.Children {
			if keep(c) {
				m.Children = append(m.Children, cp(c))
				continue
			}
			if pruned == nil {
				pruned = &Node{Name: PrunedName}
				if k > 0 {
					pruned.Base, pruned.Delta = make([]uint64, k), make([]uint64, k)
				}
			}
			fold(pruned, c, k)
		}
		if pruned == nil {
			return m
		}
		for _, c := range m.Children {
			if c.Name == PrunedName && len(c.Children) == 0 {
				fold(c, pruned, k)
				return m
			}
		}
		m.Children = append(m.Children, pruned)
		return m
	}
	for i, t := range p.Threads {
		q.Threads[i] = cp(t)
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

// fold adds the totals of the subtree n into dst.
func fold(dst, n *Node, k int) {
	dst.Calls += n.Calls
	dst.DS += n.DS
	dst.IN += n.IN
	for i := range k {
		dst.Base[i] += at0(n.Base, i)
		dst.Delta[i] += at0(n.Delta, i)
	}
	for _, c := range n.Children {
		fold(dst, c, k)
	}
}
