package reports

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeLogGen(t testing.TB, pid int, metrics []Metric, events []Event, notes ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	lw := NewLogGenWriter(&b, pid, metrics, notes...)
	for _, ev := range events {
		require.NoError(t, lw.Write(ev))
	}
	require.NoError(t, lw.Flush())
	return b.Bytes()
}

func readLogGen(t *testing.T, in []byte) []Event {
	t.Helper()
	lr, err := NewLogGenReader(bytes.NewReader(in))
	require.NoError(t, err)
	var evs []Event
	for lr.Next() {
		ev := lr.Event()
		ev.Values = slices.Clone(ev.Values)
		evs = append(evs, ev)
	}
	require.NoError(t, lr.Err())
	return evs
}

// v abbreviates a Values slice.
func v(vals ...uint64) []uint64 { return vals }

// hellopEvents is a short hellop run on two threads with k metrics.
func hellopEvents(k int) []Event {
	vals := func(x uint64) []uint64 {
		var out []uint64
		for i := range k {
			out = append(out, x*uint64(1+i))
		}
		return out
	}
	const main, ref = "0000b718_main", "0000b71c_Reference Handler"
	return []Event{
		{main, Entry, "J:hellop.main([Ljava/lang/String;)V", vals(5), 0, false, false},
		{main, Entry, "J:hellop.myA()V", vals(20), 0, false, false},
		{ref, Exit, "J:java/lang/ref/Reference.waitForReferencePendingList()V", vals(3), 0, false, false},
		{main, Entry, "J:hellop.myC()V", vals(2), 0, false, false},
		{main, Exit, "J:hellop.myC()V", vals(70), 0, false, false},
		{main, Exit, "J:hellop.myA()V", vals(1), 0, false, false},
		{ref, Entry, "I:java/lang/ref/Reference.processPendingReferences()V", vals(4), 0, false, false},
		{main, Entry, "J:hellop.myA()V", vals(6), 0, false, false},
		{main, Entry, "J:hellop.myC()V", vals(2), 0, false, false},
		{ref, ExceptionExit, "I:java/lang/ref/Reference.processPendingReferences()V", vals(9), 0, false, false},
		{main, ExceptionExit, "J:hellop.myC()V", vals(71), 0, false, false},
		{main, Exit, "J:hellop.myA()V", vals(1), 0, false, false},
		{main, Exit, "J:hellop.main([Ljava/lang/String;)V", vals(30), 0, false, false},
	}
}

func TestLogGenGolden(t *testing.T) {
	for k := range 3 {
		t.Run(fmt.Sprintf("%d metrics", k), func(t *testing.T) {
			evs := hellopEvents(k)
			out := writeLogGen(t, 4242, testMetrics[:k], evs, "PTT backend: ebpf")
			golden(t, fmt.Sprintf("loggen_%d.golden", k), out)
			got := readLogGen(t, out)
			for i := range evs {
				if evs[i].Values == nil {
					evs[i].Values = []uint64{}
				}
			}
			assert.Equal(t, evs, got)

			lr, err := NewLogGenReader(bytes.NewReader(out))
			require.NoError(t, err)
			assert.Equal(t, 4242, lr.PID())
			if k == 0 {
				assert.Empty(t, lr.Metrics())
			} else {
				assert.Equal(t, testMetrics[:k], lr.Metrics())
			}
			assert.Equal(t, []string{"PTT backend: ebpf"}, lr.Notes())
		})
	}
}

func TestLogGenHeaderWithoutDetails(t *testing.T) {
	in := " libjprof log-gen\n Process_Number_ID=7\n Units :: PTT_TIME PTT_INSTS\n1 2 > J:a()V t 1\n"
	lr, err := NewLogGenReader(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []Metric{{Name: "PTT_TIME"}, {Name: "PTT_INSTS"}}, lr.Metrics())
	require.True(t, lr.Next())
	assert.Equal(t, Event{Thread: "t 1", Kind: Entry, Name: "J:a()V", Values: v(1, 2)}, lr.Event())
	require.False(t, lr.Next())
	require.NoError(t, lr.Err())
}

