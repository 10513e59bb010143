package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// These tests run a real JVM with the real agent on the Java workloads in
// java/src and check the log-rt it writes.

func mainThread(t *testing.T, p *reports.Profile) *reports.Node {
	t.Helper()
	m := p.Thread("main")
	require.NotNil(t, m, "no main thread in log-rt")
	return m
}

// checkBalanced checks the tree invariants every log-rt must hold: a
// thread root has no calls of its own, every method node was called, and
// CEE is the sum of the children's calls (the writer derives it, the
// parser must agree).
func checkBalanced(t *testing.T, p *reports.Profile) {
	t.Helper()
	for _, th := range p.Threads {
		assert.Zero(t, th.Calls, "thread root %s", th.Name)
		th.Walk(func(n *reports.Node, d int) {
			if d > 0 {
				assert.NotZero(t, n.Calls, "node %s under %s has no calls", n.Name, th.Name)
				assert.Regexp(t, `^[iIjJnNCO]:`, n.Name)
			}
			// A wrapped difference shows as a number near 2^64.
			for _, v := range append(append([]uint64{n.DS, n.IN}, n.Base...), n.Delta...) {
				assert.Less(t, v, uint64(1)<<50, "absurd value at %s", n.Name)
			}
		})
	}
}

func TestHellop(t *testing.T) {
	plain := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "-"})
	require.Equal(t, 0, plain.ExitCode)
	for _, opts := range []string{"METHODEVENTS,CALLTREE,START", "METHODEVENTS,RTARCF,START", "METHODEVENTS,METRICS=PTT_TIME,START"} {
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, plain.Stdout, r.Stdout, "the agent changed the program's output")
			p := r.LogRT(t, 1)
			checkBalanced(t, p)
			mainRoot := mainThread(t, p)
			assert.Regexp(t, `^[0-9a-f]{8}_main$`, mainRoot.Name)
			hmain := mainRoot.Path("i:hellop.main([Ljava/lang/String;)V")
			require.NotNil(t, hmain)
			assert.Equal(t, uint64(1), hmain.Calls)
			myA := hmain.Path("I:hellop.myA()V")
			require.NotNil(t, myA)
			assert.Equal(t, uint64(1000), myA.Calls)
			myC := myA.Path("I:hellop.myC()J")
			require.NotNil(t, myC)
			assert.Equal(t, uint64(1000), myC.Calls)
			assert.Equal(t, uint64(1000), myA.Callees())
			assert.Empty(t, myC.Children)
			if strings.HasPrefix(opts, "METHODEVENTS,CALLTREE") {
				assert.Empty(t, p.Metrics)
				assert.Nil(t, myC.Base)
				return
			}
			require.Len(t, p.Metrics, 1)
			assert.Equal(t, "PTT_TIME", p.Metrics[0].Name)
			// The process's CPU time holds the threads' (and the JIT
			// compilers', the collector's, the agent's): the header says
			// what the rows leave out.
			m := regexp.MustCompile(`Process CPU time over this interval: (\d+\.\d{3}) s`).FindStringSubmatch(strings.Join(p.Notes, "\n"))
			require.NotNil(t, m, "the process CPU note")
			cpu, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			var threads uint64
			for _, th := range p.Threads {
				th.Walk(func(n *reports.Node, _ int) { threads += n.Base[0] + n.Delta[0] })
			}
			assert.Greater(t, cpu, 0.5*float64(threads)/1e9, "the process's CPU against its threads' raw time, %d ns", threads)
			// myC loops 100 times per call: it must have measurable
			// time, and in the interpreter more than myA's own.
			assert.NotZero(t, myC.Base[0])
			assert.Greater(t, myC.Base[0], myA.Base[0])
			if strings.HasPrefix(opts, "METHODEVENTS,RTARCF") {
				// RTARCF's implied instructions metric needs a PMU;
				// where there is none, the fallback is said.
				if !strings.Contains(strings.Join(p.Notes, "\n"), "PTT_INSTS") {
					t.Log("machine counts instructions")
				} else {
					assert.Contains(t, r.Stderr, "warning")
				}
			}
		})
	}
}

