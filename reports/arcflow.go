package reports

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The arcflow reports of Alexander et al. (seed 001). For every metric a
// node has a base (what the method itself consumed in that context) and a
// cum (base plus everything below it). The reports need numbers even when
// the profile has no metrics (CALLTREE): they then use calls as the
// metric, so that a node's base is its calls and its cum the calls made in
// its whole subtree.
//
// xarc merges every context of a method, over all threads, into a stanza:
//
//	parents   calls, base, cum of this method when called by each parent
//	self      calls, base, cum of this method
//	children  calls, base, cum of each callee on behalf of this method
//
// with the invariants
//
//	Σ parent.calls = self.calls
//	Σ parent.base  = self.base
//	Σ parent.cum   = self.cum
//	Σ child.cum    = self.cum − self.base
//
// Recursion. A method's cum counts a context only when it is the
// outermost occurrence of the method on that context's path, so that in
// fib → fib → fib the inner calls, already inside the outer one's cum,
// are not counted again. A parent line's cum likewise sums only the
// outermost contexts called from that parent: a recursive arc (fib called
// by fib) has calls and base but cum 0. A child line's cum is what the
// child consumed on behalf of this method: everything below the child down
// to, not including, the next nested occurrence of this method, whose own
// children lines account for what lies below it. Every unit consumed
// under an outermost occurrence of a method, outside the method itself,
// is thus in exactly one child line, which is the fourth invariant; the
// same holds for mutual recursion (a → b → a → b).
//
// Thread roots have stanzas too; their parent is the pseudo-method
// "<spontaneous>" (as in gprof), which carries the root's own base so
// that the invariants hold for them as well. Top-level methods have their
// thread root as parent.

// Spontaneous is the name of the parent of thread roots in xarc.
const Spontaneous = "<spontaneous>"

// ArcLine is one line of an xarc stanza or of xprof.
type ArcLine struct {
	Name  string
	Calls uint64
	Base  []uint64 // per report metric
	Cum   []uint64
}

// Stanza is the xarc paragraph of one method.
type Stanza struct {
	Self     ArcLine
	Parents  []ArcLine // by cum of the first metric, descending
	Children []ArcLine // likewise
}

// Arcflow is a profile's call graph, merged per method.
type Arcflow struct {
	// Metrics are the report's metrics: the profile's, or a single
	// "CALLS" metric when it has none.
	Metrics []Metric
	Total   []uint64 // per metric, over all threads
	// Stanzas holds one stanza per method and thread root, by self cum of
	// the first metric, descending, then by name.
	Stanzas []Stanza
}

// reportMetrics returns the metrics reports are made of.
func reportMetrics(p *Profile) []Metric {
	if len(p.Metrics) == 0 {
		return []Metric{{Name: "CALLS", Unit: "calls"}}
	}
	return p.Metrics
}

// flatTree is a profile's nodes in depth-first order with what the
// reports need per node; value i of node j is at j*k+i.
type flatTree struct {
	k      int
	nodes  []*Node
	parent []int32 // -1 for a thread root
	depth  []int32
	base   []uint64
	cum    []uint64
}

func flatten(p *Profile) *flatTree {
	f := &flatTree{k: len(reportMetrics(p))}
	// path[d] is the index of the current node at depth d.
	var path []int32
	preorder(p.Threads, func(n *Node, depth int) error {
		path = append(path[:depth], int32(len(f.nodes)))
		parent := int32(-1)
		if depth > 0 {
			parent = path[depth-1]
		}
		f.nodes = append(f.nodes, n)
		f.parent = append(f.parent, parent)
		f.depth = append(f.depth, int32(depth))
		if len(p.Metrics) == 0 {
			f.base = append(f.base, n.Calls)
		} else {
			for i := range f.k {
				f.base = append(f.base, at0(n.Base, i))
			}
		}
		return nil
	})
	// Children follow their parent in depth-first order, so one backward
	// pass sums every subtree.
	f.cum = slices.Clone(f.base)
	for j := len(f.nodes) - 1; j >= 0; j-- {
		if par := f.parent[j]; par >= 0 {
			addVec(f.cum[int(par)*f.k:][:f.k], f.cum[j*f.k:][:f.k])
		}
	}
	return f
}

func (f *flatTree) vec(v []uint64, j int) []uint64 { return v[j*f.k:][:f.k] }

func addVec(dst, src []uint64) {
	for i, v := range src {
		dst[i] += v
	}
}

func subVec(dst, src []uint64) {
	for i, v := range src {
		dst[i] -= v
	}
}