func TestLogGenReaderErrors(t *testing.T) {
	const h1 = " libjprof log-gen\n Process_Number_ID=7\n Units :: T\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "log-gen line 0: empty file"},
		{"foreign", "hello\n", `log-gen line 1: not a libjprof log-gen file: expected " libjprof log-gen", got "hello"`},
		{"log-rt", " libjprof log-rt\n", "log-gen line 1: not a libjprof log-gen file"},
		{"no units", " libjprof log-gen\n Process_Number_ID=7\n", "log-gen line 3: unexpected end of file, expected \" Units :: NAMES\""},
		{"bad pid", " libjprof log-gen\n Process_Number_ID=\n", "log-gen line 2: expected \" Process_Number_ID=N\""},
		{"half details", " libjprof log-gen\n Process_Number_ID=7\n Units :: A B\n : 1 = A (ns, calibrated)\n1 2 > x t\n", "log-gen line 5: expected details of metric 2"},
		{"details mismatch", " libjprof log-gen\n Process_Number_ID=7\n Units :: A\n : 1 = B (ns, calibrated)\n", "metric 1 is A in the Units line but B here"},
		{"stray header", h1 + " Note: late\n", `log-gen line 4: expected metric " : 1 = NAME`},
		{"stray header after details", " libjprof log-gen\n Process_Number_ID=7\n Units :: none\n Note: late\n", `log-gen line 4: expected an event, got " Note: late"`},
		{"missing value", h1 + "> J:a()V t\n", "log-gen line 4: expected 1 values"},
		{"extra value", h1 + "1 2 > J:a()V t\n", "log-gen line 4: expected 1 values then >, < or <!"},
		{"bad kind", h1 + "1 ! J:a()V t\n", "log-gen line 4: expected 1 values then >, < or <!"},
		{"no thread", h1 + "1 > J:a()V\n", "log-gen line 4: expected a method and a thread"},
		{"empty thread", h1 + "1 > J:a()V \n", "log-gen line 4: expected a method and a thread"},
		{"overflow", h1 + "18446744073709551616 > J:a()V t\n", "log-gen line 4: value 1 overflows"},
		{"truncated", h1 + "1 > J:a()V t\n2 < J:a", "log-gen line 5: truncated: last line \"2 < J:a\" has no newline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lr, err := NewLogGenReader(strings.NewReader(tc.in))
			if err == nil {
				for lr.Next() {
				}
				err = lr.Err()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			// BuildProfile reports the same error.
			_, err2 := BuildProfile(strings.NewReader(tc.in))
			require.Error(t, err2)
			assert.Equal(t, err.Error(), err2.Error())
		})
	}
}

func TestLogGenWriterErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		metrics []Metric
		ev      Event
		want    string
	}{
		{"value count", testMetrics[:1], Event{Thread: "t", Name: "J:a()V"}, "0 values for 1 metrics"},
		{"empty thread", nil, Event{Name: "J:a()V"}, "names must not be empty"},
		{"empty method", nil, Event{Thread: "t"}, "names must not be empty"},
		{"bad kind", nil, Event{Thread: "t", Name: "J:a()V", Kind: 7}, "bad event kind 7"},
		{"bad metric", []Metric{{Name: "A B"}}, Event{Thread: "t", Name: "J:a()V", Values: v(1)}, "no spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := NewLogGenWriter(&bytes.Buffer{}, 1, tc.metrics)
			err := lw.Write(tc.ev)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, err, lw.Flush(), "the first error sticks")
		})
	}
}

