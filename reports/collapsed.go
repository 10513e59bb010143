package reports

import (
	"bufio"
	"fmt"
	"io"
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
// stack whose own value is not zero, "frame;frame;frame N", root first.
// The first frame is the thread root's name unless o.MergeThreads.
// Stacks that occur more than once (recursion folded by the agent never
// does, merged threads do) are summed into the first line of that stack.
//
// Method names are in the form o.Names: by default Java's,
// "java.util.TimSort.mergeLo(int, int, int, int)", without the type
// prefix, so a method is one frame whatever its type (see [Rename]).
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
func WriteCollapsed(w io.Writer, p *Profile, o CollapsedOptions) error {
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

var collapsedEscaper = strings.NewReplacer(";", ",", "\n", " ", "\r", " ")

func collapsedFrame(name string) string { return collapsedEscaper.Replace(name) }