// arcAcc accumulates an ArcLine.
type arcAcc struct {
	calls     uint64
	base, cum []uint64
}

func (a *arcAcc) line(name string) ArcLine {
	return ArcLine{Name: name, Calls: a.calls, Base: a.base, Cum: a.cum}
}

// NewArcflow merges the contexts of p per method, handling recursion as
// described at the top of this file.
func NewArcflow(p *Profile) *Arcflow {
	stack := p.StackCounts() != ""
	f := flatten(p)
	k := f.k
	a := &Arcflow{Metrics: reportMetrics(p), Total: make([]uint64, k)}
	for j, par := range f.parent {
		if par < 0 {
			addVec(a.Total, f.vec(f.cum, j))
		}
	}

	// Intern names; id 0 is the thread roots' pseudo-parent.
	ids := map[string]int32{Spontaneous: 0}
	names := []string{Spontaneous}
	nid := make([]int32, len(f.nodes))
	for j, n := range f.nodes {
		id, ok := ids[n.Name]
		if !ok {
			id = int32(len(names))
			ids[n.Name] = id
			names = append(names, n.Name)
		}
		nid[j] = id
	}
	newAcc := func() *arcAcc { return &arcAcc{base: make([]uint64, k), cum: make([]uint64, k)} }
	self := make([]*arcAcc, len(names))
	parents := map[[2]int32]*arcAcc{}  // {parent, method}: parent lines
	children := map[[2]int32]*arcAcc{} // {method, child}: child lines
	get := func(m map[[2]int32]*arcAcc, key [2]int32) *arcAcc {
		acc := m[key]
		if acc == nil {
			acc = newAcc()
			m[key] = acc
		}
		return acc
	}

	// One depth-first pass. nameTop[id] is the nearest node on the
	// current path with that name; path[d] the node at depth d. For a
	// node j with a same-named ancestor a, j's cum is subtracted from the
	// child of a on the path (nested[c]), so that child's line counts
	// only what lies above the nested occurrence.
	nameTop := make([]int32, len(names))
	for i := range nameTop {
		nameTop[i] = -1
	}
	sameAbove := make([]int32, len(f.nodes)) // nearest same-named ancestor
	nested := make([]uint64, len(f.cum))
	var path []int32
	for j := range f.nodes {
		d := int(f.depth[j])
		for len(path) > d { // leave the subtrees that j is not in
			top := path[len(path)-1]
			nameTop[nid[top]] = sameAbove[top]
			path = path[:len(path)-1]
		}
		path = append(path, int32(j))
		id := nid[j]
		sameAbove[j] = nameTop[id]
		if a := sameAbove[j]; a >= 0 {
			c := path[f.depth[a]+1] // may be j itself
			addVec(f.vec(nested, int(c)), f.vec(f.cum, j))
		}
		nameTop[id] = int32(j)
	}

	for j, n := range f.nodes {
		id := nid[j]
		if self[id] == nil {
			self[id] = newAcc()
		}
		pid := int32(0)
		if par := f.parent[j]; par >= 0 {
			pid = nid[par]
		}
		pl := get(parents, [2]int32{pid, id})
		own := OwnCalls(n, stack)
		for _, acc := range []*arcAcc{self[id], pl} {
			acc.calls += own
			addVec(acc.base, f.vec(f.base, j))
			if sameAbove[j] < 0 {
				addVec(acc.cum, f.vec(f.cum, j))
			}
		}
		if pid != 0 {
			cl := get(children, [2]int32{pid, id})
			cl.calls += own
			addVec(cl.base, f.vec(f.base, j))
			addVec(cl.cum, f.vec(f.cum, j))
			subVec(cl.cum, f.vec(nested, j))
		}
	}

	stanzas := make([]Stanza, len(names))
	for key, acc := range parents {
		s := &stanzas[key[1]]
		s.Parents = append(s.Parents, acc.line(names[key[0]]))
	}
	for key, acc := range children {
		s := &stanzas[key[0]]
		s.Children = append(s.Children, acc.line(names[key[1]]))
	}
	for id := 1; id < len(names); id++ {
		s := stanzas[id]
		s.Self = self[id].line(names[id])
		slices.SortFunc(s.Parents, byCum)
		slices.SortFunc(s.Children, byCum)
		a.Stanzas = append(a.Stanzas, s)
	}
	slices.SortFunc(a.Stanzas, func(x, y Stanza) int { return byCum(x.Self, y.Self) })
	return a
}

