package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// jdk21 is the bin directory of an installed JDK 21 or later, or skips.
func jdk21(t *testing.T) string {
	t.Helper()
	homes, _ := filepath.Glob("/usr/lib/jvm/*/release")
	re := regexp.MustCompile(`(?m)^JAVA_VERSION="(\d+)`)
	for _, rel := range homes {
		b, err := os.ReadFile(rel)
		if err != nil {
			continue
		}
		if m := re.FindSubmatch(b); m != nil {
			if v, _ := strconv.Atoi(string(m[1])); v >= 21 {
				bin := filepath.Join(filepath.Dir(rel), "bin")
				if _, err := os.Stat(filepath.Join(bin, "java")); err == nil {
					return bin
				}
			}
		}
	}
	t.Skip("no JDK 21 or later in /usr/lib/jvm: virtual threads need one (e.g. Temurin 25)")
	return ""
}

// callsIn sums the calls of the nodes of a thread's tree whose name starts
// with prefix, and says whether each has a parent named parent.
func callsIn(root *reports.Node, prefix, parent string) (calls uint64, underParent bool) {
	underParent = true
	var walk func(n, p *reports.Node)
	walk = func(n, p *reports.Node) {
		if strings.HasPrefix(n.Name, prefix) {
			calls += n.Calls
			if p == nil || !strings.HasPrefix(p.Name, parent) {
				underParent = false
			}
		}
		for _, c := range n.Children {
			walk(c, n)
		}
	}
	walk(root, nil)
	return calls, underParent
}

// vthreadsCalls is the calls of VThreads' own methods over all threads.
func vthreadsCalls(p *reports.Profile) map[string]uint64 {
	own := map[string]uint64{}
	for m, n := range methodCalls(p) {
		if strings.HasPrefix(m, "VThreads.") {
			own[m] = n
		}
	}
	return own
}

// Virtual threads that block in the middle of step() (and so move from
// carrier to carrier) each get a tree of their own with exact counts, and
// the carriers' trees have no exits without entries and no missed exits.
func TestVirtualThreadsOwnTrees(t *testing.T) {
	bin := jdk21(t)
	const threads, rounds = 200, 10
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads",
		Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER",
		// Two carriers for 200 virtual threads: they interleave.
		JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"},
		Java:    filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Contains(t, r.Stdout, "vthreads: sink=")
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	notes := strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, fmt.Sprintf("Virtual threads: %d started, %d with a tree of their own", threads, threads))
	assert.NotContains(t, notes, "exits without a seen entry", "a thread's tree has unmatched or missed exits")

	seen := 0
	carriers := 0
	for _, root := range p.Threads {
		name := reports.ThreadName(root.Name)
		if strings.HasPrefix(name, "ForkJoinPool-") {
			carriers++
			c, _ := callsIn(root, "i:VThreads.", "")
			assert.Zero(t, c, "carrier %s holds frames of a virtual thread", root.Name)
			continue
		}
		if !strings.HasPrefix(name, "virtual-vt-") {
			continue
		}
		seen++
		task, _ := callsIn(root, "i:VThreads.task(", "")
		step, stepOK := callsIn(root, "i:VThreads.step(", "i:VThreads.task(")
		leaf, leafOK := callsIn(root, "i:VThreads.leaf(", "i:VThreads.step(")
		assert.Equal(t, [3]uint64{1, rounds, 2 * rounds}, [3]uint64{task, step, leaf}, "%s: task, step, leaf calls", root.Name)
		assert.True(t, stepOK && leafOK, "%s: step under task, leaf under step", root.Name)
	}
	assert.Equal(t, threads, seen, "virtual threads with a tree")
	assert.NotZero(t, carriers, "carrier threads")
	msg := r.ReadFile(t, "msg")
	assert.Contains(t, msg, fmt.Sprintf("virtual threads: %d started, each profiled on a record of its own", threads))
}

// Without following mounts (NOVTHREADS, as on a JVM without the mount
// events): the virtual threads are counted, and the header and log-msg
// say the carriers' trees are not exact.
func TestVirtualThreadsDetectedOnly(t *testing.T) {
	bin := jdk21(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads",
		Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,NOVTHREADS",
		JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"},
		Java:    filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	notes := strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, "Warning: 200 virtual threads ran, but NOVTHREADS: they were not followed across carriers")
	assert.Contains(t, notes, "exits without a seen entry", "frames moving between carriers")
	for _, root := range p.Threads {
		assert.False(t, strings.HasPrefix(reports.ThreadName(root.Name), "virtual-"), root.Name)
	}
	assert.Contains(t, r.ReadFile(t, "msg"), "virtual threads: 200 started; the JVM gives no mount/unmount events")
}

