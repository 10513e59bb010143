package reports

import "strings"

// Rename returns p with its method names in form f, merging the children
// of a node that then have the same name (one method that ran
// interpreted and compiled is one frame): their calls, base, delta,
// dispatches and interrupts are summed and their children merged the
// same way, in first-call order. Thread roots stay apart. The jvm form
// returns p itself; otherwise p is not modified, and the result is a
// second tree (a Node and a child pointer per node of the result; the
// values of a node that merged nothing are shared with p's, so neither
// may be changed while the other is used) plus a map entry per method.
func Rename(p *Profile, f NameForm) *Profile {
	q, _ := rename(p, f, false)
	return q
}

// rename is Rename that can also return, per name of the result, the
// type letters of the nodes it stands for, in the order they were
// seen ("JI": compiled, then interpreted).
func rename(p *Profile, f NameForm, withTypes bool) (*Profile, map[string]string) {
	var types map[string]string
	addType := func(name string, t byte) {
		if t != 0 && strings.IndexByte(types[name], t) < 0 {
			types[name] += string(t)
		}
	}
	if withTypes {
		types = map[string]string{}
	}
	if f == JVMNames {
		if withTypes {
			_ = preorder(p.Threads, func(n *Node, _ int) error {
				t, _ := splitType(n.Name)
				addType(n.Name, t)
				return nil
			})
		}
		return p, types
	}
	namer := NewNamer(f, profileNames(p))
	q := *p
	q.Threads = make([]*Node, len(p.Threads))
	// A job fills dst from the nodes it merges: first, and more if
	// several nodes have its name under one parent (rare: no slice for
	// the usual one).
	type job struct {
		dst   *Node
		name  string
		first *Node
		more  []*Node
	}
	var stack []job
	for i := len(p.Threads) - 1; i >= 0; i-- {
		q.Threads[i] = &Node{}
		stack = append(stack, job{dst: q.Threads[i], name: p.Threads[i].Name, first: p.Threads[i]})
	}
	var kids []job           // the children of the node being filled, by name
	var index map[string]int // kids by name, for a node with many children
	find := func(name string) int {
		if index != nil {
			if k, ok := index[name]; ok {
				return k
			}
			return -1
		}
		for k := range kids {
			if kids[k].name == name {
				return k
			}
		}
		return -1
	}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d := j.dst
		d.Name = j.name
		kids, index = kids[:0], nil
		for i := -1; i < len(j.more); i++ {
			s := j.first
			if i >= 0 {
				s = j.more[i]
			}
			d.Calls += s.Calls
			d.DS += s.DS
			d.IN += s.IN
			if len(j.more) == 0 {
				// Nothing is added to it: the copy can share the values.
				d.Base, d.Delta = s.Base, s.Delta
			} else {
				d.Base = addValues(d.Base, s.Base)
				d.Delta = addValues(d.Delta, s.Delta)
			}
			if withTypes {
				t, _ := splitType(s.Name)
				addType(d.Name, t)
			}
			for _, c := range s.Children {
				name := namer.Name(c.Name)
				if k := find(name); k >= 0 {
					kids[k].more = append(kids[k].more, c)
					continue
				}
				if index == nil && len(kids) == manyKids {
					index = make(map[string]int, 2*manyKids)
					for k := range kids {
						index[kids[k].name] = k
					}
				}
				if index != nil {
					index[name] = len(kids)
				}
				kids = append(kids, job{name: name, first: c})
			}
		}
		if len(kids) > 0 {
			nodes := make([]Node, len(kids))
			d.Children = make([]*Node, len(kids))
			for k := range kids {
				d.Children[k] = &nodes[k]
				kids[k].dst = &nodes[k]
			}
			for k := len(kids) - 1; k >= 0; k-- {
				stack = append(stack, kids[k])
			}
		}
	}
	return &q, types
}

// addValues adds src to dst element by element, growing dst to src's
// length; it never writes into src's array.
func addValues(dst, src []uint64) []uint64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		return append([]uint64(nil), src...)
	}
	for len(dst) < len(src) {
		dst = append(dst, 0)
	}
	for i, v := range src {
		dst[i] += v
	}
	return dst
}