// TestBuildRules checks each rule of the tree rebuild on tiny traces.
func TestBuildRules(t *testing.T) {
	m1 := testMetrics[:1]
	node := func(name string, calls, base uint64, kids ...*Node) *Node {
		return &Node{Name: name, Calls: calls, Base: v(base), Children: kids}
	}
	for _, tc := range []struct {
		name string
		evs  []Event
		want []*Node
	}{
		{
			name: "values go to the top before the event",
			evs: []Event{
				{"t", Entry, "J:a()V", v(1), 0, false, false}, // before a: the root
				{"t", Entry, "J:b()V", v(2), 0, false, false}, // a ran
				{"t", Exit, "J:b()V", v(4), 0, false, false},  // b ran
				{"t", Exit, "J:a()V", v(8), 0, false, false},  // a ran
				{"t", Entry, "J:a()V", v(16), 0, false, false},
				{"t", Exit, "J:a()V", v(32), 0, false, false},
			},
			want: []*Node{node("t", 0, 1+16, node("J:a()V", 2, 2+8+32, node("J:b()V", 1, 4)))},
		},
		{
			name: "exit without entry on an empty stack",
			evs: []Event{
				{"t", Exit, "J:x.run()V", v(5), 0, false, false},
				{"t", Exit, "J:x.run()V", v(6), 0, false, false},
				{"t", ExceptionExit, "I:x.y()V", v(1), 0, false, false},
			},
			want: []*Node{node("t", 0, 12, node("O:x.run()V", 2, 0), node("O:x.y()V", 1, 0))},
		},
		{
			name: "exit that does not match the top pops nothing",
			evs: []Event{
				{"t", Entry, "J:a()V", v(1), 0, false, false},
				{"t", Exit, "J:b()V", v(2), 0, false, false}, // O:b()V under a; a stays on top
				{"t", Entry, "J:c()V", v(3), 0, false, false},
				{"t", Exit, "J:c()V", v(4), 0, false, false},
				{"t", Exit, "J:a()V", v(5), 0, false, false},
			},
			want: []*Node{node("t", 0, 1, node("J:a()V", 1, 2+3+5, node("O:b()V", 1, 0), node("J:c()V", 1, 4)))},
		},
		{
			name: "an O: name with no type prefix and a recorded O: name",
			evs: []Event{
				{"t", Exit, "plain", v(1), 0, false, false},
				{"t", Exit, "O:a()V", v(1), 0, false, false},
			},
			want: []*Node{node("t", 0, 2, node("O:plain", 1, 0), node("O:a()V", 1, 0))},
		},
		{
			name: "exception exit pops like an exit",
			evs: []Event{
				{"t", Entry, "J:a()V", v(1), 0, false, false},
				{"t", Entry, "J:b()V", v(1), 0, false, false},
				{"t", ExceptionExit, "J:b()V", v(1), 0, false, false},
				{"t", ExceptionExit, "J:a()V", v(1), 0, false, false},
			},
			want: []*Node{node("t", 0, 1, node("J:a()V", 1, 2, node("J:b()V", 1, 1)))},
		},
		{
			name: "threads in first-seen order, children in first-call order",
			evs: []Event{
				{"t 2", Entry, "J:z()V", v(1), 0, false, false},
				{"t 1", Entry, "J:b()V", v(1), 0, false, false},
				{"t 2", Exit, "J:z()V", v(1), 0, false, false},
				{"t 1", Entry, "J:a()V", v(1), 0, false, false},
				{"t 1", Exit, "J:a()V", v(1), 0, false, false},
				{"t 1", Entry, "J:b()V", v(1), 0, false, false}, // b under b
				{"t 2", Entry, "J:y()V", v(1), 0, false, false},
			},
			want: []*Node{
				node("t 2", 0, 2, node("J:z()V", 1, 1), node("J:y()V", 1, 0)),
				node("t 1", 0, 1, node("J:b()V", 1, 2, node("J:a()V", 1, 1), node("J:b()V", 1, 0))),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := &Profile{PID: 3, Metrics: m1, Threads: tc.want}
			b := NewBuilder(3, m1)
			for _, ev := range tc.evs {
				require.NoError(t, b.Add(ev))
			}
			require.NoError(t, Compare(want, b.Profile(), CompareOptions{}))
			got, err := BuildProfile(bytes.NewReader(writeLogGen(t, 3, m1, tc.evs)))
			require.NoError(t, err)
			require.NoError(t, Compare(want, got, CompareOptions{}))
		})
	}
}

func TestBuilderAddErrors(t *testing.T) {
	b := NewBuilder(1, testMetrics[:1])
	assert.ErrorContains(t, b.Add(Event{Thread: "t", Name: "J:a()V"}), "0 values for 1 metrics")
	assert.ErrorContains(t, b.Add(Event{Thread: "t", Name: "J:a()V", Values: v(1), Kind: -1}), "bad event kind")
}