// ROOTS with method events on virtual threads that block inside the root
// (and come back on another carrier): exact counts, the count of open
// frames following each virtual thread; with NOVTHREADS their root
// entries are not collected, and that is said.
func TestVirtualThreadsRoots(t *testing.T) {
	bin := jdk21(t)
	run := func(opts string) *jvmtest.Result {
		r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads", Options: opts,
			JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"},
			Java:    filepath.Join(bin, "java")})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		return r
	}
	r := run("METHODEVENTS,CALLTREE,START,NORTDRIVER,ROOTS=VThreads.step")
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	checkBalanced(t, p)
	own := vthreadsCalls(p)
	assert.Equal(t, map[string]uint64{"VThreads.step(II)V": 2000, "VThreads.leaf(J)J": 4000}, own, "the JDK's methods under them are in the tree too")
	assert.Contains(t, r.ReadFile(t, "msg"), `"rootEntriesNotCollected": 0`)

	// Blocking outside the root, between root calls.
	r = run("METHODEVENTS,CALLTREE,START,NORTDRIVER,ROOTS=VThreads.leaf")
	p = jvmtest.ParseLogRT(t, r.File("rt.1"))
	checkBalanced(t, p)
	own = vthreadsCalls(p)
	assert.Equal(t, map[string]uint64{"VThreads.leaf(J)J": 4000}, own)

	r = run("METHODEVENTS,CALLTREE,START,NORTDRIVER,NOVTHREADS,ROOTS=VThreads.step")
	assert.Contains(t, r.Stderr, "ROOTS: 2000 root entries not collected")
}

// BCI on virtual threads that block inside step() and come back on
// another carrier: each virtual thread has its own exact tree, and with
// ROOTS the count of open root frames moves with the virtual thread (a
// virtual thread mounting on a carrier whose last one is parked inside
// the root is outside it: with the count in the OS thread, its task()
// frames were collected as if inside).
func TestVirtualThreadsBCI(t *testing.T) {
	bin := jdk21(t)
	const threads, rounds = 200, 10
	run := func(opts string) *reports.Profile {
		r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads", Options: opts,
			JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"},
			Java:    filepath.Join(bin, "java")})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		require.Contains(t, r.Stdout, "vthreads: sink=")
		p := jvmtest.ParseLogRT(t, r.File("rt.1"))
		checkBalanced(t, p)
		assert.NotContains(t, strings.Join(p.Notes, "\n"), "exits without a seen entry", opts)
		return p
	}
	t.Run("all", func(t *testing.T) {
		p := run("BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER")
		seen := 0
		for _, root := range p.Threads {
			name := reports.ThreadName(root.Name)
			if strings.HasPrefix(name, "ForkJoinPool-") {
				c, _ := callsIn(root, "J:VThreads.", "")
				c2, _ := callsIn(root, "j:VThreads.", "")
				assert.Zero(t, c+c2, "carrier %s holds frames of a virtual thread", root.Name)
			}
			if !strings.HasPrefix(name, "virtual-vt-") {
				continue
			}
			seen++
			calls := map[string]uint64{}
			root.Walk(func(n *reports.Node, d int) {
				if d > 0 && strings.HasPrefix(n.Name[2:], "VThreads.") {
					calls[n.Name[2:]] += n.Calls
				}
			})
			assert.Equal(t, uint64(1), calls["VThreads.task(I)V"], root.Name)
			assert.Equal(t, uint64(rounds), calls["VThreads.step(II)V"], root.Name)
			assert.Equal(t, uint64(2*rounds), calls["VThreads.leaf(J)J"], root.Name)
		}
		assert.Equal(t, threads, seen, "virtual threads with a tree")
	})
	for _, c := range []struct {
		roots string
		want  map[string]uint64
	}{
		// Blocking inside the root.
		{"VThreads.step", map[string]uint64{"VThreads.step(II)V": threads * rounds, "VThreads.leaf(J)J": 2 * threads * rounds}},
		// Blocking outside it, between root calls.
		{"VThreads.leaf", map[string]uint64{"VThreads.leaf(J)J": 2 * threads * rounds}},
	} {
		t.Run(c.roots, func(t *testing.T) {
			p := run("BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=" + c.roots)
			own := vthreadsCalls(p)
			assert.Equal(t, c.want, own)
		})
	}
}

