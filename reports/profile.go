package reports

import "strings"

// Metric describes one metric column of a profile.
type Metric struct {
	Name string // option name, e.g. "PTT_TIME"
	Unit string // e.g. "ns"
	// Calibrated says whether BASE values of this metric have had the
	// profiler's overhead removed (DELTA holds what was removed).
	Calibrated bool
}

// Profile is the content of one log-rt file: a header and one call tree per
// Java thread.
type Profile struct {
	PID     int
	Seq     int      // the N of log-rt.N_<pid>
	Metrics []Metric // zero metrics: CALLTREE (counts only)
	// Notes are free header lines: PTT backend, what it cannot do,
	// calibration mode, JVM version. Each is written as " Note: <text>".
	Notes []string
	// Interval is the time the counts cover; nil in files from agents
	// before it was written.
	Interval *Interval
	// Threads holds one root per thread; a root's Name is like
	// "0000b718_main" and its Calls is 0.
	Threads []*Node
	// Truncated is the closing line of a file the agent cut short after
	// a write error (see TruncationLine), without its leading " *** ";
	// empty for a whole file. The profile then holds only what was
	// written before it: the last subtrees may miss rows, and their CEE
	// is not checked.
	Truncated string
	// SizeLimited is the size limit line of a log-gen that reached its
	// size limit (GENMAX, see SizeLimitLine), without its leading " *** ";
	// empty for a file that left no event out. NotWritten is its count:
	// the tree misses the calls of the events past the limit.
	SizeLimited string
	NotWritten  uint64
}

// Node is one calling context: a method reached through one path from its
// thread's root.
type Node struct {
	Name  string   // type prefix + class.method+signature, e.g. "I:hellop.myA()V"
	Calls uint64   // times this context was entered
	Base  []uint64 // per metric, calibrated value spent in this method itself
	Delta []uint64 // per metric, amount removed by calibration
	DS    uint64   // dispatches observed while this method was running
	IN    uint64   // interrupts observed while this method was running
	// Children are the callees in this context, in first-call order.
	Children []*Node
}

// Callees is the number of calls made from this node (CEE in log-rt).
func (n *Node) Callees() uint64 {
	var c uint64
	for _, ch := range n.Children {
		c += ch.Calls
	}
	return c
}

// StackCounts says what p's CALLS count when it is not entries: a sampled
// tree's log-rt (SAMPLE, ALLOC, LOCK) counts, in a node's CALLS, the
// samples (or waits) with that context anywhere on the stack, as its
// header note "CALLS = samples with this context on the stack" says.
// Those do not add up over a tree: a sample counts once in every context
// of its stack. What does is [Profile.OwnCalls], the samples with the
// context on top. StackCounts returns the unit ("samples", "waits"), or
// "" for an exact tree, whose CALLS are entries and add up as they are.
func (p *Profile) StackCounts() string {
	for _, n := range p.Notes {
		rest, ok := strings.CutPrefix(n, "CALLS = ")
		if !ok {
			continue
		}
		if unit, _, ok := strings.Cut(rest, " with this context on the stack"); ok && unit != "" && !strings.ContainsRune(unit, ' ') {
			return unit
		}
	}
	return ""
}

// CountName is what a tree's additive count is called in the reports:
// "calls" (CallsValue), or a sampled tree's unit ("samples", "waits"),
// with onStack set (see Profile.StackCounts and OwnCalls).
func (p *Profile) CountName() (name string, onStack bool) {
	if u := p.StackCounts(); u != "" {
		return u, true
	}
	return CallsValue, false
}

// OwnCalls is n's count that adds up over a tree: its CALLS in an exact
// tree (entries), its CALLS less its callees' in a sampled one (the
// samples with the context on top; see [Profile.StackCounts]). stack is
// p.StackCounts() != "".
func OwnCalls(n *Node, stack bool) uint64 {
	if !stack {
		return n.Calls
	}
	if c := n.Callees(); c < n.Calls {
		return n.Calls - c
	}
	return 0
}

// Path follows children by name from n: nil if n is nil or a step is
// missing.
func (n *Node) Path(names ...string) *Node {
	for _, name := range names {
		if n == nil {
			return nil
		}
		var next *Node
		for _, c := range n.Children {
			if c.Name == name {
				next = c
				break
			}
		}
		n = next
	}
	return n
}

// Walk calls f for n and every node below it, depth-first with children in
// order, with its depth below n.
func (n *Node) Walk(f func(n *Node, depth int)) {
	preorder([]*Node{n}, func(n *Node, d int) error { f(n, d); return nil })
}

// preorder calls visit for every node of the trees under roots,
// depth-first with children in order, with its depth (0 for a root), and
// stops at visit's first error. It keeps its own stack instead of
// recursing: a recursion hundreds of thousands of calls deep makes a tree
// as deep, which must cost heap, not goroutine stack.
func preorder(roots []*Node, visit func(n *Node, depth int) error) error {
	type frame struct {
		kids []*Node
		next int
	}
	stack := []frame{{kids: roots}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == len(top.kids) {
			stack = stack[:len(stack)-1]
			continue
		}
		n := top.kids[top.next]
		top.next++
		if err := visit(n, len(stack)-1); err != nil {
			return err
		}
		if len(n.Children) > 0 {
			stack = append(stack, frame{kids: n.Children})
		}
	}
	return nil
}

// ThreadName is a thread root's name without its tid: "main" for
// "0000b718_main".
func ThreadName(root string) string {
	if _, name, ok := strings.Cut(root, "_"); ok {
		return name
	}
	return root
}

// Thread returns the root of the first thread named name (see
// ThreadName), or nil.
func (p *Profile) Thread(name string) *Node {
	for _, th := range p.Threads {
		if ThreadName(th.Name) == name {
			return th
		}
	}
	return nil
}