// naiveBuild is the rebuild rules written as plainly as possible, to
// check the Builder's lookups and interning against.
func naiveBuild(k int, evs []Event) []*Node {
	var roots []*Node
	stacks := map[string][]*Node{}
	rootOf := map[string]*Node{}
	child := func(n *Node, name string) *Node {
		for _, c := range n.Children {
			if c.Name == name {
				return c
			}
		}
		c := &Node{Name: name, Base: make([]uint64, k)}
		n.Children = append(n.Children, c)
		return c
	}
	for _, ev := range evs {
		r := rootOf[ev.Thread]
		if r == nil {
			r = &Node{Name: ev.Thread, Base: make([]uint64, k)}
			rootOf[ev.Thread] = r
			roots = append(roots, r)
		}
		st := stacks[ev.Thread]
		top := r
		if len(st) > 0 {
			top = st[len(st)-1]
		}
		for i, x := range ev.Values {
			top.Base[i] += x
		}
		switch {
		case ev.Kind == Entry:
			c := child(top, ev.Name)
			c.Calls++
			st = append(st, c)
		case len(st) > 0 && top.Name == ev.Name:
			st = st[:len(st)-1]
		default:
			name := ev.Name
			if len(name) > 1 && name[1] == ':' {
				name = name[2:]
			}
			child(top, "O:"+name).Calls++
		}
		stacks[ev.Thread] = st
	}
	return roots
}

// randomEvents makes a trace with threads, recursion, wide fan-out (more
// children than the Builder scans), exits without entries and exceptions.
func randomEvents(rng *rand.Rand, k, count int) []Event {
	threads := []string{"0000b718_main", "0000b71c_Reference Handler", "0000b720_worker 2"}
	var names []string
	for i := range 40 {
		names = append(names, fmt.Sprintf("%c:pkg/C%d.m%d()V", "iIjJnNCO"[i%8], i%5, i))
	}
	stacks := make([][]string, len(threads))
	var evs []Event
	for range count {
		ti := rng.Intn(len(threads))
		if rng.Intn(10) > 0 { // mostly stay on one thread, as the JVM does
			ti = 0
		}
		vals := make([]uint64, k)
		for i := range vals {
			vals[i] = uint64(rng.Intn(1000))
		}
		st := stacks[ti]
		ev := Event{Thread: threads[ti], Values: vals}
		switch r := rng.Intn(100); {
		case r < 50 && len(st) < 30:
			ev.Kind, ev.Name = Entry, names[rng.Intn(len(names))]
			st = append(st, ev.Name)
		case r < 95 && len(st) > 0:
			ev.Kind, ev.Name = Exit, st[len(st)-1]
			if r >= 90 {
				ev.Kind = ExceptionExit
			}
			st = st[:len(st)-1]
		default: // an exit without an entry
			ev.Kind, ev.Name = Exit, names[rng.Intn(len(names))]
		}
		stacks[ti] = st
		evs = append(evs, ev)
	}
	return evs
}

func TestBuildMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := range 30 {
		k := i % 3
		evs := randomEvents(rng, k, 3000)
		want := &Profile{PID: 9, Metrics: testMetrics[:k], Threads: naiveBuild(k, evs)}

		b := NewBuilder(9, testMetrics[:k])
		for _, ev := range evs {
			require.NoError(t, b.Add(ev))
		}
		require.NoError(t, Compare(want, b.Profile(), CompareOptions{}), "trace %d", i)

		got, err := BuildProfile(bytes.NewReader(writeLogGen(t, 9, testMetrics[:k], evs)))
		require.NoError(t, err)
		require.NoError(t, Compare(want, got, CompareOptions{}), "trace %d", i)
	}
}

// TestLogGenToLogRT checks that a rebuilt profile writes and parses back
// as log-rt.
func TestLogGenToLogRT(t *testing.T) {
	p, err := BuildProfile(bytes.NewReader(writeLogGen(t, 4242, testMetrics[:2], hellopEvents(2))))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, WriteLogRT(&b, p))
	q, err := ParseLogRT(&b)
	require.NoError(t, err)
	require.True(t, Equal(p, q))
	golden(t, "loggen_2_rebuilt.golden", writeLogRT(t, p))
}

func TestLogGenReaderAllocs(t *testing.T) {
	evs := randomEvents(rand.New(rand.NewSource(3)), 2, 20000)
	in := writeLogGen(t, 1, testMetrics[:2], evs)
	lr, err := NewLogGenReader(bytes.NewReader(in))
	require.NoError(t, err)
	for range 5000 { // intern every name first
		require.True(t, lr.Next())
	}
	allocs := testing.AllocsPerRun(10000, func() {
		if !lr.Next() {
			t.Fatal("ran out of events")
		}
	})
	assert.Zero(t, allocs, "reading a line must not allocate")
}

