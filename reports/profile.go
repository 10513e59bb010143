package reports

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
	// Threads holds one root per thread; a root's Name is like
	// "0000b718_main" and its Calls is 0.
	Threads []*Node
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