// SAMPLE with virtual threads: a sample is taken on the carrier, so the
// samples of a virtual thread are in its carrier's tree, and the header
// says so. No mount switch charges exact time into the trees: a sampled
// tree holds sample weight only (the thread roots, on which no sample
// lands, hold none).
func TestVirtualThreadsSampled(t *testing.T) {
	bin := jdk21(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads", Options: "SAMPLE=1ms,START,NORTDRIVER",
		JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"},
		Java:    filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	notes := strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, "Virtual threads: 200 started, sampled on their carriers")
	assert.NotContains(t, notes, "with a tree of their own in this report")
	for _, root := range p.Threads {
		assert.False(t, strings.HasPrefix(reports.ThreadName(root.Name), "virtual-"), root.Name)
		assert.Zero(t, root.Base[0], "thread root %s holds time no sample stands for", root.Name)
	}
	assert.Contains(t, r.Stderr, "mode=SAMPLE ", "the state line")
	assert.Contains(t, r.ReadFile(t, "msg"), "virtual threads: 200 started, sampled on their carriers")
}

// TestVirtualThreadsLock: LOCK with virtual threads contending for a
// monitor and for a ReentrantLock, whose waits begin on one carrier and
// may end on another: the waits' state goes with the virtual thread's
// record (it was the carrier's, and a record freed with its virtual
// thread crashed the JVM), and the profile's delays come to what the
// program measured itself (less the waits under LOCK's 10 µs threshold).
func TestVirtualThreadsLock(t *testing.T) {
	bin := jdk21(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreadLocks", Options: "LOCK,START,NORTDRIVER",
		Java: filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	m := regexp.MustCompile(`vthreadlocks: monitorWaitNs=(\d+) lockWaitNs=(\d+)`).FindStringSubmatch(r.Stdout)
	require.NotNil(t, m, r.Stdout)
	monWant, _ := strconv.ParseFloat(m[1], 64)
	rlWant, _ := strconv.ParseFloat(m[2], 64)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	var mon, rl float64
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, _ int) {
			switch {
			case strings.Contains(n.Name, "lock VThreadLocks$Mon"):
				mon += float64(n.Base[0])
			case strings.Contains(n.Name, "park java.util.concurrent.locks.ReentrantLock"):
				rl += float64(n.Base[0])
			}
		})
	}
	t.Logf("monitor: %.1f ms recorded, %.1f measured; ReentrantLock: %.1f recorded, %.1f measured", mon/1e6, monWant/1e6, rl/1e6, rlWant/1e6)
	// Each recorded wait is one stack in the tree, and its values are at
	// its top, nothing at a thread's root: a virtual thread's switches
	// between carriers read no metric (they once charged the carrier's
	// CPU clock as delay, and garbage as contentions).
	recorded := 0
	for _, m := range regexp.MustCompile(`\((\d+) recorded,`).FindAllStringSubmatch(strings.Join(p.Notes, "\n"), -1) {
		n, _ := strconv.Atoi(m[1])
		recorded += n
	}
	stacks := 0
	for _, th := range p.Threads {
		for _, c := range th.Children {
			stacks += int(c.Calls)
		}
	}
	assert.Equal(t, recorded, stacks, "stacks in the tree against waits recorded")
	assertRootsOwnNothing(t, p)
	// Waits under the threshold are not recorded: a few ms of short
	// waits can be a large share of a small total.
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"monitor", mon, monWant}, {"ReentrantLock", rl, rlWant}} {
		assert.LessOrEqual(t, c.got, 1.1*c.want+1e6, "%s: recorded more than the program waited", c.what)
		if c.want >= 5e6 {
			assert.GreaterOrEqual(t, c.got/c.want, 0.4, "%s waits recorded / measured", c.what)
		}
	}
}

