package reports

import (
	"bytes"
	"fmt"
	"io"
)

// Rebuilding a call tree from events. These are the agent's own rules, so
// that a profile rebuilt from a log-gen equals the log-rt the agent writes
// for the same run (apart from DELTA, DS and IN, which log-gen lacks):
//
//  1. Each thread has a root node, named as in the events, created when
//     the thread is first seen; roots keep first-seen order. A root's
//     Calls stays 0.
//  2. An event's Values are added to the Base of the node on top of its
//     thread's shadow stack before the event is applied: they measure
//     what ran up to the event. With an empty stack the root gets them.
//  3. Entry: the top node (the root if the stack is empty) gets a child
//     of that name if it has none yet (children keep first-call order);
//     the child's Calls is incremented and it is pushed.
//  4. Exit and ExceptionExit: if the stack is not empty and the name is
//     that of the top node, pop it. Otherwise it is an exit without an
//     entry (JVMTI reports exits of frames entered before events were
//     enabled): the top node (or the root) gets a child named "O:" + the
//     name without its type prefix, whose Calls is incremented, as for an
//     entry, and nothing is popped or pushed. The type prefix is the first
//     two bytes when the second one is ':' ("J:a.b()V" → "O:a.b()V").

// OtherName returns the name under which an exit without an entry of the
// method name is recorded (rule 4 above).
func OtherName(name string) string {
	if len(name) >= 2 && name[1] == ':' {
		name = name[2:]
	}
	return "O:" + name
}

// bnode is a Node under construction. What an event touches comes first,
// in two cache lines: the values of the first metrics (Base points at
// inl when there are at most two), the children's names, then Name and
// Calls. A child is looked up by comparing the parent's kidNames with the
// interned names, without reading the children themselves.
type bnode struct {
	inl      [2]uint64
	kidNames []string // parallel to Node.Children
	kids     []*bnode // likewise
	id       int32    // interned name
	Node
}

// manyKids is the number of children above which lookups go through the
// Builder's map rather than a scan of the children.
const manyKids = 8

type kidKey struct {
	parent *bnode
	id     int32
}

type bthread struct {
	root  *bnode
	stack []*bnode
}

// Builder rebuilds a profile from events; see the rules above. The zero
// value is not usable: call NewBuilder.
//
// Memory: a node takes 184 bytes (with up to two metrics; 8 more per
// metric beyond), plus 32 bytes in its parent's child lists and, under a
// parent with more than 8 children, one map entry. Names are interned,
// so each distinct name is stored once.

type Builder struct {
	p       Profile
	k       int
	in      *interner  // shared with a LogGenReader in BuildProfile
	threads []*bthread // by interned id of the thread name; nil if not a thread
	other   []int32    // by id: id of the OtherName of the name, or -1
	kids    map[kidKey]*bnode
	// base and slab are allocated in bulk for nodes' Base slices and
	// for the nodes themselves.
	base []uint64
	slab []bnode
}

// NewBuilder returns a Builder for events with one value per metric.
func NewBuilder(pid int, metrics []Metric, notes ...string) *Builder {
	return &Builder{
		p:    Profile{PID: pid, Metrics: metrics, Notes: notes},
		k:    len(metrics),
		in:   &interner{},
		kids: make(map[kidKey]*bnode),
	}
}

// Add applies one event.
func (b *Builder) Add(ev Event) error {
	if len(ev.Values) != b.k {
		return fmt.Errorf("event %s %s on %q has %d values for %d metrics", ev.Kind, ev.Name, ev.Thread, len(ev.Values), b.k)
	}
	if ev.Kind < Entry || ev.Kind > ExceptionExit {
		return fmt.Errorf("bad event kind %d", int(ev.Kind))
	}
	b.add(b.in.idString(ev.Thread), ev.Kind, b.in.idString(ev.Name), ev.Values)
	return nil
}

// add is Add with interned names, for the reader's fast path.
func (b *Builder) add(thr int32, kind EventKind, name int32, vals []uint64) {
	t := b.thread(thr)
	top := t.root
	if len(t.stack) > 0 {
		top = t.stack[len(t.stack)-1]
	}
	for i, v := range vals {
		top.Base[i] += v
	}
	if kind == Entry {
		c := b.child(top, name)
		c.Calls++
		t.stack = append(t.stack, c)
		return
	}
	if len(t.stack) > 0 && top.id == name {
		t.stack = t.stack[:len(t.stack)-1]
		return
	}
	b.child(top, b.otherID(name)).Calls++
}

func (b *Builder) thread(id int32) *bthread {
	for int(id) >= len(b.threads) {
		b.threads = append(b.threads, nil)
	}
	t := b.threads[id]
	if t == nil {
		t = &bthread{root: b.newNode(id)}
		b.threads[id] = t
		b.p.Threads = append(b.p.Threads, &t.root.Node)
	}
	return t
}

func (b *Builder) otherID(id int32) int32 {
	for int(id) >= len(b.other) {
		b.other = append(b.other, -1)
	}
	if b.other[id] < 0 {
		b.other[id] = b.in.idString(OtherName(b.in.strs[id]))
	}
	return b.other[id]
}

