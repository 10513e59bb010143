package calibration

// Sequencer derives the key of each event of one thread from the events
// alone (transition, type and identity of the method entered or exited),
// keeping a shadow stack the way the agent's hot path does. Post-processing
// uses it to key the events of a log-gen file, whose lines carry exactly
// that: ">" or "<" or "<!", and a type-prefixed method name.
//
// The rules (shared with the C hot path, jvmti/hotpath.c):
//   - the stack starts with the thread root, of type Other, and the thread
//     is as if the root had just been entered (previous running type
//     Other, previous transition En);
//   - the running type of an event is the type of the top frame;
//   - an entry pushes the callee;
//   - an exit of the top frame pops it; an exit of a deeper frame pops down
//     to below it (the frames above lost their exits); an exit of a method
//     not on the stack (its entry was never seen) leaves the stack alone;
//   - the type that runs next is the top frame's type after the event.
//
// Use one Sequencer per thread.
type Sequencer struct {
	stack   []seqFrame
	prevRun Type
	prevTr  Transition
}

type seqFrame struct {
	typ    Type
	method string
}

// NewSequencer returns a sequencer for a thread that has had no event yet.
func NewSequencer() *Sequencer {
	s := &Sequencer{}
	s.Reset()
	return s
}

// Reset forgets the thread's stack, as the agent does when collection
// restarts: frames entered before are treated as never seen.
func (s *Sequencer) Reset() {
	s.stack = append(s.stack[:0], seqFrame{typ: Other})
	s.prevRun, s.prevTr = Other, En
}

// Depth is the number of frames above the thread root.
func (s *Sequencer) Depth() int { return len(s.stack) - 1 }

// Next applies one event — transition tr of method (an identity such as its
// name) of type t — and returns the key of the delta that ends at it.
func (s *Sequencer) Next(tr Transition, t Type, method string) Key {
	running := s.stack[len(s.stack)-1].typ
	if tr == En {
		s.stack = append(s.stack, seqFrame{typ: t, method: method})
	} else {
		for d := len(s.stack) - 1; d > 0; d-- {
			if s.stack[d].method == method {
				s.stack = s.stack[:d]
				break
			}
		}
	}
	k := MakeKey(s.prevRun, s.prevTr, running, tr, s.stack[len(s.stack)-1].typ)
	s.prevRun, s.prevTr = running, tr
	return k
}