func TestFibRecursion(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"15"}, Options: "METHODEVENTS,CALLTREE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "fib(15)=610\n", r.Stdout)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	fmain := mainThread(t, p).Path("i:Fib.main([Ljava/lang/String;)V")
	require.NotNil(t, fmain)
	top := fmain.Path("i:Fib.fib(I)I")
	require.NotNil(t, top)
	var total uint64
	maxDepth := 0
	top.Walk(func(n *reports.Node, d int) {
		require.Equal(t, "i:Fib.fib(I)I", n.Name, "only fib below fib")
		total += n.Calls
		maxDepth = max(maxDepth, d)
	})
	assert.Equal(t, uint64(1973), total, "fib(15) makes 2*fib(16)-1 calls")
	assert.Equal(t, 14, maxDepth, "fib(15) recurses to fib(1): 15 levels")
	assert.Equal(t, uint64(1), top.Calls)
}

func TestExceptionsUnwindThreeFrames(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,RTARCF,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "caught=100\n", r.Stdout)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	run := mainThread(t, p).Path("i:Exceptions.main([Ljava/lang/String;)V", "i:Exceptions.run()I")
	require.NotNil(t, run)
	l3 := run.Path("i:Exceptions.level1(I)V", "i:Exceptions.level2(I)V", "i:Exceptions.level3(I)V")
	require.NotNil(t, l3)
	assert.Equal(t, uint64(100), l3.Calls)
	// After three frames unwound by the exception, the stack is back in
	// run(): after() is run's child, not level3's.
	after := run.Path("i:Exceptions.after()V")
	require.NotNil(t, after)
	assert.Equal(t, uint64(100), after.Calls)
	assert.Len(t, run.Children, 2, "run calls level1 and after only")
	msg := r.ReadFile(t, "msg")
	m := regexp.MustCompile(`"thread": "[0-9a-f]{8}_main", "events": \d+, "exceptionExits": (\d+)`).FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	n, _ := strconv.Atoi(m[1])
	assert.GreaterOrEqual(t, n, 300, "3 exception exits per round")
}

func TestNatives(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Natives", Options: "METHODEVENTS,CALLTREE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "natives: sum=100700\n", r.Stdout)
	nm := mainThread(t, r.LogRT(t, 1)).Path(
		"i:Natives.main([Ljava/lang/String;)V")
	require.NotNil(t, nm)
	for _, c := range []struct {
		name  string
		calls uint64
	}{
		{"n:Natives.staticNative(I)I", 200},
		{"N:Natives.instanceNative(I)I", 200},
		{"N:Natives.callsBack(I)I", 200},
	} {
		n := nm.Path(c.name)
		if assert.NotNil(t, n, c.name) {
			assert.Equal(t, c.calls, n.Calls, c.name)
		}
	}
	cb := nm.Path("N:Natives.callsBack(I)I", "I:Natives.callback(I)I")
	require.NotNil(t, cb, "Java called back from a native method nests under it")
	assert.Equal(t, uint64(200), cb.Calls)
}