// benchTrace makes a trace for the benchmark: 1000 methods each calling
// two fixed callees, call depth up to maxDepth, mostly on one thread. With
// a small depth the tree reaches a steady state of a few thousand nodes,
// as real programs do (seed 001: 2.8 million events made a 200 KB tree);
// with a large one every context is soon new, the worst case for caches.
func benchTrace(b testing.TB, k, count, maxDepth int) []byte {
	rng := rand.New(rand.NewSource(11))
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("J:com/example/pkg%d/Class%d.method%d(Ljava/lang/String;I)V", i%17, i%101, i))
	}
	callers := map[string]int{}
	for i, n := range names {
		callers[n] = i
	}
	threads := []string{"0000b718_main", "0000b71c_Reference Handler", "0000b720_pool-1-thread-1"}
	stacks := make([][]string, len(threads))
	var buf bytes.Buffer
	lw := NewLogGenWriter(&buf, 1, testMetrics[:k])
	vals := make([]uint64, k)
	for range count {
		ti := 0
		if rng.Intn(50) == 0 {
			ti = 1 + rng.Intn(2)
		}
		for i := range vals {
			vals[i] = uint64(rng.Intn(5000))
		}
		st := stacks[ti]
		ev := Event{Thread: threads[ti], Values: vals}
		if len(st) == 0 || (len(st) < maxDepth && rng.Intn(2) == 0) {
			callee := ti * 100 // each thread runs one top-level method
			if len(st) > 0 {
				callee = (callers[st[len(st)-1]]*31 + 1 + rng.Intn(2)) % len(names)
			}
			ev.Kind, ev.Name = Entry, names[callee]
			st = append(st, ev.Name)
		} else {
			ev.Kind, ev.Name = Exit, st[len(st)-1]
			st = st[:len(st)-1]
		}
		stacks[ti] = st
		if err := lw.Write(ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := lw.Flush(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// cpuTime returns the user and system time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLogGenBuild measures parsing a log-gen and rebuilding its tree
// on one goroutine; events/s is the figure to watch (target ≥ 10M/s).
func BenchmarkLogGenBuild(b *testing.B) {
	const count = 1 << 20
	for _, tc := range []struct {
		name     string
		k, depth int
	}{
		{"steady/1 metric", 1, 10},
		{"steady/2 metrics", 2, 10},
		{"growing/1 metric", 1, 16},
	} {
		in := benchTrace(b, tc.k, count, tc.depth)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var p *Profile
			for range b.N {
				var err error
				if p, err = BuildProfile(bytes.NewReader(in)); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine wall time undercounts; CPU time of the
			// process (run with -cpu 1 so that it is one core) does not.
			cpu := cpuTime() - cpu0
			b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(count)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
			nodes := 0
			walk(p, func(*Node, int) { nodes++ })
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}

func TestLogGenSequenceKeys(t *testing.T) {
	var buf bytes.Buffer
	w := NewLogGenWriter(&buf, 7, []Metric{{Name: "PTT_TIME", Unit: "ns"}})
	evs := []Event{
		{Thread: "00000001_main", Kind: Entry, Name: "i:A.a()V", Values: []uint64{5}, Key: 4607, HasKey: true},
		{Thread: "00000001_main", Kind: ExceptionExit, Name: "i:A.a()V", Values: []uint64{0}, Key: 0, HasKey: true, Unclean: true},
		{Thread: "00000001_main", Kind: Entry, Name: "i:A.b()V", Values: []uint64{9}},
	}
	for _, ev := range evs {
		require.NoError(t, w.Write(ev))
	}
	require.NoError(t, w.Flush())
	assert.Contains(t, buf.String(), "\n5 s4607 > i:A.a()V 00000001_main\n0 u0 <! i:A.a()V 00000001_main\n9 > i:A.b()V")
	r, err := NewLogGenReader(&buf)
	require.NoError(t, err)
	var got []Event
	for r.Next() {
		ev := r.Event()
		ev.Values = append([]uint64(nil), ev.Values...)
		got = append(got, ev)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, evs, got)

	for _, bad := range []string{"5 s > i:A.a()V t", "5 sx > i:A.a()V t", "5 s12 i:A.a()V"} {
		_, _, _, _, err := parseEvent([]byte(bad), make([]uint64, 1))
		assert.Error(t, err, bad)
	}
}
