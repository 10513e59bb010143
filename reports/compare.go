package reports

import (
	"fmt"
	"slices"
	"strings"
)

// CompareOptions selects what [Compare] ignores. The zero value compares
// everything a log-rt file can hold.
type CompareOptions struct {
	// IgnoreHeader skips PID, Seq, Notes and the metrics' Unit and
	// Calibrated flag. Metric names and their number are always compared.
	IgnoreHeader bool
	// IgnoreDelta skips DELTA values. A profile rebuilt from log-gen has
	// none: log-gen lines carry calibrated values only.
	IgnoreDelta bool
	// IgnoreDSIN skips dispatch and interrupt counts, which log-gen does
	// not carry either.
	IgnoreDSIN bool
}

// Equal reports whether a and b hold the same header and the same call
// trees, as [Compare] with the zero options.
func Equal(a, b *Profile) bool { return Compare(a, b, CompareOptions{}) == nil }

// Compare returns nil when a and b are equal under opt, or an error naming
// the first difference and the path of the node where it is. A Base or
// Delta slice shorter than Metrics reads as zeros, so a nil slice equals
// all zeros: that is how log-rt writes them. DS and IN are compared only
// when there are metrics, as log-rt only holds them then.
func Compare(a, b *Profile, opt CompareOptions) error {
	if !opt.IgnoreHeader {
		if a.PID != b.PID {
			return fmt.Errorf("pid %d != %d", a.PID, b.PID)
		}
		if a.Seq != b.Seq {
			return fmt.Errorf("sequence %d != %d", a.Seq, b.Seq)
		}
		if !slices.Equal(a.Notes, b.Notes) {
			return fmt.Errorf("notes %q != %q", a.Notes, b.Notes)
		}
	}
	if len(a.Metrics) != len(b.Metrics) {
		return fmt.Errorf("%d metrics != %d metrics", len(a.Metrics), len(b.Metrics))
	}
	for i, m := range a.Metrics {
		o := b.Metrics[i]
		if m.Name != o.Name || (!opt.IgnoreHeader && m != o) {
			return fmt.Errorf("metric %d: %+v != %+v", i+1, m, o)
		}
	}
	return compareNodes(a.Threads, b.Threads, len(a.Metrics), opt)
}

// compareNodes compares two forests node by node, depth-first, with its
// own stack: trees can be as deep as a recursion.
func compareNodes(as, bs []*Node, k int, opt CompareOptions) error {
	// path holds the names from a thread root down to the node whose
	// children the top frame compares.
	var path []string
	where := func() string {
		if len(path) == 0 {
			return "threads"
		}
		return strings.Join(path, " > ")
	}
	if len(as) != len(bs) {
		return fmt.Errorf("%s: %d children != %d children", where(), len(as), len(bs))
	}
	type frame struct {
		as, bs []*Node
		next   int
	}
	stack := []frame{{as: as, bs: bs}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == len(top.as) {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				path = path[:len(path)-1]
			}
			continue
		}
		i := top.next
		a, b := top.as[i], top.bs[i]
		top.next++
		if a.Name != b.Name {
			return fmt.Errorf("%s: child %d is %q != %q", where(), i, a.Name, b.Name)
		}
		path = append(path, a.Name)
		if a.Calls != b.Calls {
			return fmt.Errorf("%s: calls %d != %d", where(), a.Calls, b.Calls)
		}
		for m := range k {
			if x, y := at0(a.Base, m), at0(b.Base, m); x != y {
				return fmt.Errorf("%s: base %d is %d != %d", where(), m+1, x, y)
			}
			if x, y := at0(a.Delta, m), at0(b.Delta, m); !opt.IgnoreDelta && x != y {
				return fmt.Errorf("%s: delta %d is %d != %d", where(), m+1, x, y)
			}
		}
		// Without metrics log-rt has no DS and IN columns (CALLTREE
		// mode counts calls only), so they cannot differ there.
		if k > 0 && !opt.IgnoreDSIN && (a.DS != b.DS || a.IN != b.IN) {
			return fmt.Errorf("%s: DS/IN %d/%d != %d/%d", where(), a.DS, a.IN, b.DS, b.IN)
		}
		if len(a.Children) != len(b.Children) {
			return fmt.Errorf("%s: %d children != %d children", where(), len(a.Children), len(b.Children))
		}
		stack = append(stack, frame{as: a.Children, bs: b.Children})
	}
	return nil
}

// at0 returns v[i], or 0 past the end of v.
func at0(v []uint64, i int) uint64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}