func TestStaticAndInstance(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "StaticInstance", Options: "METHODEVENTS,CALLTREE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	sm := mainThread(t, r.LogRT(t, 1)).Path("i:StaticInstance.main([Ljava/lang/String;)V")
	require.NotNil(t, sm)
	s := sm.Path("i:StaticInstance.sMethod(I)I")
	i := sm.Path("I:StaticInstance.iMethod(I)I")
	require.NotNil(t, s)
	require.NotNil(t, i)
	assert.Equal(t, uint64(300), s.Calls)
	assert.Equal(t, uint64(300), i.Calls)
}

func TestManyThreads(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Threads", Options: "METHODEVENTS,RTARCF,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "threads: sum=100025632\n", r.Stdout)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	workers := jvmtest.Threads(p, "worker-")
	require.Len(t, workers, 8)
	for _, w := range workers {
		run := w.Path("I:Threads$Worker.run()V")
		require.NotNil(t, run, w.Name)
		work := run.Path("i:Threads.work(I)I")
		require.NotNil(t, work, w.Name)
		assert.Equal(t, uint64(5000), work.Calls, w.Name)
		leaf := work.Path("i:Threads.leaf(I)I")
		require.NotNil(t, leaf, w.Name)
		assert.Equal(t, uint64(5000), leaf.Calls, w.Name)
	}
	briefs := jvmtest.Threads(p, "brief-")
	require.Len(t, briefs, 20)
	for _, b := range briefs {
		n := b.Path("I:Threads$Brief.run()V", "i:Threads.brief(I)I")
		require.NotNil(t, n, b.Name)
		assert.Equal(t, uint64(10), n.Calls, b.Name)
	}
	names := map[string]bool{}
	for _, th := range p.Threads {
		assert.False(t, names[th.Name], "thread %s appears twice", th.Name)
		names[th.Name] = true
	}
}

// Frames entered before profiling began (the Finalizer and Reference
// Handler threads wait in methods entered before VMInit) are seeded as
// Other-type contexts at each thread's first event, so their exits match.
func TestExitsWithoutEntries(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "LateFrames", Options: "METHODEVENTS,CALLTREE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "lateframes: done\n", r.Stdout)
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	var others int
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, d int) {
			if strings.HasPrefix(n.Name, "O:") {
				others++
			}
		})
	}
	assert.NotZero(t, others, "expected Other-type nodes for the frames open at each thread's first event")
	assert.NotContains(t, strings.Join(p.Notes, "\n"), "exits without a seen entry")
}

// HotSpot turns null dereferences in JIT-compiled code into SIGSEGV and
// handles them itself; the Go runtime in the agent must pass them on,
// whether or not method events are on.
func TestImplicitNullChecks(t *testing.T) {
	for _, opts := range []string{"METHODEVENTS,CALLTREE", "METHODEVENTS,CALLTREE,START"} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "NullChecks", Args: []string{"200000"}, Options: opts})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Equal(t, "nullchecks: npes=100000 sum=0\n", r.Stdout, opts)
	}
}

func TestBadOptionStopsJVM(t *testing.T) {
	for _, c := range []struct{ opts, env, want string }{
		{"METHODEVENTS,CALLTREE,BOGUS", "", `invalid option "BOGUS" (from the -agentpath options): unknown option`},
		{"METRICS=PTT_FOO", "", `invalid option "METRICS=PTT_FOO"`},
		{"METHODEVENTS,CALLTREE", "PORT=http", `invalid option "PORT=http" (from JPROFOPTS)`},
		{"METRICS=PTT_INSTS", "", "PTT_INSTS"},
		{"METHODEVENTS,CALLTREE,PORT=8890,HOST=0.0.0.0", "", `invalid option "HOST": 0.0.0.0 is not loopback: listening beyond this host needs TOKEN=`},
	} {
		var env []string
		if c.env != "" {
			env = []string{"JPROFOPTS=" + c.env}
		}
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: c.opts, Env: env})
		assert.NotEqual(t, 0, r.ExitCode, c.opts)
		assert.NotContains(t, r.Stdout, "hellop:", "the program must not run")
		assert.Contains(t, r.Stderr, c.want)
		if strings.Contains(c.want, "invalid option") {
			assert.Contains(t, r.Stderr, "valid options: ")
		}
	}
}

func TestJPROFOPTSAndPrefix(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE", Env: []string{"JPROFOPTS=START,LOGPREFIX=hp"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	_, err := os.Stat(filepath.Join(r.Dir, "hp-rt.1_"+strconv.Itoa(r.PID)))
	assert.NoError(t, err, "JPROFOPTS must be appended to the options")
}