// byCum orders lines by cum of the first metric, descending, then calls,
// descending, then name.
func byCum(x, y ArcLine) int {
	if c := cmp.Compare(y.Cum[0], x.Cum[0]); c != 0 {
		return c
	}
	if c := cmp.Compare(y.Calls, x.Calls); c != 0 {
		return c
	}
	return strings.Compare(x.Name, y.Name)
}

// XProf returns the flat profile: one line per method and thread root, by
// base of the first metric, descending, then cum, descending, then name.
func (a *Arcflow) XProf() []ArcLine {
	lines := make([]ArcLine, len(a.Stanzas))
	for i, s := range a.Stanzas {
		lines[i] = s.Self
	}
	slices.SortFunc(lines, func(x, y ArcLine) int {
		if c := cmp.Compare(y.Base[0], x.Base[0]); c != 0 {
			return c
		}
		return byCum(x, y)
	})
	return lines
}

// reportHeader writes the lines common to the arcflow reports, with the
// profile's notes and then extra ones.
func reportHeader(w io.Writer, kind string, p *Profile, metrics []Metric, total []uint64, extra ...string) {
	fmt.Fprintf(w, " libjprof %s\n%s%d\n%s%d\n", kind, pidPrefix, p.PID, seqPrefix, p.Seq)
	// A report that says what its CALLS count ("CALLS here = ...")
	// replaces the log-rt's word on them, the note's first clause; what
	// the note goes on to say of the metrics stays.
	own := slices.ContainsFunc(extra, func(n string) bool { return strings.HasPrefix(n, "CALLS here = ") })
	for _, n := range append(slices.Clip(p.Notes), extra...) {
		if own && strings.HasPrefix(n, "CALLS = ") {
			_, rest, ok := strings.Cut(n, "; ")
			if !ok {
				continue
			}
			n = rest
		}
		fmt.Fprintf(w, "%s%s\n", notePrefix, escapeNote(n))
	}
	if len(p.Metrics) == 0 {
		fmt.Fprintf(w, " Note: no metrics were recorded; BASE and CUM count calls\n")
	}
	for i, m := range metrics {
		fmt.Fprintf(w, "%s, total %d\n", metricLine(i+1, m), total[i])
	}
	fmt.Fprintln(w)
}

// columns returns "  BASEi       CUMi" headers for k metrics.
func columns(k int) string {
	var b strings.Builder
	for i := 1; i <= k; i++ {
		suffix := ""
		if k > 1 {
			suffix = fmt.Sprint(i)
		}
		fmt.Fprintf(&b, " %12s %12s", "BASE"+suffix, "CUM"+suffix)
	}
	return b.String()
}

// writeArcLine writes l; its name escaped (see [EscapeName]) after indent.
func writeArcLine(w *bufio.Writer, l ArcLine, indent []byte) {
	fmt.Fprintf(w, " %10d", l.Calls)
	for i := range l.Base {
		fmt.Fprintf(w, " %12d %12d", l.Base[i], l.Cum[i])
	}
	w.WriteString("  ")
	w.Write(indent)
	w.WriteString(EscapeName(l.Name))
	w.WriteByte('\n')
}

// XTreeMaxIndent is the deepest level xtree indents: deeper names are
// indented as this level, and their LV column tells their level. Two
// spaces per level without a cap make the report grow with the square of
// the depth: a deep recursion's 13 MB log-rt once made a 30 GB xtree.
const XTreeMaxIndent = 40

// WriteXTree writes the call tree, one line per node depth-first, with
// its level, its calls and per metric base and cum; names are indented two
// spaces per level down to level XTreeMaxIndent.
func WriteXTree(w io.Writer, p *Profile) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	f := flatten(p)
	total := make([]uint64, f.k)
	for j, par := range f.parent {
		if par < 0 {
			addVec(total, f.vec(f.cum, j))
		}
	}
	var notes []string
	if slices.ContainsFunc(f.depth, func(d int32) bool { return d > XTreeMaxIndent }) {
		notes = append(notes, fmt.Sprintf("names below level %d are indented as level %d; LV gives their level", XTreeMaxIndent, XTreeMaxIndent))
	}
	reportHeader(bw, "xtree", p, reportMetrics(p), total, notes...)
	fmt.Fprintf(bw, "%4s %10s%s  NAME\n", "LV", "CALLS", columns(f.k))
	indent := []byte(strings.Repeat(" ", 2*XTreeMaxIndent))
	for j, n := range f.nodes {
		d := int(f.depth[j])
		fmt.Fprintf(bw, "%4d", d)
		writeArcLine(bw, ArcLine{Name: n.Name, Calls: n.Calls, Base: f.vec(f.base, j), Cum: f.vec(f.cum, j)}, indent[:2*min(d, XTreeMaxIndent)])
	}
	return bw.Flush()
}

