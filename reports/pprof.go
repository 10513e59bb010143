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
// twice). There is one location per function. A sampled tree's count
// type is "samples/count" (LOCK: "waits/count") and its value the samples
// with the context on top ([Profile.StackCounts]), which add up as
// pprof's flat and cum columns need.
//
// A function's Name is the method in form names (see [NameForm]); in the
// default java form "java.lang.String.charAt(byte[], int)", which pprof's
// graph and flame graph shorten to "String.charAt" while its text reports
// keep it whole, overloads apart. The jvm form keeps the JVM signature
// after a dotted class: "java.lang.String.charAt([BI)C". A function's
// SystemName is the log-rt name, the JVM's descriptor with the type
// prefix ("i:java/lang/String.charAt([BI)C"; "-:" for a thread root),
// which pprof -raw shows. The two must differ: pprof demangles a function
// whose Name equals its SystemName, and its C++ heuristics cut
// "charAt([BI)C" to "charAtC". There is one function per log-rt name, so
// a method that ran interpreted and compiled is two functions of the same
// Name, which pprof's views add up as one (its -raw output keeps them
// apart); the leaf's method type (jit-compiled, interpreted, native, ...)
// is the sample's "type" label, for pprof's -tagfocus.
func ToPprof(p *Profile, names NameForm) (*profile.Profile, error) {
	k := len(p.Metrics)
	var namer *Namer
	if names != JVMNames {
		namer = NewNamer(names, profileNames(p))
	}
	funcName := func(name string) string {
		if namer != nil {
			if n := namer.Name(name); n != systemName(name) {
				return n
			}
		}
		return pprofName(name)
	}
	out := &profile.Profile{}
	for _, m := range p.Metrics {
		unit := m.Unit
		if unit == "" {
			unit = "count"
		}
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: strings.ToLower(m.Name), Unit: unit})
	}
	// A sampled tree's counts add up only as the samples with a context
	// on top: the count type is then theirs ("samples", "waits").
	countType, onStack := p.CountName()
	out.SampleType = append(out.SampleType, &profile.ValueType{Type: countType, Unit: "count"})
	out.DefaultSampleType = out.SampleType[0].Type
	if iv := p.Interval; iv != nil && !iv.Start.IsZero() && iv.End.After(iv.Start) {
		// pprof shows them ("Time:", "Duration:") and -diff_base
		// and merges keep them.
		out.TimeNanos, out.DurationNanos = iv.Start.UnixNano(), iv.End.Sub(iv.Start).Nanoseconds()
		if iv.EndVM > iv.StartVM {
			// The monotonic clock's span: immune to the wall clock's steps.
			out.DurationNanos = (iv.EndVM - iv.StartVM).Nanoseconds()
		}
	}
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
		f := &profile.Function{ID: id, Name: funcName(name), SystemName: systemName(name)}
		// The address is only an identity: one distinct value per function.
		l := &profile.Location{ID: id, Mapping: mapping, Address: id, Line: []profile.Line{{Function: f}}}
		out.Function = append(out.Function, f)
		out.Location = append(out.Location, l)
		locs[name] = l
		return l
	}

	// One label set per method type, shared by its samples (pprof only
	// reads them): a map per sample would cost more than its locations.
	labels := map[string]map[string][]string{}
	var stack []*profile.Location // root first
	err := preorder(p.Threads, func(n *Node, depth int) error {
		if len(n.Base) > k {
			return fmt.Errorf("pprof: node %q has %d base values for %d metrics", n.Name, len(n.Base), k)
		}
		stack = append(stack[:depth], loc(n.Name))
		vals := make([]int64, k+1)
		own := OwnCalls(n, onStack)
		zero := own == 0
		for i := range k {
			v := at0(n.Base, i)
			if v > 1<<63-1 {
				return fmt.Errorf("pprof: node %q: base %d overflows int64", n.Name, v)
			}
			vals[i] = int64(v)
			zero = zero && v == 0
		}
		if own > 1<<63-1 {
			return fmt.Errorf("pprof: node %q: calls %d overflow int64", n.Name, own)
		}
		vals[k] = int64(own)
		if !zero {
			s := &profile.Sample{Value: vals, Location: make([]*profile.Location, len(stack))}
			if t := methodType(n.Name); t != "" {
				if labels[t] == nil {
					labels[t] = map[string][]string{"type": {t}}
				}
				s.Label = labels[t]
			}
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

// typeNames are the method types of the type prefixes (see SPEC: JProf's
// letters, lower case for static methods).
var typeNames = map[byte]string{
	'i': "interpreted static", 'I': "interpreted",
	'j': "jit-compiled static", 'J': "jit-compiled",
	'n': "native static", 'N': "native",
	'C': "compiling", 'O': "other",
}

// typeLetters are typeNames' keys.
const typeLetters = "iIjJnNCO"

// splitType splits "J:hellop.myA()V" into 'J' and "hellop.myA()V"; a name
// without a type prefix (a thread root) has type 0.
func splitType(name string) (byte, string) {
	if len(name) >= 2 && name[1] == ':' && strings.IndexByte(typeLetters, name[0]) >= 0 {
		return name[0], name[2:]
	}
	return 0, name
}

func methodType(name string) string {
	t, _ := splitType(name)
	return typeNames[t]
}

// pprofName is a node's name in pprof's jvm form: no type prefix, dots
// between packages and class ("java.lang.String.charAt([BI)C"), the
// signature as the JVM writes it.
func pprofName(name string) string {
	t, m := splitType(name)
	if t == 0 {
		return name
	}
	i := strings.IndexByte(m, '(')
	if i < 0 {
		i = len(m)
	}
	return strings.ReplaceAll(m[:i], "/", ".") + m[i:]
}

// systemName is the log-rt name, which has a type prefix that pprofName
// has not; names without one (thread roots, <pruned>) get "-:", no type,
// so that the two differ.
func systemName(name string) string {
	if t, _ := splitType(name); t == 0 {
		return "-:" + name
	}
	return name
}