// JPROFOPTS wins for modes too: RTARCF in -agentpath, CALLTREE in the
// environment runs CALLTREE (a log-rt without metrics).
func TestJPROFOPTSModeWins(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,RTARCF", Env: []string{"JPROFOPTS=CALLTREE,START"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	assert.Empty(t, p.Metrics, "CALLTREE from JPROFOPTS must replace RTARCF")
	assert.Contains(t, r.Stderr, "mode=CALLTREE")
}

// A LOGPATH= that cannot be written (a path through a file, a read-only
// file system) is an option that cannot be honoured: the JVM does not
// start, and one line says which option, from where, and why.
func TestUnwritableLogPath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	ro := jvmtest.ReadOnlyFS(t)
	for _, c := range []struct{ logpath, env, from, why string }{
		{filepath.Join(blocker, "sub"), "", "the -agentpath options", "cannot be created: not a directory"},
		{ro, "", "the -agentpath options", "is not writable: read-only file system"},
		{dir, "JPROFOPTS=LOGPATH=" + filepath.Join(ro, "sub"), "JPROFOPTS", "cannot be created: read-only file system"},
	} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,START,LOGPATH=" + c.logpath, Env: []string{c.env}})
		assert.NotEqual(t, 0, r.ExitCode, "the JVM must not start")
		assert.NotContains(t, r.Stdout, "hellop: value", "the program must not run")
		var ours []string
		for _, l := range strings.Split(r.Stderr, "\n") {
			if strings.HasPrefix(l, "libjprof") {
				ours = append(ours, l)
			}
		}
		require.Len(t, ours, 1, r.Stderr)
		assert.Regexp(t, `^libjprof: LOGPATH \S+ \(from `+regexp.QuoteMeta(c.from)+`\) `+c.why+`; no profile could be written, so the JVM does not start`, ours[0])
	}
}

// No start option: nothing is collected and no log-rt is written, but the
// program runs normally.
func TestNoStartCollectsNothing(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	_, err := os.Stat(r.File("rt.1"))
	assert.True(t, os.IsNotExist(err))
	assert.FileExists(t, r.File("msg"))
	entries, _ := os.ReadDir(r.Dir)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp"), "temporary file left: %s", e.Name())
	}
}

// The library is linked with Go's asynchronous preemption off, and says so
// when it is not.
func TestAsyncPreemptionOff(t *testing.T) {
	jvmtest.Build(t)
	out, err := exec.Command("go", "version", "-m", jvmtest.Agent()).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Regexp(t, `-ldflags="?-X=runtime\.godebugDefault=asyncpreemptoff=1[ "\n]`, string(out))
	assert.Contains(t, string(out), "buildinfo.Version=", "the agent carries the build's version")

	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,NORTDRIVER"})
	assert.NotContains(t, r.Stderr, "preemption")
	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,NORTDRIVER", Env: []string{"GODEBUG=asyncpreemptoff=0"}})
	assert.Equal(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "Go asynchronous preemption is on")
}

// What a thread runs after its last collected event is its root's: with
// INCLUDE naming only the method main calls first, main's burn after it
// returns (150 ms of CPU) must show in the thread's root, not vanish at
// the thread's end.
func TestThreadTailCharged(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "TailWork", Args: []string{"150"}, Options: "START,NORTDRIVER,INCLUDE=TailFib"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	m := regexp.MustCompile(`burned (\d+)`).FindStringSubmatch(r.Stdout)
	require.NotNil(t, m, r.Stdout)
	burned, _ := strconv.ParseUint(m[1], 10, 64)
	p := r.LogRT(t, 1)
	main := p.Thread("main")
	require.NotNil(t, main)
	fib := main.Path("j:TailFib.fib(I)J")
	require.NotNil(t, fib, "fib collected")
	assert.GreaterOrEqual(t, main.Base[0], burned*8/10, "main's root holds its burn after fib (%d ns burned)", burned)
}