// child finds or creates the child of n named by id.
func (b *Builder) child(n *bnode, id int32) *bnode {
	if len(n.kids) > manyKids {
		if c := b.kids[kidKey{n, id}]; c != nil {
			return c
		}
		return b.newChild(n, id)
	}
	name := b.in.strs[id]
	for i, kn := range n.kidNames {
		if kn == name {
			return n.kids[i]
		}
	}
	return b.newChild(n, id)
}

// childBytes is child for a name not yet interned: with few children,
// comparing bytes is cheaper than hashing the name.
func (b *Builder) childBytes(n *bnode, name []byte) *bnode {
	if len(n.kids) > manyKids {
		return b.child(n, b.in.id(name))
	}
	for i, kn := range n.kidNames {
		if kn == string(name) {
			return n.kids[i]
		}
	}
	return b.newChild(n, b.in.id(name))
}

func (b *Builder) newChild(n *bnode, id int32) *bnode {
	c := b.newNode(id)
	n.kidNames = append(n.kidNames, c.Name)
	n.kids = append(n.kids, c)
	n.Children = append(n.Children, &c.Node)
	switch {
	case len(n.kids) == manyKids+1:
		for _, k := range n.kids {
			b.kids[kidKey{n, k.id}] = k
		}
	case len(n.kids) > manyKids+1:
		b.kids[kidKey{n, id}] = c
	}
	return c
}

func (b *Builder) newNode(id int32) *bnode {
	// Nodes come from slabs: fewer allocations, and nodes made at about
	// the same time, which tend to be used together, share cache lines.
	if len(b.slab) == 0 {
		b.slab = make([]bnode, 256)
	}
	n := &b.slab[0]
	b.slab = b.slab[1:]
	n.Node.Name, n.id = b.in.strs[id], id
	if b.k <= len(n.inl) {
		if b.k > 0 {
			n.Base = n.inl[:b.k:b.k]
		}
	} else {
		if len(b.base) < b.k {
			b.base = make([]uint64, 1024*b.k)
		}
		n.Base, b.base = b.base[:b.k:b.k], b.base[b.k:]
	}
	return n
}

// Profile returns the profile built so far. Its nodes are shared with the
// Builder: adding more events changes them.
func (b *Builder) Profile() *Profile { return &b.p }

// clampNegative sets to zero the calibrated values of contexts whose
// events sum below zero (their events took more overhead than they
// measured, as the agent's log-rt never goes below zero either): calibrated
// values are summed as two's complement. A raw sum never comes near 2^63.
func clampNegative(p *Profile) {
	for i, m := range p.Metrics {
		if !m.Calibrated {
			continue
		}
		for _, th := range p.Threads {
			th.Walk(func(n *Node, _ int) {
				if i < len(n.Base) && int64(n.Base[i]) < 0 {
					n.Base[i] = 0
				}
			})
		}
	}
}

// BuildProfile reads a log-gen file and rebuilds its call tree with a
// [Builder]. The profile's Seq is 0 and it has no DELTA, DS or IN values.
func BuildProfile(r io.Reader) (*Profile, error) {
	lr, err := NewLogGenReader(r)
	if err != nil {
		return nil, err
	}
	b := NewBuilder(lr.PID(), lr.Metrics(), lr.Notes()...)
	b.in = lr.in
	if lr.bin != nil {
		for lr.Next() {
			if err := b.Add(lr.Event()); err != nil {
				return nil, err
			}
		}
		p := b.Profile()
		p.Truncated = lr.truncated
		p.SizeLimited, p.NotWritten = lr.SizeLimited(), lr.notWritten
		clampNegative(p)
		return p, lr.Err()
	}
	// This is LogGenReader.Next and Builder.add fused: most events are
	// the exit of the top node or the entry of one of its few children,
	// which a byte comparison settles without interning the name.
	var (
		t       *bthread
		lastThr []byte
		vals    = lr.vals
	)
	for {
		line, err := lr.readLine()
		if err == nil && len(line) > 0 && line[0] == ' ' {
			err = lr.truncation(line)
		}
		if err == io.EOF {
			p := b.Profile()
			p.Truncated = lr.truncated
			p.SizeLimited, p.NotWritten = lr.SizeLimited(), lr.notWritten
			clampNegative(p)
			return p, nil
		}
		var kind EventKind
		var name, thr []byte
		if err == nil {
			kind, _, name, thr, err = parseEvent(line, vals)
		}
		if err != nil {
			return nil, fmt.Errorf("log-gen line %d: %w", lr.line, err)
		}
		if t == nil || !bytes.Equal(thr, lastThr) {
			t = b.thread(b.in.id(thr))
			lastThr = append(lastThr[:0], thr...)
		}
		top := t.root
		if len(t.stack) > 0 {
			top = t.stack[len(t.stack)-1]
		}
		for i, v := range vals {
			top.Base[i] += v
		}
		switch {
		case kind == Entry:
			c := b.childBytes(top, name)
			c.Calls++
			t.stack = append(t.stack, c)
		case len(t.stack) > 0 && top.Name == string(name):
			t.stack = t.stack[:len(t.stack)-1]
		default:
			b.child(top, b.otherID(b.in.id(name))).Calls++
		}
	}
}
