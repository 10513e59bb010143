package reports

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CallsValue is the value name that picks call counts instead of a
// metric's BASE (see [SelectValue]).
const CallsValue = "calls"

// ThreadFrame is the frame that holds the thread roots' own values (time
// in a thread outside any method) when threads are merged: without a
// thread frame those values would have no stack to sit on.
const ThreadFrame = "<thread>"

// SelectValue turns a value name into an index into a node's values:
// -1 for call counts ([CallsValue]), else the metric's index. An empty
// name picks the first metric, or calls when the profile has none. Metric
// names are matched without regard to case.
func SelectValue(p *Profile, name string) (int, error) {
	switch {
	case name == "" && len(p.Metrics) > 0:
		return 0, nil
	case name == "" || strings.EqualFold(name, CallsValue):
		return -1, nil
	}
	names := []string{CallsValue}
	for i, m := range p.Metrics {
		if strings.EqualFold(m.Name, name) {
			return i, nil
		}
		names = append(names, m.Name)
	}
	return 0, fmt.Errorf("no value %q in this profile: want one of %s", name, strings.Join(names, ", "))
}

// selfValue is n's own value for an index from SelectValue: for calls,
// the count that adds up over the tree (OwnCalls; stack from
// Profile.StackCounts).
func selfValue(n *Node, v int, stack bool) uint64 {
	if v < 0 {
		return OwnCalls(n, stack)
	}
	return at0(n.Base, v)
}

// CollapsedOptions says what WriteCollapsed writes.
type CollapsedOptions struct {
	// Value is "calls" or a metric name; empty picks the first metric,
	// or calls when there is none (see SelectValue).
	Value string
	// MergeThreads leaves the thread out of the stacks, so that the same
	// path in several threads is one line.
	MergeThreads bool
	// Names is the form of the method names (see [NameForm]).
	Names NameForm
}

// WriteCollapsed writes p as collapsed stacks, the input format of
// Brendan Gregg's flamegraph.pl and of speedscope: one line per distinct
// stack whose own value is not zero, "frame;frame;frame N", root first,
// depth first in the tree's order. The first frame is the thread root's
// name unless o.MergeThreads. Stacks that occur more than once (recursion
// folded by the agent never does; merged threads, and methods that ran
// in several types under one caller, do) are one line with the values
// summed.
//
// Method names are in the form o.Names: by default Java's,
// "java.util.TimSort.mergeLo(int, int, int, int)", without the type
// prefix, so a method is one frame whatever its type (as [Rename] merges
// them, without making its second tree).
//
// ';' separates frames and a line ends at a newline, so in names each ';'
// becomes ',' (JVM signatures, in the jvm form, have one after every
// class type: "(Ljava/lang/String;)V" is written "(Ljava/lang/String,)V")
// and line breaks become spaces. Spaces stay: the readers take the number
// after the last space.
//
// With calls, a sampled tree's lines count the samples with the stack on
// top (see [Profile.StackCounts]), so that they add up as flame graph
// tools expect.
//
// Each line is written as the walk reaches its stack, so beyond p the
// memory is the current stack (its text, and for each of its frames the
// children of the nodes that frame stands for) and, for the java and
// short forms, a [Namer]'s entry per distinct method: a million-node tree
// no longer holds every stack's text at once (gigabytes on javac).
func WriteCollapsed(w io.Writer, p *Profile, o CollapsedOptions) error {
	v, err := SelectValue(p, o.Value)
	if err != nil {
		return err
	}
	c := collapser{
		v:     v,
		stack: p.StackCounts() != "",
		namer: NewNamer(o.Names, profileNames(p)),
		bw:    bufio.NewWriterSize(w, 64<<10),
	}
	c.roots(p.Threads, o.MergeThreads)
	if c.err != nil {
		return c.err
	}
	return c.bw.Flush()
}

// collapser walks a tree for WriteCollapsed. The nodes of one line are a
// group: the nodes, under the nodes of the line above, whose frame reads
// the same. Within a group, a unit is what Rename would merge into one
// node (one parent unit, one renamed name), whose own value for calls in
// a sampled tree is its calls less its callees, taken on the sums as
// Rename's node would; a group's value is its units' summed. Each depth
// has its level, reused from one group to the next.
type collapser struct {
	v      int
	stack  bool
	namer  *Namer
	bw     *bufio.Writer
	levels []*cLevel
	line   []byte // the current stack's text, frame by frame
	num    []byte
	err    error
}

type cLevel struct {
	entries  []cEntry
	units    []cUnit
	groups   []cGroup
	unitIdx  map[cUnitKey]int32 // only for many children (see manyKids)
	groupIdx map[string]int32
}

type cEntry struct {
	n    *Node
	unit int32
	next int32 // the group's next entry, or -1
}

type cUnitKey struct {
	parent int32
	name   string
}

type cUnit struct {
	cUnitKey
	group                 int32
	calls, callees, value uint64
}

type cGroup struct {
	frame      string
	head, tail int32
	value      uint64
}

func (c *collapser) level(d int) *cLevel {
	for len(c.levels) <= d {
		c.levels = append(c.levels, &cLevel{})
	}
	lv := c.levels[d]
	lv.entries, lv.units, lv.groups = lv.entries[:0], lv.units[:0], lv.groups[:0]
	lv.unitIdx, lv.groupIdx = nil, nil
	return lv
}