// The same with ALLOC: the tree's bytes are the header's, none at a root.
func TestVirtualThreadsAlloc(t *testing.T) {
	bin := jdk21(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreadLocks", Options: "ALLOC=4k,START,NORTDRIVER",
		Java: filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	m := regexp.MustCompile(`standing for (\d+) bytes`).FindStringSubmatch(strings.Join(p.Notes, "\n"))
	require.NotNil(t, m, p.Notes)
	want, _ := strconv.ParseUint(m[1], 10, 64)
	require.NotZero(t, want, "no allocation sampled")
	assert.Equal(t, want, treeTotal(p, 0), "bytes in the tree against the header's")
	assertRootsOwnNothing(t, p)
}

// treeTotal sums metric k over every node of p.
func treeTotal(p *reports.Profile, k int) uint64 {
	var n uint64
	for _, th := range p.Threads {
		th.Walk(func(nd *reports.Node, _ int) {
			if k < len(nd.Base) {
				n += nd.Base[k]
			}
		})
	}
	return n
}

// assertRootsOwnNothing: a sampled tree's values are at its stacks' tops.
func assertRootsOwnNothing(t *testing.T, p *reports.Profile) {
	t.Helper()
	for _, th := range p.Threads {
		for k, v := range th.Base {
			assert.Zero(t, v, "thread %s's root holds metric %d itself", th.Name, k)
		}
	}
}

// Collection started by rtdriver while virtual threads run, parked in
// step() as often as not: the frames each one had open are seeded when
// it is first seen (at a mount, or at its first event), so its calls hang
// under them and the exits of the frames it parked in match. A virtual
// thread first seen at a mount had a record of the current epoch, so
// nothing was seeded: step hung off its root beside four O: exits.
func TestVirtualThreadsCollectionStartedWhileParked(t *testing.T) {
	bin := jdk21(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "VThreads", Args: []string{"20", "100000"}, Options: "METHODEVENTS,CALLTREE",
		JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"}, Java: filepath.Join(bin, "java")})
	p.Expect("ready")
	time.Sleep(300 * time.Millisecond)
	at := socketCtl(p.Result().PID)
	requireOK(t, rt(t, at, "start"))
	time.Sleep(time.Second)
	requireOK(t, rt(t, at, "end"))
	prof := p.Result().LogRT(t, 1)
	seen, steps := 0, uint64(0)
	for _, root := range prof.Threads {
		if !strings.HasPrefix(reports.ThreadName(root.Name), "virtual-vt-") {
			continue
		}
		seen++
		root.Walk(func(n *reports.Node, _ int) {
			for _, c := range n.Children {
				if strings.HasPrefix(c.Name, "i:VThreads.step(") {
					steps += c.Calls
					assert.Contains(t, n.Name, "VThreads.task(", "%s: step under %s", root.Name, n.Name)
				}
			}
		})
	}
	assert.Equal(t, 20, seen, "virtual threads with a tree")
	assert.NotZero(t, steps)
	for _, n := range prof.Notes {
		if strings.Contains(n, "virtual-vt-") {
			assert.NotContains(t, n, "exits without a seen entry", n)
		}
	}
}

// A virtual thread reads through whichever carrier it is mounted on: one
// carrier whose reads fell back to perf (PTTSLOTS=2: the bpf work area
// has slots for main and one more thread) marks every virtual thread that
// ran on it, not only those it was last mounted on (2 of 10 before). Of
// the two carriers one reads perf: a virtual thread that ran on both was
// on it (one that ran on one only, as a loaded machine's scheduling may
// have it, may not have been).
func TestVirtualThreadsFallbackCarrierMarks(t *testing.T) {
	bin := jdk21(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "VThreads", Args: []string{"10", "50", "carriers"},
		Options: "METRICS=PTT_TIME,START,NORTDRIVER,PTTSLOTS=2",
		JVMArgs: []string{"-Djdk.virtualThreadScheduler.parallelism=2"}, Java: filepath.Join(bin, "java")})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := jvmtest.ParseLogRT(t, r.File("rt.1"))
	// The note counts every thread that read perf; the carriers have
	// no tree (they run no instrumented code), so a count above the
	// marked virtual threads' is a carrier's (java.base's own threads
	// run nothing instrumented either).
	m := regexp.MustCompile(`PTT: (\d+) threads? read perf`).FindStringSubmatch(strings.Join(p.Notes, "\n"))
	require.NotNil(t, m, "no thread read perf with PTTSLOTS=2")
	both := map[string]bool{}
	for _, c := range regexp.MustCompile(`carriers (vt-\d+) (\d+)`).FindAllStringSubmatch(r.Stdout, -1) {
		both[c[1]] = c[2] == "2"
	}
	require.Len(t, both, 10, r.Stdout)
	seen, marked, onBoth := 0, 0, 0
	for _, root := range p.Threads {
		name := reports.ThreadName(root.Name)
		if !strings.Contains(name, "virtual-vt-") {
			continue
		}
		seen++
		isMarked := strings.Contains(root.Name, "[PTT perf]")
		if isMarked {
			marked++
		}
		if both[strings.TrimSuffix(strings.TrimPrefix(name, "virtual-"), " [PTT perf]")] {
			onBoth++
			assert.True(t, isMarked, "%s ran on both carriers, one of them perf's: not marked", root.Name)
		}
	}
	assert.Equal(t, 10, seen)
	perf, _ := strconv.Atoi(m[1])
	if perf <= marked {
		t.Skipf("no carrier read perf in this run (%d threads read perf, %d virtual threads marked)", perf, marked)
	}
	if onBoth == 0 {
		t.Skipf("no virtual thread ran on both carriers in this run")
	}
}
