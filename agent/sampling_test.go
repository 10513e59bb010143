package main

import (
	"fmt"
	"math"
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

// The sampling source (SAMPLE=) with a real JVM: the sampled tree of a
// known workload, rtdriver control, and the signal-heavy cases (thread
// churn, GC, deoptimization, implicit null checks) that must neither
// crash nor hang.

const (
	hotOuter = "i:SampleHot.outer(J)J"
	hotHeavy = "i:SampleHot.heavy(J)J"
	hotLight = "i:SampleHot.light(J)J"
)

// checkSampled checks what every sampled tree must hold: roots have no
// samples of their own, a context is on the stack in at least as many
// samples as its callees together (CALLS counts samples with the context
// on the stack), only contexts on top have time, and nothing wrapped.
func checkSampled(t *testing.T, p *reports.Profile) {
	t.Helper()
	require.Len(t, p.Metrics, 1)
	assert.Contains(t, p.Metrics[0].Name, "SAMPLED_")
	assert.Contains(t, strings.Join(p.Notes, "\n"), "Sampled tree (SAMPLE=")
	for _, th := range p.Threads {
		assert.Zero(t, th.Calls, "thread root %s", th.Name)
		th.Walk(func(n *reports.Node, d int) {
			if d == 0 {
				return
			}
			assert.NotZero(t, n.Calls, "node %s under %s has no samples", n.Name, th.Name)
			// Methods are named when the report is written, not at
			// class prepare: none may be left without its name.
			assert.Regexp(t, `^.:(<[a-zA-Z0-9_-]+>|[^?].*\..+\(.*\).+)$`, n.Name, "unnamed method under %s", th.Name)
			assert.GreaterOrEqual(t, n.Calls, n.Callees(), "%s: fewer samples than its callees", n.Name)
			if n.Calls == n.Callees() {
				assert.Zero(t, n.Base[0], "%s never on top but has time", n.Name)
			} else {
				assert.NotZero(t, n.Base[0], "%s on top without time", n.Name)
			}
			assert.Less(t, n.Base[0], uint64(1)<<50, "absurd value at %s", n.Name)
		})
	}
}

// hotSamples is the samples of heavy and light under outer, over every
// path that reaches outer in thread th.
func hotSamples(th *reports.Node) (outer, heavy, light uint64) {
	th.Walk(func(n *reports.Node, d int) {
		if n.Name != hotOuter {
			return
		}
		outer += n.Calls
		if h := n.Path(hotHeavy); h != nil {
			heavy += h.Calls
		}
		if l := n.Path(hotLight); l != nil {
			light += l.Calls
		}
	})
	return
}

func TestSampleHotPath(t *testing.T) {
	for _, opts := range []string{"SAMPLE,START", "SAMPLE=timer:1ms,START", "SAMPLE=wall:2ms,START"} {
		t.Run(opts, func(t *testing.T) {
			plain := jvmtest.Start(t, jvmtest.Run{Class: "SampleHot", Args: []string{"1500"}, Options: "-"})
			r := jvmtest.Start(t, jvmtest.Run{Class: "SampleHot", Args: []string{"1500"}, Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, plain.Stdout, r.Stdout)
			p := r.LogRT(t, 1)
			checkSampled(t, p)
			m := mainThread(t, p)
			hmain := m.Path("i:SampleHot.main([Ljava/lang/String;)V")
			require.NotNil(t, hmain, "no SampleHot.main under main")
			outer, heavy, light := hotSamples(m)
			require.NotZero(t, light, "no samples in light()")
			assert.LessOrEqual(t, heavy+light, outer)
			// heavy does light's work three times: light's share of
			// their samples is 1/4, within four binomial standard
			// deviations (the timer source samples at the kernel's tick,
			// a few hundred samples in this run).
			require.GreaterOrEqual(t, heavy+light, uint64(100), "too few samples to judge their shares")
			n := float64(heavy + light)
			share := float64(light) / n
			sigma := math.Sqrt(0.25 * 0.75 / n)
			assert.InDelta(t, 0.25, share, 4*sigma, "light() in %d of %d samples of heavy and light, want about 1/4", light, heavy+light)
			// The hot path dominates the main thread.
			assert.Greater(t, 2*outer, m.Callees(), "outer() in %d of %d samples", outer, m.Callees())
			// The readers take a sampled tree as they take an exact one.
			out, err := exec.Command(jvmtest.Tool("jprof"), "collapsed", r.File("rt.1")).CombinedOutput()
			require.NoError(t, err, "%s", out)
			assert.Regexp(t, `(?m)_main;SampleHot\.main\(String\[\]\);SampleHot\.outer\(long\);SampleHot\.heavy\(long\);SampleHot\.mix\(long, int\) [1-9][0-9]*$`, string(out))
			if strings.Contains(opts, "wall") {
				assert.Equal(t, "SAMPLED_WALL_TIME", p.Metrics[0].Name)
			} else {
				assert.Equal(t, "SAMPLED_CPU_TIME", p.Metrics[0].Name)
			}
		})
	}
}

func TestSampleRTDriver(t *testing.T) {
	port := freePort(t)
	proc := jvmtest.Launch(t, jvmtest.Run{Class: "SampleHot", Args: []string{"driven"}, Options: fmt.Sprintf("SAMPLE,PORT=%d", port)})
	proc.Expect("ready")
	proc.Send("run 200") // not sampling yet
	proc.Expect("done 200")
	st := rt(t, tcpCtl(port), "status")
	require.NotEmpty(t, st)
	assert.Contains(t, st[0].String(), "state=stopped")
	assert.Contains(t, st[0].String(), "source=asgct-sampling")

	requireOK(t, rt(t, tcpCtl(port), "start"))
	proc.Send("run 600")
	proc.Expect("done 600")
	requireOK(t, rt(t, tcpCtl(port), "flush"))
	res := proc.Result()
	p1 := jvmtest.ParseLogRT(t, res.File("rt.1"))
	checkSampled(t, p1)
	o1, h1, l1 := hotSamples(mainThread(t, p1))
	require.NotZero(t, h1, "no samples of heavy() after start")
	assert.NotZero(t, l1)

	// end: stop, flush, reset. Work after it is not sampled.
	requireOK(t, rt(t, tcpCtl(port), "end"))
	p2 := jvmtest.ParseLogRT(t, res.File("rt.2"))
	o2, _, _ := hotSamples(mainThread(t, p2))
	assert.GreaterOrEqual(t, o2, o1, "the end report holds at least what the flush held")
	proc.Send("run 300")
	proc.Expect("done 300")
	// Nothing sampled while stopped: the flush has nothing to write.
	fl := rt(t, tcpCtl(port), "flush")
	requireOK(t, fl)
	assert.Contains(t, fl[0].String(), "nothing collected", "samples taken while stopped")
	_, err := os.Stat(res.File("rt.3"))
	assert.True(t, os.IsNotExist(err), "no log-rt for a flush with nothing collected")

	// start again: the tree grows from where it was, less the reset.
	requireOK(t, rt(t, tcpCtl(port), "start"))
	proc.Send("run 300")
	proc.Expect("done 300")
	requireOK(t, rt(t, tcpCtl(port), "flush"))
	p4 := jvmtest.ParseLogRT(t, res.File("rt.3"))
	checkSampled(t, p4)
	o4, _, _ := hotSamples(mainThread(t, p4))
	assert.NotZero(t, o4, "no samples after a second start")
	// Its header counts the samples since the reset (the end), as its
	// tree does, not those of the earlier log-rts too.
	var tree uint64
	for _, th := range p4.Threads {
		for _, c := range th.Children {
			tree += c.Calls
		}
	}
	m := regexp.MustCompile(`Sampling since the reset at \S+: (\d+) samples`).FindStringSubmatch(strings.Join(p4.Notes, "\n"))
	require.NotNil(t, m, strings.Join(p4.Notes, "\n"))
	header, _ := strconv.ParseUint(m[1], 10, 64)
	assert.GreaterOrEqual(t, header, tree, "the header's samples against the tree's")
	assert.LessOrEqual(t, header, tree+max(20, tree/5), "the header's samples against the tree's")
	proc.Send("quit")
	r := proc.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
}

// The stress run: thread churn, GC, deoptimization, implicit null checks
// and deep recursion under the fastest sampling, CPU and wall.
func TestSampleStress(t *testing.T) {
	plain := jvmtest.Start(t, jvmtest.Run{Class: "SampleStress", Args: []string{"120", "4"}, Options: "-"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	for _, c := range []struct{ opts, conc string }{
		{"SAMPLE=100us,START", "4"},
		// More threads alive than the wall timer signals per period.
		{"SAMPLE=wall:100us,START,SAMPLENODES=64", "24"},
	} {
		opts := c.opts
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "SampleStress", Args: []string{"120", c.conc}, Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, plain.Stdout, r.Stdout)
			p := r.LogRT(t, 1)
			checkSampled(t, p)
			stress := jvmtest.Threads(p, "stress-")
			assert.NotEmpty(t, stress, "no worker thread sampled")
			var work uint64
			for _, th := range stress {
				th.Walk(func(n *reports.Node, d int) {
					if n.Name == "i:SampleStress.work(I)J" {
						work += n.Calls
					}
				})
			}
			assert.NotZero(t, work, "no samples in the workers' work()")
			notes := strings.Join(p.Notes, "\n")
			if strings.Contains(opts, "SAMPLENODES=64") {
				// The recursion alone needs more than 64 contexts: the
				// overflow is counted and shown, not lost.
				assert.Contains(t, notes, "past a thread's capacity")
				found := false
				for _, th := range p.Threads {
					if th.Path("O:<sample-node-limit>") != nil {
						found = true
					}
				}
				assert.True(t, found, "no <sample-node-limit> context")
			}
		})
	}
}

// HotSpot's implicit null checks are SIGSEGVs it handles itself: they
// must keep working while SIGPROF interrupts the same code.
func TestSampleNullChecks(t *testing.T) {
	plain := jvmtest.Start(t, jvmtest.Run{Class: "NullChecks", Args: []string{"3000000"}, Options: "-"})
	r := jvmtest.Start(t, jvmtest.Run{Class: "NullChecks", Args: []string{"3000000"}, Options: "SAMPLE=100us,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, plain.Stdout, r.Stdout)
	checkSampled(t, r.LogRT(t, 1))
}

func TestSampleJDK25(t *testing.T) {
	const home = "/usr/lib/jvm/temurin-25-jdk-amd64"
	if _, err := os.Stat(filepath.Join(home, "bin", "java")); err != nil {
		t.Skip("no JDK 25 at " + home)
	}
	// jvmtest runs "java" through the prefix, which finds JDK 25's first.
	java := filepath.Join(home, "bin", "java")
	r := jvmtest.Start(t, jvmtest.Run{Class: "SampleHot", Args: []string{"1500"}, Options: "SAMPLE,START", Java: java,
		JVMArgs: []string{"-XshowSettings:properties"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Contains(t, r.Stderr, "java.specification.version = 25")
	p := r.LogRT(t, 1)
	checkSampled(t, p)
	_, heavy, light := hotSamples(mainThread(t, p))
	assert.NotZero(t, heavy)
	assert.NotZero(t, light)
	s := jvmtest.Start(t, jvmtest.Run{Class: "SampleStress", Args: []string{"60", "4"}, Options: "SAMPLE=wall:100us,START", Java: java})
	require.Equal(t, 0, s.ExitCode, s.Stderr)
	checkSampled(t, s.LogRT(t, 1))
}

func TestSampleOptions(t *testing.T) {
	for _, c := range []struct{ opts, want string }{
		{"SAMPLE,GENERIC", "log-gen"},
		// The option that does not apply is the one named, wherever
		// it stands among the options.
		{"SAMPLE,METRICS=PTT_TIME", `invalid option "METRICS=" (from the -agentpath options): does not apply with SAMPLE`},
		{"START,SAMPLE,METRICS=PTT_TIME", `invalid option "METRICS="`},
		{"SAMPLE,CALLFLOW", `invalid option "CALLFLOW"`},
		{"SAMPLE,PTT=bpf", `invalid option "PTT=" (from the -agentpath options): does not apply with SAMPLE`},
		{"ALLOC,METRICS=PTT_TIME", `invalid option "METRICS=" (from the -agentpath options): does not apply with ALLOC`},
		{"SAMPLE=5ns", "needs a period"},
		{"SAMPLE=gpu:1ms", "unknown sampling kind"},
		{"SAMPLENODES=3", "16-"},
	} {
		_, err := ParseOptions(c.opts, "")
		require.Error(t, err, c.opts)
		assert.Contains(t, err.Error(), c.want, c.opts)
	}
	// Where each came from: METRICS= from the -agentpath options, the
	// source from JPROFOPTS.
	_, err := ParseOptions("METRICS=PTT_TIME", "SAMPLE")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid option "METRICS=" (from the -agentpath options)`)
	_, err = ParseOptions("CALLTREE", "LOCK")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid option "CALLTREE" (from the -agentpath options): does not apply with LOCK`)
	o, err := ParseOptions("SAMPLE=wall:250us,SAMPLENODES=1000", "")
	require.NoError(t, err)
	require.NotNil(t, o.Sample)
	assert.Equal(t, "wall", o.Sample.Kind.String())
	o2, err := ParseOptions("SAMPLE=timer", "")
	require.NoError(t, err)
	assert.Equal(t, "timer", o2.Sample.Kind.String())
	assert.Equal(t, defaultSamplePeriod, o2.Sample.Period)
	assert.Equal(t, int64(250000), o.Sample.Period.Nanoseconds())
	assert.Equal(t, 1000, o.Sample.MaxNodes)
	assert.False(t, o.Calibrate)
	o, err = ParseOptions("SAMPLE", "")
	require.NoError(t, err)
	assert.Equal(t, "cpu", o.Sample.Kind.String())
	assert.Equal(t, defaultSamplePeriod, o.Sample.Period)
	o, err = ParseOptions("SAMPLE,NOSAMPLE", "")
	require.NoError(t, err)
	assert.Nil(t, o.Sample)
}

// The JVM's own threads are sampled too (GC workers, JIT compilers, the
// VM thread): each under a root of its name and a pseudo-frame of its
// kind, and the header compares the time the samples stand for with the
// process's CPU time, which on a GC-heavy program they come close to.
func TestSampleJVMThreads(t *testing.T) {
	// Long enough that the time each thread runs after its last sample
	// (up to a period per Java thread, 10 ms per JVM thread: not
	// sampled) stays a small share even when the tests of other packages
	// leave this one little CPU. GCHeavy alone gives its compiler threads
	// about 15 ms of CPU each on a fast machine, near the JVM threads'
	// 10 ms period: -Xcomp with C1 alone compiles every method it runs,
	// some 300 ms of the compiler's time.
	r := jvmtest.Start(t, jvmtest.Run{Class: "GCHeavy", Args: []string{"3000", "2"},
		JVMArgs: []string{"-Xmx48m", "-XX:+UseParallelGC", "-Xcomp", "-XX:TieredStopAtLevel=1"},
		Options: "SAMPLE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	kinds := map[string]uint64{}
	for _, th := range p.Threads {
		for _, c := range th.Children {
			if strings.HasSuffix(c.Name, "_thread>") {
				kinds[c.Name[2:]] += c.Calls
				assert.Empty(t, c.Children, "a JVM thread's pseudo-frame has no frames under it")
			}
		}
	}
	// The main thread, named like the process until it is a Java
	// thread, is never taken for one of the profiler's: one root per tid.
	roots := map[string]string{}
	for _, th := range p.Threads {
		tid, _, _ := strings.Cut(th.Name, "_")
		if other, dup := roots[tid]; dup {
			t.Errorf("thread %s has two roots: %q and %q", tid, other, th.Name)
		}
		roots[tid] = th.Name
	}
	assert.NotZero(t, kinds["<GC_thread>"], "GC threads sampled: %v", kinds)
	assert.NotZero(t, kinds["<JIT_compiler_thread>"], "JIT compiler threads sampled: %v", kinds)
	notes := strings.Join(p.Notes, "\n")
	m := regexp.MustCompile(`Process CPU time while sampling: (\d+) ms; the samples stand for (\d+) ms \(([\d.]+)%\)`).FindStringSubmatch(notes)
	require.NotNil(t, m, notes)
	pct, _ := strconv.ParseFloat(m[3], 64)
	t.Logf("process CPU %s ms, samples %s ms (%.1f%%)", m[1], m[2], pct)
	// The bench holds the 5% target on javac; here, a bound no loaded
	// machine breaks: the samples stand for most of the process's time
	// and never much more.
	assert.Greater(t, pct, 80.0)
	assert.Less(t, pct, 110.0)
	assert.Regexp(t, `"jvmThreads": [1-9]`, r.ReadFile(t, "msg"))
}

// TestSampleInlined: with DebugNonSafepoints (turned on by SAMPLE) a
// sample in the loop of a method the JIT inlined is charged to that
// method: ServiceWork.hot, inlined into ServiceWork.unit, is the main thread's
// hottest stack, not unit or main.
func TestSampleInlined(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Service", Args: []string{"3"}, Options: "SAMPLE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.ReadFile(t, "rt.1"), "SAMPLE: DebugNonSafepoints turned on")
	out, err := exec.Command(jvmtest.Tool("jprof"), "collapsed", r.File("rt.1")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var top string
	var most uint64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		require.NoError(t, err, line)
		if strings.Contains(line, "_main;") && v > most {
			top, most = line[:i], v
		}
	}
	assert.True(t, strings.HasSuffix(top, ";ServiceWork.unit(long);ServiceWork.hot(long)"), "main's hottest stack: %s", top)
}

// TestSampleKeepsUsersDebugNonSafepoints: a DebugNonSafepoints the user
// set on the command line stays as they set it (SAMPLE turns the flag on
// only when it is at its default), and the header says so.
func TestSampleKeepsUsersDebugNonSafepoints(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Service", Args: []string{"1"}, Options: "SAMPLE,START",
		JVMArgs: []string{"-XX:+UnlockDiagnosticVMOptions", "-XX:-DebugNonSafepoints", "-XX:+PrintFlagsFinal"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	// PrintFlagsFinal prints after the agent's set-up.
	assert.Regexp(t, `bool DebugNonSafepoints +=\s+false\s.*\{command line\}`, r.Stdout)
	assert.Contains(t, r.ReadFile(t, "rt.1"), "DebugNonSafepoints left off, as the command line set it")
}

// TestSampleRecoversWalks: javac's stacks often have their top frame in a
// stub or a frame being built, where AsyncGetCallTrace gives up
// (<unknown_Java>), or are in the VM with their last Java frame recorded
// without its pc (<unknown_not_Java>). The handler walks the first from
// the caller, so they keep their calling context under
// <top_frame_not_walkable> (a leaf under a Java method, never at a thread's
// root; named <stub_NAME> after the JVM's stub it was in where known), and
// the second once the pc is filled in; a thread in the VM called from a C1
// runtime stub is walked from the stub's caller, under the same
// pseudo-frame. More of each are recovered than stay unwalked.
func TestSampleRecoversWalks(t *testing.T) {
	srcs, err := filepath.Glob(filepath.Join(jvmtest.Root(), "java", "src", "*.java"))
	require.NoError(t, err)
	args := append([]string{"1", t.TempDir()}, srcs...)
	// Room for every context, so that no sample goes to <sample-node-limit>.
	r := jvmtest.Start(t, jvmtest.Run{Class: "ParJavac", Args: args, Options: "SAMPLE=500us,SAMPLENODES=1000000,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	msg := r.ReadFile(t, "msg")
	count := func(name string) int { return summaryCount(msg, name) }
	fromCaller, fromAnchor := count("walkedFromCaller"), count("walkedFromAnchor")
	inJava := count("<unknown_Java>") + count("<not_walkable_Java>")
	inVM := count("<unknown_not_Java>")
	t.Logf("samples %d (JVM threads %d); walked from the caller %d, from the anchor %d; unwalked in Java %d, in the VM without a pc %d",
		count("samples"), count("jvmSamples"), fromCaller, fromAnchor, inJava, inVM)
	require.NotZero(t, fromCaller, "no stack walked from the caller")
	assert.Less(t, inJava, fromCaller, "more stacks stayed unwalked in Java than were recovered")
	require.NotZero(t, fromAnchor, "no stack walked from a filled-in anchor")
	assert.Less(t, inVM, fromAnchor, "more stacks in the VM stayed unwalked than were recovered")
	// A thread in the VM called from a C1 runtime stub (counters, allocation).
	pastStub, inStub := count("walkedPastStub"), count("<not_walkable_not_Java>")
	t.Logf("walked past a runtime stub %d; unwalked there %d", pastStub, inStub)
	require.NotZero(t, pastStub, "no stack walked from a runtime stub's caller")
	assert.Less(t, inStub, pastStub, "more stacks in runtime stubs stayed unwalked than were recovered")

	p := r.LogRT(t, 1)
	notes := strings.Join(p.Notes, "\n")
	assert.NotContains(t, notes, "did not give what recovering failed walks needs")
	assert.Contains(t, notes, "stacks walked from the caller of a top frame")
	found, named := topNotWalkable(t, p)
	assert.Equal(t, uint64(fromCaller+pastStub+count("walkedAfterSample")), found, "every sample walked from a caller is in the tree")
	// javac's copies and calls through adapters: the JVM names those.
	t.Logf("walked from a caller %d, the stub named %d", found, named)
	assert.NotZero(t, named, "no walked top frame named after the JVM's stub")
}

// TestSampleNamesStubs: a loop whose time goes to a JVM stub (Math.log's
// generated routine, called from C2's code) has the stub's name under the
// Java method that called it, for most of its samples, on every JDK; not
// <top_frame_not_walkable>, which says nothing of where the time went.
func TestSampleNamesStubs(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "SampleStub", Args: []string{"1500"}, Java: jdk.Java, Options: "SAMPLE=cpu,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			p := r.LogRT(t, 1)
			var inner, stub uint64
			var names []string
			for _, th := range p.Threads {
				th.Walk(func(n *reports.Node, _ int) {
					if !strings.Contains(n.Name, "SampleStub.inner(") {
						return
					}
					inner += n.Calls
					for _, c := range n.Children {
						if walkedTop.MatchString(c.Name) {
							names = append(names, fmt.Sprintf("%s %d", c.Name, c.Calls))
						}
						if regexp.MustCompile(`<stub_\w*(?i:log)\w*>$`).MatchString(c.Name) {
							stub += c.Calls
						}
					}
				})
			}
			t.Logf("inner %d samples, its log stub %d; pseudo-frames under it: %v", inner, stub, names)
			require.NotZero(t, inner)
			assert.Greater(t, stub*3, inner, "less than a third of inner's samples in its log stub")
		})
	}
}

// TestSampleTreeGrows: javac sampled every 200 µs makes a tree of more
// contexts than a thread's first storage holds (16,384); the handler
// grows it, and no sample goes to <sample-node-limit>. With SAMPLENODES
// below what javac needs, the tree stops there and the rest is counted.
func TestSampleTreeGrows(t *testing.T) {
	srcs, err := filepath.Glob(filepath.Join(jvmtest.Root(), "java", "src", "*.java"))
	require.NoError(t, err)
	args := append([]string{"1", t.TempDir()}, srcs...)
	for _, c := range []struct {
		opts    string
		limited bool
	}{{"SAMPLE=200us,START,NORTDRIVER", false}, {"SAMPLE=200us,SAMPLENODES=20000,START,NORTDRIVER", true}} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "ParJavac", Args: args, Options: c.opts})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		largest := 0
		for _, th := range r.LogRT(t, 1).Threads {
			n := 0
			th.Walk(func(*reports.Node, int) { n++ })
			largest = max(largest, n)
		}
		past := summaryCount(r.ReadFile(t, "msg"), "pastNodeLimit")
		t.Logf("%s: largest thread tree %d contexts, %d samples past the limit", c.opts, largest, past)
		if c.limited {
			assert.NotZero(t, past)
			assert.LessOrEqual(t, largest, 20000)
		} else {
			assert.Zero(t, past)
			assert.Greater(t, largest, 16384, "javac's tree did not grow past the first storage")
		}
	}
}

// summaryCount is a count of log-msg's sampling summary (0 if absent).
func summaryCount(msg, name string) int {
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `":\s*(\d+)`).FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// walkedTop matches the pseudo-frame of a top frame walked from its
// caller: <top_frame_not_walkable>, or the JVM's name for the stub it was
// in (sampling_stubs.c).
var walkedTop = regexp.MustCompile(`(<top_frame_not_walkable>|<stub_[^>]+>)$`)

// topNotWalkable checks that every pseudo-frame of a top frame walked
// from its caller is a top frame under a Java frame, and counts their
// samples, and those of them named after a stub.
func topNotWalkable(t *testing.T, p *reports.Profile) (found, named uint64) {
	var walk func(n *reports.Node, depth int)
	walk = func(n *reports.Node, depth int) {
		if walkedTop.MatchString(n.Name) {
			found += n.Calls
			if strings.Contains(n.Name, "<stub_") {
				named += n.Calls
			}
			assert.Empty(t, n.Children, "the pseudo-frame is the top of its stack")
			assert.Greater(t, depth, 1, "the pseudo-frame hangs under a Java frame, not under the thread")
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	for _, th := range p.Threads {
		for _, c := range th.Children {
			walk(c, 1)
		}
	}
	return found, named
}

// TestSampleBlockedWalks: on a GC-heavy program, threads sampled while
// blocked in the VM under a runtime stub (an allocation waiting for the
// GC it started: <not_walkable_not_Java>, or during it: <GC_active>) are
// walked by the VM just after the sample, from the agent's walker thread:
// their samples keep the allocating method's calling context, under
// <top_frame_not_walkable> beneath a GCHeavy frame. (How many are walked
// depends on how soon the walker runs: BENCHMARKS.md has the shares.)
func TestSampleBlockedWalks(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "GCHeavy", Args: []string{"1500", "2"}, JVMArgs: []string{"-Xmx48m", "-XX:+UseParallelGC"},
		Options: "SAMPLE=500us,SAMPLENODES=1000000,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	msg := r.ReadFile(t, "msg")
	after, failed, unwalked := summaryCount(msg, "walkedAfterSample"), summaryCount(msg, "walkAfterSampleFailed"), summaryCount(msg, "<not_walkable_not_Java>")
	t.Logf("samples %d (JVM threads %d); walked after the sample %d, failed %d; <not_walkable_not_Java> %d; past a stub %d",
		summaryCount(msg, "samples"), summaryCount(msg, "jvmSamples"), after, failed, unwalked, summaryCount(msg, "walkedPastStub"))
	require.NotZero(t, after, "no blocked thread's stack walked after its sample")
	// Blocked threads wait in their handler for their walk, which then
	// finds the thread where it was sampled.
	assert.NotZero(t, summaryCount(msg, "walkWaitedFor"), "no blocked thread waited for its walk")
	p := r.LogRT(t, 1)
	assert.Contains(t, strings.Join(p.Notes, "\n"), "walked by the VM after the sample")
	// The polling word was found: threads leaving a wait are walked past
	// their stub in the handler.
	assert.NotContains(t, strings.Join(p.Notes, "\n"), "polling word")
	assert.NotZero(t, summaryCount(msg, "walkedPastStub"), "no stack walked past a runtime stub")
	found, _ := topNotWalkable(t, p)
	assert.Equal(t, uint64(summaryCount(msg, "walkedFromCaller")+summaryCount(msg, "walkedPastStub")+after), found)
	// The walks end in the program's own frames.
	var underGC uint64
	var walk func(n *reports.Node, inGC bool)
	walk = func(n *reports.Node, inGC bool) {
		inGC = inGC || strings.Contains(n.Name, "GCHeavy.")
		if inGC && walkedTop.MatchString(n.Name) {
			underGC += n.Calls
		}
		for _, c := range n.Children {
			walk(c, inGC)
		}
	}
	for _, th := range p.Threads {
		walk(th, false)
	}
	assert.NotZero(t, underGC, "no walked stack under a GCHeavy frame")
}
