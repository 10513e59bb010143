package reports

import (
	"fmt"
	"iter"
	"strings"
)

// A Namer names the methods of one profile in one form, each method under
// a name no other method of the profile has: the first of the form's
// levels (see nameLevels in javanames.go) that no other method shares.
// Its memory is a map entry per distinct method.
type Namer struct {
	form  NameForm
	names map[string]string // method id -> its name
}

// NewNamer names the methods among names (log-rt names, repeats allowed)
// in form f.
func NewNamer(f NameForm, names iter.Seq[string]) *Namer {
	n := &Namer{form: f}
	if f == JVMNames {
		return n
	}
	methods := map[string]*jmethod{}
	var order []*jmethod       // for a result that does not depend on map order
	tried := map[string]bool{} // ids parsed, methods or not
	for name := range names {
		t, id := splitType(name)
		if t == 0 || tried[id] {
			continue
		}
		tried[id] = true
		m, ok := parseMethod(name)
		if !ok {
			continue
		}
		methods[m.id] = &m
		order = append(order, &m)
	}
	n.names = make(map[string]string, len(methods))
	// taken holds every name given, or wanted by more than one method, at
	// an earlier level: a method that reaches a later level must not take
	// a name another one has (or lost) at an earlier one.
	taken := map[string]bool{}
	left := order
	levels := nameLevels(f)
	for li, l := range levels {
		if len(left) == 0 {
			break
		}
		byName := make(map[string]int, len(left))
		cand := make([]string, len(left))
		for i, m := range left {
			cand[i] = m.format(l)
			byName[cand[i]]++
		}
		var next []*jmethod
		for i, m := range left {
			if li == len(levels)-1 || byName[cand[i]] == 1 && !taken[cand[i]] {
				n.names[m.id] = cand[i]
			} else {
				next = append(next, m)
			}
		}
		for _, c := range cand {
			taken[c] = true
		}
		left = next
	}
	return n
}

// Name is name in the Namer's form; names it was not given, and names
// that are not methods, stay as they are.
func (n *Namer) Name(name string) string {
	if n.form == JVMNames {
		return name
	}
	t, s := splitType(name)
	if t == 0 {
		return name
	}
	if v, ok := n.names[s]; ok {
		return v
	}
	if strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") {
		// A pseudo-frame (<JIT_compiler_thread>, <stub_...>): its
		// type letter says nothing in a form meant for reading.
		return s
	}
	return name
}

// profileNames yields the names of every node of p.
func profileNames(p *Profile) iter.Seq[string] {
	return func(yield func(string) bool) {
		stop := fmt.Errorf("stop")
		_ = preorder(p.Threads, func(n *Node, _ int) error {
			if !yield(n.Name) {
				return stop
			}
			return nil
		})
	}
}