// add puts n, named name, into lv under the unit parent (-1: a thread
// root, a unit of its own, as Rename keeps thread roots apart), in the
// group of frame.
func (lv *cLevel) add(n *Node, parent int32, name, frame string) {
	u := int32(-1)
	if parent >= 0 {
		u = lv.findUnit(cUnitKey{parent, name})
	}
	if u < 0 {
		g := lv.findGroup(frame)
		if g < 0 {
			g = int32(len(lv.groups))
			lv.groups = append(lv.groups, cGroup{frame: frame, head: -1, tail: -1})
			if lv.groupIdx != nil {
				lv.groupIdx[frame] = g
			} else if len(lv.groups) > manyKids {
				lv.groupIdx = make(map[string]int32, 2*len(lv.groups))
				for i, gr := range lv.groups {
					lv.groupIdx[gr.frame] = int32(i)
				}
			}
		}
		u = int32(len(lv.units))
		lv.units = append(lv.units, cUnit{cUnitKey: cUnitKey{parent, name}, group: g})
		if parent >= 0 {
			if lv.unitIdx != nil {
				lv.unitIdx[cUnitKey{parent, name}] = u
			} else if len(lv.units) > manyKids {
				lv.unitIdx = make(map[cUnitKey]int32, 2*len(lv.units))
				for i, un := range lv.units {
					if un.parent >= 0 {
						lv.unitIdx[un.cUnitKey] = int32(i)
					}
				}
			}
		}
	}
	un := &lv.units[u]
	un.calls += n.Calls
	un.callees += n.Callees()
	e := int32(len(lv.entries))
	lv.entries = append(lv.entries, cEntry{n: n, unit: u, next: -1})
	g := &lv.groups[un.group]
	if g.tail >= 0 {
		lv.entries[g.tail].next = e
	} else {
		g.head = e
	}
	g.tail = e
}

func (lv *cLevel) findUnit(k cUnitKey) int32 {
	return lookup(lv.unitIdx, len(lv.units), func(i int) cUnitKey { return lv.units[i].cUnitKey }, k)
}

func (lv *cLevel) findGroup(frame string) int32 {
	return lookup(lv.groupIdx, len(lv.groups), func(i int) string { return lv.groups[i].frame }, frame)
}

// lookup finds k among a level's n units or groups: through idx once the
// level has one (a node with many children), else by a scan of at(i).
func lookup[K comparable](idx map[K]int32, n int, at func(int) K, k K) int32 {
	if idx != nil {
		if i, ok := idx[k]; ok {
			return i
		}
		return -1
	}
	for i := range n {
		if at(i) == k {
			return int32(i)
		}
	}
	return -1
}

// values sums each unit's own value into its group's.
func (c *collapser) values(lv *cLevel) {
	for i := range lv.units {
		u := &lv.units[i]
		switch {
		case c.v >= 0:
			// summed per node below (a unit's base is its nodes')
		case !c.stack:
			u.value = u.calls
		case u.callees < u.calls:
			u.value = u.calls - u.callees
		default:
			u.value = 0
		}
		if c.v < 0 {
			lv.groups[u.group].value += u.value
		}
	}
	if c.v >= 0 {
		for _, e := range lv.entries {
			lv.groups[lv.units[e.unit].group].value += at0(e.n.Base, c.v)
		}
	}
}

// roots writes the threads' lines: each thread root a first frame, or
// with merge all of them one group whose own value is the <thread> line
// and whose children's stacks start without it.
func (c *collapser) roots(threads []*Node, merge bool) {
	lv := c.level(0)
	for _, th := range threads {
		frame := ThreadFrame
		if !merge {
			frame = collapsedFrame(th.Name)
		}
		lv.add(th, -1, th.Name, frame)
	}
	c.values(lv)
	for gi := range lv.groups {
		g := lv.groups[gi]
		c.line = append(c.line[:0], g.frame...)
		c.emit(g.value)
		if merge {
			c.line = c.line[:0]
		}
		c.children(1, lv, g, !merge)
	}
}

// children writes the stacks below group g of level parent, whose text
// is c.line (sep: a frame is before them, even an empty one), and their
// children's, depth first.
func (c *collapser) children(d int, parent *cLevel, g cGroup, sep bool) {
	if c.err != nil {
		return
	}
	lv := c.level(d)
	for e := g.head; e >= 0; e = parent.entries[e].next {
		pe := parent.entries[e]
		for _, ch := range pe.n.Children {
			name := c.namer.Name(ch.Name)
			lv.add(ch, pe.unit, name, collapsedFrame(name))
		}
	}
	if len(lv.entries) == 0 {
		return
	}
	c.values(lv)
	base := len(c.line)
	for gi := range lv.groups {
		h := lv.groups[gi]
		c.line = c.line[:base]
		if sep {
			c.line = append(c.line, ';')
		}
		c.line = append(c.line, h.frame...)
		c.emit(h.value)
		c.children(d+1, lv, h, true)
	}
	c.line = c.line[:base]
}

// emit writes c.line with val, unless val is 0.
func (c *collapser) emit(val uint64) {
	if val == 0 || c.err != nil {
		return
	}
	c.num = strconv.AppendUint(append(c.num[:0], ' '), val, 10)
	c.num = append(c.num, '\n')
	if _, err := c.bw.Write(c.line); err != nil {
		c.err = err
		return
	}
	if _, err := c.bw.Write(c.num); err != nil {
		c.err = err
	}
}

var collapsedEscaper = strings.NewReplacer(";", ",", "\n", " ", "\r", " ")

func collapsedFrame(name string) string { return collapsedEscaper.Replace(name) }
