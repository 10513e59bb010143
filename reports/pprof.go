package reports

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// ToPprof converts p to a pprof profile so that `go tool pprof` can show
// top lists and flame graphs of it.
//
// Sample types are one per metric (the name in lower case, with its unit,
// "count" if it has none) and then "calls/count". Each node with a
// non-zero value is one sample: its values are the node's own Base per
// metric and its Calls, and its locations are its call path, leaf first,
// ending with the thread root, so pprof's flat column is the method's base
// and its cum the subtree (pprof itself does not count a recursive frame
// twice). Functions are named by the method name with its type prefix
// ("J:hellop.myA()V"): the prefix tells JIT-compiled, interpreted and
// native code apart, which is worth keeping. There is one location per
// function.
func ToPprof(p *Profile) (*profile.Profile, error) {
	k := len(p.Metrics)
	out := &profile.Profile{}
	for _, m := range p.Metrics {
		unit := m.Unit
		if unit == "" {
			unit = "count"
		}
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: strings.ToLower(m.Name), Unit: unit})
	}
	out.SampleType = append(out.SampleType, &profile.ValueType{Type: "calls", Unit: "count"})
	out.DefaultSampleType = out.SampleType[0].Type
	out.Comments = append(out.Comments, fmt.Sprintf("libjprof pid %d, log-rt sequence %d", p.PID, p.Seq))
	out.Comments = append(out.Comments, p.Notes...)
	// A mapping that says functions are known keeps pprof from trying to
	// symbolize the made-up addresses.
	mapping := &profile.Mapping{ID: 1, File: "java", HasFunctions: true}
	out.Mapping = []*profile.Mapping{mapping}

	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l := locs[name]; l != nil {
			return l
		}
		id := uint64(len(out.Function) + 1)
		f := &profile.Function{ID: id, Name: name, SystemName: name}
		// The address is only an identity: one distinct value per function.
		l := &profile.Location{ID: id, Mapping: mapping, Address: id, Line: []profile.Line{{Function: f}}}
		out.Function = append(out.Function, f)
		out.Location = append(out.Location, l)
		locs[name] = l
		return l
	}

	var stack []*profile.Location // root first
	err := preorder(p.Threads, func(n *Node, depth int) error {
		if len(n.Base) > k {
			return fmt.Errorf("pprof: node %q has %d base values for %d metrics", n.Name, len(n.Base), k)
		}
		stack = append(stack[:depth], loc(n.Name))
		vals := make([]int64, k+1)
		zero := n.Calls == 0
		for i := range k {
			v := at0(n.Base, i)
			if v > 1<<63-1 {
				return fmt.Errorf("pprof: node %q: base %d overflows int64", n.Name, v)
			}
			vals[i] = int64(v)
			zero = zero && v == 0
		}
		if n.Calls > 1<<63-1 {
			return fmt.Errorf("pprof: node %q: calls %d overflow int64", n.Name, n.Calls)
		}
		vals[k] = int64(n.Calls)
		if !zero {
			s := &profile.Sample{Value: vals, Location: make([]*profile.Location, len(stack))}
			for i, l := range stack {
				s.Location[len(stack)-1-i] = l
			}
			out.Sample = append(out.Sample, s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("pprof: %w", err)
	}
	return out, nil
}