// WriteXArc writes one stanza per method: parents indented, the method
// itself, children indented, stanzas separated by "=" lines.
func WriteXArc(w io.Writer, p *Profile) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	a := NewArcflow(p)
	reportHeader(bw, "xarc", p, a.Metrics, a.Total, stackCallsNote(p)...)
	fmt.Fprintf(bw, " Each stanza: callers (indented), the method, callees (indented).\n\n")
	head := fmt.Sprintf(" %10s%s  NAME\n", "CALLS", columns(len(a.Metrics)))
	rule := strings.Repeat("=", len(head)+20) + "\n"
	indent := []byte("    ")
	for _, s := range a.Stanzas {
		bw.WriteString(rule)
		bw.WriteString(head)
		for _, l := range s.Parents {
			writeArcLine(bw, l, indent)
		}
		writeArcLine(bw, s.Self, nil)
		for _, l := range s.Children {
			writeArcLine(bw, l, indent)
		}
	}
	bw.WriteString(rule)
	return bw.Flush()
}

// stackCallsNote says, for a sampled tree, what xarc's and xprof's CALLS
// count: the samples with the method on top, which add up per method
// (a sample counts once in each context of its stack, and a recursive
// method would count it more than once).
func stackCallsNote(p *Profile) []string {
	if u := p.StackCounts(); u != "" {
		return []string{fmt.Sprintf("CALLS here = %s with the method on top (the log-rt's CALLS less CEE), which add up over methods", u)}
	}
	return nil
}

// ShortCallNs is the calibrated self time per call under which a BCI
// profile's method shows larger than it is: what the probes cost
// compiled code (two calls per call, values kept out of registers,
// methods inlined less), which calibration cannot remove, is then most
// of its time. The agent's header says the same (agent/source.go).
const ShortCallNs = 250

// perCall says whether xprof has a NS/CALL column: exact calls (not
// samples) and a first metric in ns; mark, whether it marks the methods
// under ShortCallNs a call (the BCI source's).
func perCall(p *Profile, metrics []Metric) (col, mark bool) {
	if p.StackCounts() != "" || len(metrics) == 0 || metrics[0].Unit != "ns" {
		return false, false
	}
	// Uncalibrated, every call's time holds the agent's own work too:
	// the mark's word on what calibration leaves would not hold.
	return true, metrics[0].Calibrated && slices.Contains(p.Notes, "Event source: bci")
}

// WriteXProf writes the flat profile (see [Arcflow.XProf]); with exact
// calls and a time metric, each method's calibrated self time per call
// too (NS/CALL), marked "~" under ShortCallNs in a BCI profile.
func WriteXProf(w io.Writer, p *Profile) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	a := NewArcflow(p)
	col, mark := perCall(p, a.Metrics)
	notes := stackCallsNote(p)
	if col {
		n := "NS/CALL = BASE (of the first metric) over CALLS: the method's own time per call"
		if mark {
			n += fmt.Sprintf("; marked ~ under %d ns, where the probes' cost in compiled code, which calibration cannot remove, is most of it: such a method shows larger than it is, and ranks higher (SAMPLE shows it at its real speed)", ShortCallNs)
		}
		notes = append(notes, n)
	}
	reportHeader(bw, "xprof", p, a.Metrics, a.Total, notes...)
	if col {
		fmt.Fprintf(bw, " %10s%s %9s  NAME\n", "CALLS", columns(len(a.Metrics)), "NS/CALL")
	} else {
		fmt.Fprintf(bw, " %10s%s  NAME\n", "CALLS", columns(len(a.Metrics)))
	}
	for _, l := range a.XProf() {
		if !col {
			writeArcLine(bw, l, nil)
			continue
		}
		fmt.Fprintf(bw, " %10d", l.Calls)
		for i := range l.Base {
			fmt.Fprintf(bw, " %12d %12d", l.Base[i], l.Cum[i])
		}
		switch {
		case l.Calls == 0 || l.Name == PrunedName: // a root, or many methods' sum
			fmt.Fprintf(bw, " %9s", "-")
		case mark && l.Base[0]/l.Calls < ShortCallNs:
			fmt.Fprintf(bw, " %8d~", l.Base[0]/l.Calls)
		default:
			fmt.Fprintf(bw, " %9d", l.Base[0]/l.Calls)
		}
		bw.WriteString("  ")
		bw.WriteString(EscapeName(l.Name))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
