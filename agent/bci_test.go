package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// Tests of the bytecode-instrumentation source (BCI): real JVMs, the real
// agent and its transformer, JIT on.

// asmBoot puts ASM on the boot class path for the workload that
// generates classes with it (the agent's own ASM is renamed: invisible to
// programs).
var asmBoot = "-Xbootclasspath/a:/usr/share/java/asm.jar"

// jdkName says whether a method belongs to the JDK, to a hidden class
// (named by address) or to a class unloaded before VM death (the counting
// agent cannot name those): not compared by count.
func jdkName(name string) bool {
	for _, p := range []string{"java/", "jdk/", "sun/", "com/sun/", "gen/", "?."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.Contains(name, "$MH.0x") || strings.Contains(name, "$$Lambda$")
}

// exceptionExits reads a thread's exception exits from log-msg's summary.
func exceptionExits(t *testing.T, r *jvmtest.Result, thread string) (exc, unmatched, missed int) {
	t.Helper()
	msg := r.ReadFile(t, "msg")
	m := regexp.MustCompile(`"thread": "[0-9a-f]{8}_` + thread + `", "events": \d+, "exceptionExits": (\d+), "nodes": \d+, "unmatchedExits": (\d+), "missedExits": (\d+)`).FindStringSubmatch(msg)
	require.NotNil(t, m, msg)
	exc, _ = strconv.Atoi(m[1])
	unmatched, _ = strconv.Atoi(m[2])
	missed, _ = strconv.Atoi(m[3])
	return
}

// countedRun runs a program without libjprof under the independent JVMTI
// counting agent: its output, and every method's calls.
func countedRun(t *testing.T, class string, args, jvm []string) (*jvmtest.Result, map[string]uint64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "counts")
	ref := jvmtest.Start(t, jvmtest.Run{Class: class, Args: args, Options: "-",
		JVMArgs: append(append([]string{}, jvm...), "-agentpath:"+jvmtest.CountAgent(t)+"="+out)})
	require.Equal(t, 0, ref.ExitCode, ref.Stderr)
	return ref, jvmtest.Counts(t, out)
}

// Per-method call counts of every instrumented method equal those an
// independent JVMTI counting agent sees on the same deterministic
// program, native methods included (through their wrappers), and nothing
// is seen that did not run: with ALLMETHODS every method is instrumented
// and every one is compared; by default trivial methods are left out and
// every method seen is compared.
func TestBCIExactCounts(t *testing.T) {
	for _, c := range []struct {
		class string
		args  []string
		jvm   []string
	}{
		{class: "hellop"},
		{class: "Exceptions"},
		{class: "Fib", args: []string{"20"}},
		{class: "StaticInstance"},
		{class: "Threads"},
		{class: "Natives"},
		{class: "TrivialCases"},
		{class: "BCICases", jvm: []string{"-Xss16m"}},
		// The program's own ASM (a library on the boot class path) is
		// instrumented like any other; gen/: TestBCIGeneratedClassesUnload.
		{class: "BCIGenerated", jvm: []string{asmBoot}},
	} {
		t.Run(c.class, func(t *testing.T) {
			ref, counts := countedRun(t, c.class, c.args, c.jvm)
			for _, all := range []bool{true, false} {
				opts := "CALLTREE,START,NORTDRIVER" // the default source
				if all {
					opts = "BCI,ALLMETHODS," + opts
				}
				r := jvmtest.Start(t, jvmtest.Run{Class: c.class, Args: c.args, JVMArgs: c.jvm, Options: opts})
				require.Equal(t, 0, r.ExitCode, r.Stderr)
				p := asInterpreted(r.LogRT(t, 1))
				checkBalanced(t, p)
				assert.Contains(t, p.Notes, "Event source: bci")
				assert.Equal(t, ref.Stdout, r.Stdout, "the agent changed the program's output")
				own := methodCalls(p)
				app, left := 0, 0
				for name, n := range counts {
					if jdkName(name) {
						continue
					}
					app++
					if !all && own[name] == 0 {
						left++ // trivial: TestBCITrivialMethods says which
						continue
					}
					assert.Equal(t, n, own[name], "calls of %s (%s)", name, opts)
				}
				assert.NotZero(t, app)
				assert.Less(t, left, app, "every method left out")
				for name := range own {
					if !jdkName(name) {
						assert.Contains(t, counts, name, "BCI saw a call that did not happen (%s)", opts)
					}
				}
			}
		})
	}
}

// jdkFeature is the feature release (17, 25) of the JDK the tests run,
// from its release file; 0 if unknown.
func jdkFeature(t *testing.T) int {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(jvmtest.Java())), "release"))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`JAVA_VERSION="(\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// With FFMPROBES the probes are FFM critical downcalls on JDK 22 and
// later, with the counts of the JNI probes (an independent JVMTI counting
// agent's), a thread's first event and exception exits included, and no
// restricted-method warning from the JDK; before 22 the header says why
// they stay JNI calls.
func TestBCIFFMProbes(t *testing.T) {
	ffm := jdkFeature(t) >= 22
	for _, c := range []struct {
		class string
		jvm   []string
	}{
		{class: "Exceptions"},
		{class: "Threads"},
		{class: "BCICases", jvm: []string{"-Xss16m"}},
	} {
		t.Run(c.class, func(t *testing.T) {
			ref, counts := countedRun(t, c.class, nil, c.jvm)
			r := jvmtest.Start(t, jvmtest.Run{Class: c.class, JVMArgs: c.jvm, Options: "FFMPROBES,RTARCF,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.NotContains(t, r.Stderr, "restricted method")
			p := asInterpreted(r.LogRT(t, 1))
			checkBalanced(t, p)
			notes := strings.Join(p.Notes, "\n")
			if ffm {
				assert.Contains(t, notes, "BCI: probes: FFM critical downcalls (FFMPROBES)")
				assert.NotContains(t, r.Stderr, "FFMPROBES not used")
			} else {
				assert.Contains(t, notes, "BCI: probes: JNI natives (this JDK has no FFM critical downcalls")
				assert.Contains(t, r.Stderr, "libjprof: warning: FFMPROBES not used: the probes are JNI natives (this JDK has no FFM critical downcalls")
			}
			assert.Equal(t, ref.Stdout, r.Stdout, "the agent changed the program's output")
			own := methodCalls(p)
			seen := 0
			for name, n := range counts {
				if jdkName(name) || own[name] == 0 {
					continue // java.base, or trivial (TestBCITrivialMethods)
				}
				seen++
				assert.Equal(t, n, own[name], "calls of %s", name)
			}
			assert.NotZero(t, seen)
			for name := range own {
				if !jdkName(name) {
					assert.Contains(t, counts, name, "BCI saw a call that did not happen")
				}
			}
		})
	}
	// log-gen's events need JNI: FFMPROBES is not used, and log-msg says so.
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "FFMPROBES,CALLTREE,GENERIC,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.ReadFile(t, "msg"), "FFMPROBES not used: the probes are JNI natives (FFMPROBES is not used with log-gen")
}

// By default BCI leaves out exactly the trivial methods (no call but into
// java.base or to trivial methods, of the class or another, no loop,
// no recovering handler, no monitor, at most 35 bytes of bytecode on the
// paths that return, those that only end in a throw not counted; main
// always instrumented, however small), their time in their
// callers', says so in the header and counts them in log-msg; ALLMETHODS
// instruments them.
func TestBCITrivialMethods(t *testing.T) {
	trivial := []string{"TrivialCases.getField()I", "TrivialCases.setField(I)V", "TrivialCases.empty()V",
		"TrivialCases.constant()I", "TrivialCases.arith(II)I", "TrivialCases.branchy(I)I", "TrivialCases.callsJdk(I)I",
		"TrivialCases.chain(I)I", "TrivialCases.wide(I)I", "TrivialCases.crossClass()I", "TrivialCases$Box.get()I", "TrivialCases$Box.<init>()V",
		"TrivialCases.<init>()V", // Object's constructor is java.base's, Box's is trivial
		// Calls to a superclass's method through the subclass's name.
		"TrivialCases$Local.peek()Ljava/lang/Integer;", "TrivialCases$SubBox.viaSuper()I", "TrivialCases$BoxBase.base()I",
		"TrivialCases$SubBox.<init>()V",
		// Checks: the paths that end in a throw are not counted.
		"TrivialCases.throwsSome(I)I", "TrivialCases.checked(I)I", "TrivialCases.throwPathCalls(I)I",
		"TrivialCases.wraps(Ljava/lang/String;)I",
		// A call to a method of the class's own that never returns ends a path.
		"TrivialCases.checkedBy(I)I", "TrivialCases.checkedPrivate(I)I",
		// An assert's code does not run: the JVM has no assertion switch.
		"TrivialCases.asserted(I)I"}
	// viaInterface: an interface's method may run anything; fanOut: its
	// trivial callees make it more than 70 bytes of work; Items.first:
	// the JDK's AbstractList.get has no code (Items.get, with a loop, runs);
	// fails: it always throws; checkedVirtual, checkedOther: the method
	// their failure calls may return (an override) or is not the class's own.
	kept := []string{"TrivialCases.checkedVirtual(I)I", "TrivialCases.checkedOther(I)I",
		"TrivialCases.loops(I)I", "TrivialCases.calls(I)I", "TrivialCases.viaInterface(LTrivialCases$Getter;)I",
		"TrivialCases.fanOut(I)I", "TrivialCases.locked(I)I",
		"TrivialCases.fails(I)I", "TrivialCases.catches(I)I", "TrivialCases.big(JJJJ)J", "TrivialCases.main([Ljava/lang/String;)V",
		"TrivialCases$Items.first()Ljava/lang/Integer;", "TrivialCases$Items.get(I)Ljava/lang/Integer;",
		// A field named like the assert switch, the program's own.
		"TrivialCases$OwnSwitch.flagged(I)I", "TrivialCases$OwnSwitch.spin(I)I"}
	for _, all := range []bool{false, true} {
		opts := "CALLTREE,START,NORTDRIVER"
		if all {
			opts = "ALLMETHODS," + opts
		}
		r := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", Options: opts})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		p := asInterpreted(r.LogRT(t, 1))
		own := methodCalls(p)
		for _, m := range kept {
			assert.NotZero(t, own[m], "%s instrumented (%s)", m, opts)
		}
		for _, m := range trivial {
			if all {
				assert.NotZero(t, own[m], "%s instrumented with ALLMETHODS", m)
			} else {
				assert.Zero(t, own[m], "%s is trivial: left out", m)
			}
		}
		notes := strings.Join(p.Notes, "\n")
		msg := r.ReadFile(t, "msg")
		if all {
			assert.Contains(t, notes, "every method with code instrumented (ALLMETHODS)")
			assert.Contains(t, msg, `"trivialMethodsLeftOut": 0`)
		} else {
			assert.Contains(t, notes, "trivial methods not instrumented, their time counted in their callers")
			assert.Contains(t, notes, "methods of under about 250 ns a call (calibrated self time over calls; jprof report xprof's NS/CALL, marked ~) show larger than they are")
			assert.Regexp(t, `"trivialMethodsLeftOut": [1-9]`, msg)
		}
	}
	// With any assertion switch on the command line, an assert's code
	// may run, and does with -ea: the method is instrumented, and so are
	// the calls its check makes (loops, once a call).
	// A plain -da names nothing: assertions stay off, the rule holds.
	for _, sw := range []string{"-ea", "-esa", "-da:TrivialCases", "-da"} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", JVMArgs: []string{sw}, Options: "CALLTREE,START,NORTDRIVER"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		p := asInterpreted(r.LogRT(t, 1))
		own := methodCalls(p)
		asserted := uint64(1000)
		note := "assert statements' code counts against trivial methods like any other"
		if sw == "-da" {
			asserted = 0
			note = "assert statements' code does not count against trivial methods"
		}
		assert.Contains(t, strings.Join(p.Notes, "\n"), note, "the header with %s", sw)
		assert.Equal(t, asserted, own["TrivialCases.asserted(I)I"], "asserted's calls with %s", sw)
		loops := uint64(2 * 1000) // main's loops(10) and calls(3)'s
		if sw == "-ea" {
			loops += 1000
		}
		assert.Equal(t, loops, own["TrivialCases.loops(I)I"], "loops's calls with %s", sw)
		assert.Zero(t, own["TrivialCases.getField()I"], "the rest of the rule holds with %s", sw)
	}
}

// Native methods are seen under BCI through wrappers (JVMTI's native
// method prefix): their types, the JNI callback into Java beneath the
// native that made it, and log-msg counts the wrappers (exact counts:
// TestBCIExactCounts).
func TestBCINatives(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Natives", Options: "ALLMETHODS,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	var natives, callbacks int
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, d int) {
			switch {
			case strings.HasSuffix(n.Name, ":Natives.staticNative(I)I"):
				assert.Equal(t, "n:", n.Name[:2])
				natives++
			case strings.HasSuffix(n.Name, ":Natives.callsBack(I)I"):
				assert.Equal(t, "N:", n.Name[:2])
				natives++
				require.Len(t, n.Children, 1)
				assert.Contains(t, n.Children[0].Name, "Natives.callback(I)I")
				assert.EqualValues(t, 200, n.Children[0].Calls)
				callbacks++
			case strings.HasSuffix(n.Name, ":Natives.instanceNative(I)I"):
				natives++
			}
		})
	}
	assert.Equal(t, 3, natives)
	assert.Equal(t, 1, callbacks)
	assert.Contains(t, r.ReadFile(t, "msg"), `"nativeMethodsWrapped": 3`)
}

// Exactly one exception exit per frame an exception unwinds: through
// instrumented and JDK frames (ArrayList.forEach), constructors throwing
// before and after super(), synchronized methods, and one exception
// unwinding 10001 frames of recursion. log-gen has each exit.
func TestBCIExceptionExits(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "BCICases", JVMArgs: []string{"-Xss16m"},
		Options: "BCI,ALLMETHODS,CALLTREE,GENERIC,GENFORMAT=text,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "constructors: made=10 before=10 after=10\nthrough JDK frames: caught=10\n"+
		"synchronized: counter=150 odd=50\nclinit: 42\ndeep: unwound 10000\n", r.Stdout)
	gen := r.ReadFile(t, "gen")
	for name, want := range map[string]int{
		"i:BCICases$Derived.check(I)I":                    10,
		"I:BCICases$Derived.body(I)V":                     10,
		"I:BCICases$Derived.<init>(I)V":                   20, // 10 before super() returned, 10 after
		"I:BCICases$Thrower.accept(Ljava/lang/Integer;)V": 10,
		"I:BCICases$Thrower.accept(Ljava/lang/Object;)V":  10, // the bridge method
		"i:BCICases.incOrThrow(I)V":                       50,
		"i:BCICases.deep(I)I":                             10001,
		"I:BCICases$Base.<init>(I)V":                      0,
		"i:BCICases.main([Ljava/lang/String;)V":           0,
	} {
		assert.Equal(t, want, strings.Count(gen, "<! "+name+" "), "exception exits of %s", name)
	}
	exc, unmatched, missed := exceptionExits(t, r, "main")
	assert.Equal(t, 10+10+20+20+50+10001, exc)
	assert.Zero(t, unmatched)
	assert.Zero(t, missed)

	// The tree: after each exception the stack is back where it was
	// caught, so every case is a child of main.
	p := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, p)
	m := mainThread(t, p).Path("i:BCICases.main([Ljava/lang/String;)V")
	require.NotNil(t, m)
	ctor := m.Path("I:BCICases$Derived.<init>(I)V")
	require.NotNil(t, ctor)
	assert.Equal(t, uint64(30), ctor.Calls)
	for name, want := range map[string]uint64{"i:BCICases$Derived.check(I)I": 30, "I:BCICases$Base.<init>(I)V": 20, "I:BCICases$Derived.body(I)V": 20} {
		n := ctor.Path(name)
		if assert.NotNil(t, n, name) {
			assert.Equal(t, want, n.Calls, name)
		}
	}
	var names []string
	for _, ch := range m.Children {
		names = append(names, ch.Name)
	}
	assert.ElementsMatch(t, []string{"I:BCICases$Derived.<init>(I)V", "I:BCICases$Thrower.<init>()V",
		"I:BCICases$Thrower.accept(Ljava/lang/Object;)V", "i:BCICases.inc()V", "i:BCICases.incOrThrow(I)V",
		"i:BCICases$Init.<clinit>()V", "i:BCICases.deep(I)I"}, names)
	assert.NotNil(t, m.Path("i:BCICases$Init.<clinit>()V", "i:BCICases$Init.compute()I"))
	depth := 0
	for n := m.Path("i:BCICases.deep(I)I"); n != nil; n = n.Path("i:BCICases.deep(I)I") {
		depth++
		assert.Equal(t, uint64(1), n.Calls)
	}
	assert.Equal(t, 10001, depth, "deep(10000) recurses to deep(0)")
}

// Recursion until the stack overflows, three times, caught in main: near
// the stack's end the handlers' unwind calls overflow too, and the exits
// they lost are made at the next unwind of the same StackOverflowError.
// Before, each later exit closed the frame below the one it left, and
// main's later calls nested under the recursion (missed exits, 3 runs of
// 3).
//
// stale: first, five overflows caught where they happen (in a(), whose
// caught error no frame passes on): their lost exits are closed by a()'s
// own exits (missed exits), and their count, another error's, must not
// close live frames at the later overflows (unmatched exits, an O: rec
// under main, before). roots: with ROOTS=Overflow.rec the roots' counts
// come down with the frames closed, so that after(), outside the root,
// is not collected (it was, hung off the thread root).
func TestBCIStackOverflow(t *testing.T) {
	for _, c := range []struct{ name, opts, arg string }{{"plain", "", ""}, {"stale", "", "stale"}, {"roots", "ROOTS=Overflow.rec,", ""}} {
		t.Run(c.name, func(t *testing.T) {
			run := jvmtest.Run{Class: "Overflow", Options: "BCI,CALLTREE," + c.opts + "START,NORTDRIVER"}
			if c.arg != "" {
				run.Args = []string{c.arg}
			}
			r := jvmtest.Start(t, run)
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			require.Contains(t, r.Stdout, "overflow: ")
			_, unmatched, missed := exceptionExits(t, r, "main")
			assert.Zero(t, unmatched)
			if c.arg == "" {
				assert.Zero(t, missed)
			}
			p := asInterpreted(r.LogRT(t, 1))
			checkBalanced(t, p)
			if c.name == "stale" {
				// The frames a() caught the error in are closed by
				// key, which in a two-method recursion can take a
				// stale frame for a live one: in about one run in
				// six a pair of a() and b() stays open, and main's
				// later calls nest under it (the README says so).
				// The counts hold either way.
				got := methodCalls(p)
				assert.Equal(t, uint64(17), got["Overflow.after(I)I"])
				assert.Equal(t, uint64(20), got["Overflow.throwsThroughJdk()V"])
				return
			}
			calls := map[string]uint64{}
			parent := mainThread(t, p)
			if c.opts == "" {
				parent = parent.Path("i:Overflow.main([Ljava/lang/String;)V")
				require.NotNil(t, parent)
			}
			for _, ch := range parent.Children {
				calls[ch.Name] = ch.Calls
			}
			want := map[string]uint64{"i:Overflow.rec(I)V": 3, "i:Overflow.after(I)I": 17, "i:Overflow.throwsThroughJdk()V": 20}
			if c.name == "roots" {
				want = map[string]uint64{"i:Overflow.rec(I)V": 3}
			}
			assert.Equal(t, want, calls)
		})
	}
}

// Classes the verifier is strict about, a method too large to
// instrument, and class unloading: generated classes, loaded three times
// by loaders that are dropped and collected.
func TestBCIGeneratedClassesUnload(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "BCIGenerated", JVMArgs: []string{asmBoot, "-Xlog:class+unload=info:stderr"},
		Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "generated: rounds=3 unloaded=true\n", r.Stdout)
	assert.Equal(t, 3, strings.Count(r.Stderr, "unloading class gen.Old "), r.Stderr)
	own := methodCalls(asInterpreted(r.LogRT(t, 1)))
	assert.Equal(t, uint64(3), own["gen/Old.<init>()V"], "class file version 49, no frames")
	assert.Equal(t, uint64(6), own["gen/Old.g(I)I"])
	assert.Equal(t, uint64(6), own["gen/Old.f(I)I"])
	assert.Equal(t, uint64(3), own["gen/Huge.small()I"])
	assert.Zero(t, own["gen/Huge.big(I)I"])
	msg := r.ReadFile(t, "msg")
	assert.Contains(t, msg, "BCI: method gen/Huge.big(I)I left uninstrumented: instrumented, it would exceed 64 KB of code")
	exc, unmatched, missed := exceptionExits(t, r, "main")
	assert.Equal(t, 3, exc, "f(-1) throws once per round, g catches it")
	assert.Zero(t, unmatched)
	assert.Zero(t, missed)
}

// Without START, classes are instrumented when rtdriver starts
// collection: those loaded before are retransformed, main among them
// while it runs (its old code keeps running, so its own entry and exit
// are never seen; its callees are). start/flush/reset/end then behave as
// with JVMTI events.
func TestBCILateStartRetransform(t *testing.T) {
	r := startFlushResetEnd(t, "BCI,ALLMETHODS,CALLTREE")
	first := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, first)
	w := mainThread(t, first).Path("i:Driven.work(I)J")
	require.NotNil(t, w, "main's old code runs on: work is called from the thread root")
	assert.Equal(t, uint64(200), w.Calls)
	assert.Equal(t, uint64(200), w.Path("i:Driven.leaf(I)J").Calls)
	assert.Nil(t, mainThread(t, first).Path("i:Driven.main([Ljava/lang/String;)V"))
}

// asInterpreted names every method i/I whether the JIT compiled it (j/J)
// or not, which depends on the JIT's timing, for the tests of the tree's
// shape.
func asInterpreted(p *reports.Profile) *reports.Profile {
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, d int) {
			if d > 0 && len(n.Name) > 2 && n.Name[1] == ':' && (n.Name[0] == 'j' || n.Name[0] == 'J') {
				n.Name = string(n.Name[0]-('j'-'i')) + n.Name[1:]
			}
		})
	}
	return p
}

// The JIT compiles instrumented methods (C2, level 4): BCI enables no
// method event, so nothing forces the interpreter.
func TestBCIKeepsJIT(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"27"}, JVMArgs: []string{"-XX:+PrintCompilation"},
		Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Regexp(t, `(?m)^\s*\d+\s+\d+\s+[ %sbn!]*4\s+Fib::fib `, r.Stdout, "fib compiled by C2")
	p := r.LogRT(t, 1)
	own := methodCalls(p)
	assert.Equal(t, uint64(2*317811-1), own["Fib.fib(I)I"], "fib(27) makes 2*fib(28)-1 calls")
	// The JIT said it compiled fib: j (static), in every context; main,
	// run once, stays interpreted: i.
	main := mainThread(t, p).Path("i:Fib.main([Ljava/lang/String;)V")
	require.NotNil(t, main, "main never compiled: i")
	require.NotNil(t, main.Path("j:Fib.fib(I)I"), "fib compiled: j")
	assert.NotContains(t, r.ReadFile(t, "rt.1"), "i:Fib.fib(I)I")
	// The agent's own transformer stays out of C2 (a compiler directive).
	assert.Contains(t, r.ReadFile(t, "msg"), "kept out of C2")
	assert.NotRegexp(t, `(?m)^\s*\d+\s+\d+\s+[ %sbn!]*4\s+libjprof\.bci\.`, r.Stdout, "no C2 compile of the agent's classes")

	// But for Probe's own Java probes, which C2 must compile, to inline
	// them: under ROOTS, every call of fib passes through subEnter and
	// subExit, hot enough for C2 while fib itself is kept interpreted
	// (otherwise C2 inlines them into fib first). A directive that kept
	// them out too made them not C2-compilable once hot, so that C2's
	// code called them.
	// The same for FFMPROBES' probes, on JDK 22 and later.
	const java25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
	for _, c := range []struct {
		opts, java string
		probes     []string
	}{
		{"ROOTS=Fib.main", "", []string{"subEnter", "subExit"}},
		{"FFMPROBES", java25, []string{"fenter", "fexit"}},
	} {
		if c.java != "" {
			if _, err := os.Stat(c.java); err != nil {
				t.Logf("no %s: %s's probes not checked", c.java, c.opts)
				continue
			}
		}
		r = jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"30"}, Java: c.java,
			JVMArgs: []string{"-XX:+PrintCompilation", "-XX:CompileCommand=quiet", "-XX:CompileCommand=exclude,Fib::fib"},
			Options: "BCI,ALLMETHODS,CALLTREE," + c.opts + ",START,NORTDRIVER"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Equal(t, uint64(2*1346269-1), methodCalls(r.LogRT(t, 1))["Fib.fib(I)I"], "%s: fib(30) makes 2*fib(31)-1 calls", c.opts)
		for _, m := range c.probes {
			assert.Regexp(t, `(?m)^\s*\d+\s+\d+\s+[ %sbn!]*4\s+libjprof\.bci\.Probe::`+m+` `, r.Stdout, "C2 compiles Probe.%s", m)
		}
	}
}

// INCLUDE and EXCLUDE pick the classes instrumented.
func TestBCIPackageFilters(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "BCICases", Args: []string{"10"}, Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,INCLUDE=BCICases$Derived+BCICases$Base"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	var got []string
	for name := range methodCalls(asInterpreted(r.LogRT(t, 1))) {
		got = append(got, name)
	}
	sort.Strings(got)
	assert.Equal(t, []string{"BCICases$Base.<init>(I)V", "BCICases$Derived.<init>(I)V", "BCICases$Derived.body(I)V", "BCICases$Derived.check(I)I"}, got)

	r = jvmtest.Start(t, jvmtest.Run{Class: "BCICases", Args: []string{"10"}, Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,EXCLUDE=BCICases$"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	got = got[:0]
	for name := range methodCalls(asInterpreted(r.LogRT(t, 1))) {
		got = append(got, name)
	}
	sort.Strings(got)
	assert.Equal(t, []string{"BCICases.deep(I)I", "BCICases.inc()V", "BCICases.incOrThrow(I)V", "BCICases.main([Ljava/lang/String;)V"}, got)
}

// The other outputs work the same: metrics with calibration (the log-rt
// header names the event source and the table), log-gen rebuilt into the
// same tree, and the jprof reports.
func TestBCIOutputs(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "BCI,ALLMETHODS,METRICS=PTT_TIME,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	own := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, own)
	notes := strings.Join(own.Notes, "\n")
	assert.Contains(t, notes, "Event source: bci")
	assert.Regexp(t, `Calibration PTT_TIME: .*event source bci`, notes)
	l3 := mainThread(t, own).Path("i:Exceptions.main([Ljava/lang/String;)V", "i:Exceptions.run()I",
		"i:Exceptions.level1(I)V", "i:Exceptions.level2(I)V", "i:Exceptions.level3(I)V")
	require.NotNil(t, l3)
	assert.Equal(t, uint64(100), l3.Calls)
	require.Len(t, l3.Base, 1)

	// log-gen: the same tree rebuilt from the events.
	r = jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "BCI,ALLMETHODS,METRICS=PTT_TIME,NOCALIBRATE,GENERIC,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	own = asInterpreted(r.LogRT(t, 1))
	f, err := os.Open(r.File("gen"))
	require.NoError(t, err)
	defer f.Close()
	rebuilt, err := reports.BuildProfile(f)
	require.NoError(t, err)
	require.NoError(t, reports.Compare(own, rebuilt, reports.CompareOptions{IgnoreHeader: true, IgnoreDelta: true, IgnoreDSIN: true}))

	for _, rep := range []string{"xtree", "xarc", "xprof"} {
		out, err := exec.Command(jvmtest.Tool("jprof"), "report", rep, r.File("rt.1")).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), "Exceptions.level3", rep)
	}
	pb := filepath.Join(r.Dir, "p.pb.gz")
	out, err := exec.Command(jvmtest.Tool("jprof"), "pprof", r.File("rt.1"), "-o", pb).CombinedOutput()
	require.NoError(t, err, string(out))
	st, err := os.Stat(pb)
	require.NoError(t, err)
	assert.NotZero(t, st.Size())
	assert.Regexp(t, `BCI summary.*"classesRewritten": [1-9]`, r.ReadFile(t, "msg"))
}

// ROOTS instruments the roots and what they reach, and log-rt holds only
// their subgraph: here the constructor, its super constructor and the
// two methods it calls, with their exception exits.
func TestBCIRoots(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "BCICases", Args: []string{"10"},
		Options: "BCI,ALLMETHODS,CALLTREE,GENERIC,GENFORMAT=text,START,NORTDRIVER,ROOTS=BCICases$Derived.<init>"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, p)
	root := mainThread(t, p)
	require.Len(t, root.Children, 1, "only the root's subgraph")
	ctor := root.Path("I:BCICases$Derived.<init>(I)V")
	require.NotNil(t, ctor)
	assert.Equal(t, uint64(30), ctor.Calls)
	assert.Equal(t, map[string]uint64{"BCICases$Derived.<init>(I)V": 30, "BCICases$Derived.check(I)I": 30,
		"BCICases$Base.<init>(I)V": 20, "BCICases$Derived.body(I)V": 20}, methodCalls(p))
	gen := r.ReadFile(t, "gen")
	assert.Equal(t, 20, strings.Count(gen, "<! I:BCICases$Derived.<init>(I)V "))
}

// A chain through ten classes that ran (and were compiled) outside the
// root before the root's first call: each method is instrumented, by
// retransformation, before its caller's body runs, so the chain's counts
// under the root are exact from the first call, and nothing is counted
// outside it.
func TestBCIRootsChainExact(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "RootsChain", Args: []string{"20000", "10"},
		Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=RootsChain.root"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, p)
	want := map[string]uint64{"RootsChain.root(I)J": 10}
	for i := 0; i < 10; i++ {
		want[fmt.Sprintf("RootsChain$C%d.m(I)J", i)] = 10
	}
	assert.Equal(t, want, methodCalls(p))
	assert.Regexp(t, `"retransformCalls": [1-9]`, r.ReadFile(t, "msg"), "the chain's classes were loaded before the root ran")
	assert.Contains(t, r.Stderr, "source=bci", "the state line")
	assert.Contains(t, r.Stderr, " roots=RootsChain.root (", "the state line names the roots")
	assert.Regexp(t, `ROOTS summary.*"roots": "RootsChain.root", "rootMethods": 1\b`, r.ReadFile(t, "msg"))
	assert.NotContains(t, r.Stderr, "method matched")
}

// Several threads entering and leaving the root at once, each many
// times: every call under a root is counted, in every thread, and no
// exit is left without its entry. (Probe.rooted, which lets the sub
// probes call the agent, was once published after a second thread's root
// had already started: 3 runs of 4 lost calls, shown as O: rows.)
func TestBCIRootsThreadsExact(t *testing.T) {
	const threads, n = 4, 200000
	for run := 0; run < 3; run++ {
		r := jvmtest.Start(t, jvmtest.Run{Class: "RootsThreads", Args: []string{strconv.Itoa(threads), strconv.Itoa(n)},
			Options: "BCI,CALLTREE,START,NORTDRIVER,ROOTS=RootsThreads.root"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		p := asInterpreted(r.LogRT(t, 1))
		workers := 0
		for _, th := range p.Threads {
			if !strings.Contains(th.Name, "_worker-") {
				continue
			}
			workers++
			got := map[string]uint64{}
			th.Walk(func(nd *reports.Node, d int) {
				if d > 0 {
					got[nd.Name] += nd.Calls
				}
			})
			assert.Equal(t, map[string]uint64{"i:RootsThreads.root(J)J": n, "i:RootsThreads.leaf(J)J": 8 * n}, got, "run %d, %s", run, th.Name)
			_, unmatched, _ := exceptionExits(t, r, th.Name[strings.Index(th.Name, "_")+1:])
			assert.Zero(t, unmatched, "run %d, %s", run, th.Name)
		}
		assert.Equal(t, threads, workers, "run %d", run)
		assert.Contains(t, strings.Join(p.Notes, "\n"), "ROOTS=RootsThreads.root: only the calls made inside these methods are counted")
	}
}

// Calls whose target the call site does not name, all run outside the
// root first: an interface call running the method of a superclass that
// does not implement the interface (found at the root's first call, and
// again through a class that loads after it), and a method reference
// (invokedynamic). Each is counted from its first call under the root.
func TestBCIRootsDispatchExact(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "RootsChain", Args: []string{"20000", "10", "dispatch"},
		Options: "BCI,ALLMETHODS,CALLTREE,START,NORTDRIVER,ROOTS=RootsChain.dispatch"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := asInterpreted(r.LogRT(t, 1))
	checkBalanced(t, p)
	assert.Equal(t, map[string]uint64{
		"RootsChain.dispatch(ILRootsChain$Shape;LRootsChain$Shape2;)J": 10,
		"RootsChain$Base.area()I":                                      10,
		"RootsChain$Other2.area()I":                                    1,
		"RootsChain$Base2.area()I":                                     9,
		"RootsChain$Ref.twice(I)I":                                     10,
	}, methodCalls(p))
}

// rtdriver roots= re-instruments a running JVM: first one leaf method,
// then its caller (which reaches the leaf again), then everything.
func TestBCIRootsByRTDriver(t *testing.T) {
	p, port := rootsLeafThenWork(t, "BCI,ALLMETHODS,CALLTREE")
	requireOK(t, rt(t, port, "flush,reset"))
	requireOK(t, rt(t, port, "roots=all"))
	p.Send("call 10")
	p.Expect("done 10")
	replies := rt(t, port, "roots")
	require.Len(t, replies, 1)
	assert.False(t, replies[0].OK, "roots needs an argument")
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)

	first := asInterpreted(r.LogRT(t, 1))
	assert.Equal(t, map[string]uint64{"Driven.leaf(I)J": 100}, methodCalls(first))
	second := asInterpreted(r.LogRT(t, 2))
	assert.Equal(t, map[string]uint64{"Driven.work(I)J": 50, "Driven.leaf(I)J": 50}, methodCalls(second))
	require.NotNil(t, mainThread(t, second).Path("i:Driven.work(I)J", "i:Driven.leaf(I)J"))
	third := methodCalls(asInterpreted(r.LogRT(t, 3)))
	assert.Equal(t, uint64(10), third["Driven.work(I)J"])
	assert.Equal(t, uint64(10), third["Driven.leaf(I)J"])
	assert.Contains(t, r.ReadFile(t, "msg"), "BCI roots changed")
}

// Roots changed while two threads run (Service: each calls unit, which
// calls hot and warm, which call nothing): no call may nest under hot or
// warm. Before collection paused for the switch, the old roots' code ran
// meanwhile, its entries counted while the other thread was inside a
// root and its exits not, which nested unit under warm (in 2 of 3 runs
// of this test).
func TestBCIRootsChangedWhileRunning(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "CALLTREE"})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	at := socketCtl(p.Result().PID)
	requireOK(t, rt(t, at, "start"))
	time.Sleep(500 * time.Millisecond)
	for range 4 {
		for _, roots := range []string{"roots=ServiceWork.hot", "roots=all"} {
			requireOK(t, rt(t, at, roots))
			time.Sleep(500 * time.Millisecond)
		}
	}
	requireOK(t, rt(t, at, "flush"))
	prof := p.Result().LogRT(t, 1)
	var leaves, nested uint64
	for _, th := range prof.Threads {
		th.Walk(func(n *reports.Node, _ int) {
			if strings.Contains(n.Name, "ServiceWork.hot(") || strings.Contains(n.Name, "ServiceWork.warm(") {
				leaves += n.Calls
				for _, c := range n.Children {
					nested += c.Calls
					t.Errorf("%s under %s: %d calls", c.Name, n.Name, c.Calls)
				}
			}
		})
	}
	assert.NotZero(t, leaves)
	assert.Zero(t, nested)
}

// A class whose natives were wrapped at load keeps its wrappers through
// retransformations (rtdriver roots=, a retransformation cannot remove
// methods); one loaded before collection started keeps its natives
// unwrapped through the start's retransformation. Both run on, counted.
func TestBCINativesRetransformed(t *testing.T) {
	p, port := driven(t, "CALLTREE,START")
	p.Send("ncall 10")
	p.Expect("ndone 10")
	requireOK(t, rt(t, port, "flush,reset"))
	requireOK(t, rt(t, port, "roots=Driven.work"))
	p.Send("ncall 5")
	p.Expect("ndone 5")
	p.Send("call 5")
	p.Expect("done 5")
	requireOK(t, rt(t, port, "flush,reset"))
	requireOK(t, rt(t, port, "roots=all"))
	p.Send("ncall 7")
	p.Expect("ndone 7")
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	msg := r.ReadFile(t, "msg")
	assert.NotContains(t, msg, "left as it was", "a retransformation failed")
	assert.Equal(t, uint64(10), methodCalls(asInterpreted(r.LogRT(t, 1)))["Driven.nmul(I)J"])
	second := methodCalls(asInterpreted(r.LogRT(t, 2)))
	assert.Zero(t, second["Driven.nmul(I)J"], "outside the root")
	assert.Equal(t, uint64(5), second["Driven.work(I)J"])
	assert.Equal(t, uint64(7), methodCalls(asInterpreted(r.LogRT(t, 3)))["Driven.nmul(I)J"])

	// Loaded before the start: no wrapper, nothing breaks.
	p, port = driven(t, "CALLTREE")
	p.Send("ncall 3")
	p.Expect("ndone 3")
	requireOK(t, rt(t, port, "start"))
	p.Send("ncall 4")
	p.Expect("ndone 4")
	p.Send("call 4")
	p.Expect("done 4")
	p.Send("quit")
	r = p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	late := methodCalls(asInterpreted(r.LogRT(t, 1)))
	assert.Zero(t, late["Driven.nmul(I)J"])
	assert.Equal(t, uint64(4), late["Driven.work(I)J"])
	assert.NotContains(t, r.ReadFile(t, "msg"), "left as it was")
}

// A superclass constructor that throws, the exception caught by the
// constructor's caller: the constructor's catch-all cannot cover its
// super() call, so its exit is not made there. The caller's handler
// tells the agent (Probe.caught), which closes the dead frame as an
// exception exit: serve's later calls hang under serve, not under the
// constructor (they did, each one deeper, until serve's own exit), and
// every count stays exact. An instrumented method the exception passes
// through on its way (make) closes the dead constructor the same way at
// its unwind: an exception exit, not a missed one.
func TestBCISuperConstructorThrows(t *testing.T) {
	plain := jvmtest.Start(t, jvmtest.Run{Class: "CtorThrow", Options: "-"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	for _, opts := range []string{"CALLTREE,START,NORTDRIVER", "RTARCF,START,NORTDRIVER", "CALLTREE,START,NORTDRIVER,ROOTS=CtorThrow.serve"} {
		t.Run(opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "CtorThrow", Options: opts})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Equal(t, plain.Stdout, r.Stdout)
			p := r.LogRT(t, 1)
			checkBalanced(t, p)
			main := p.Thread("main")
			require.NotNil(t, main)
			var serve *reports.Node
			main.Walk(func(n *reports.Node, _ int) {
				if serve == nil && strings.HasSuffix(n.Name, ":CtorThrow.serve(I)I") {
					serve = n
				}
			})
			require.NotNil(t, serve, "serve in the tree")
			assert.EqualValues(t, 100, serve.Calls)
			kids := map[string]uint64{}
			for _, c := range serve.Children {
				kids[c.Name[2:]] += c.Calls
			}
			assert.Equal(t, map[string]uint64{
				"CtorThrow$Derived.<init>(I)V":                   100,
				"CtorThrow$MyStream.<init>(Ljava/lang/String;)V": 100,
				"CtorThrow.after(I)I":                            100,
				"CtorThrow.make(I)LCtorThrow$Derived;":           100,
			}, kids, "serve's callees, each right under it")
			missed := regexp.MustCompile(`Thread (.*): (\d+) exits without a seen entry \(shown as O:\), (\d+) missed exits`)
			for _, n := range p.Notes {
				if m := missed.FindStringSubmatch(n); m != nil {
					assert.Equal(t, "0", m[2], n)
					assert.Equal(t, "0", m[3], n)
				}
			}
		})
	}
}

// Handlers that begin otherwise than by storing their exception (other
// compilers' and tools'): the caught probe keeps the exception in a local
// of its own around its call, with stack map frames and without (a class
// file of version 49). Every handler closes the constructor that died
// under it: marker hangs right under each handler's method.
func TestBCIHandlerShapes(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "BCIHandlers", JVMArgs: []string{asmBoot}, Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, "handlers: done\n", r.Stdout)
	assert.NotContains(t, r.ReadFile(t, "msg"), "left as it was")
	p := r.LogRT(t, 1)
	checkBalanced(t, p)
	for _, cls := range []string{"gen/Handlers", "gen/OldHandlers"} {
		for _, m := range []string{"popH", "msgH", "consumeH", "dupH", "castH"} {
			var under uint64
			for _, th := range p.Threads {
				th.Walk(func(n *reports.Node, _ int) {
					if n.Name[2:] != cls+"."+m+"(I)V" {
						return
					}
					for _, c := range n.Children {
						if c.Name[2:] == cls+".marker()V" {
							under += c.Calls
						}
					}
				})
			}
			assert.EqualValues(t, 100, under, "%s.%s: marker right under it", cls, m)
		}
	}
	missed := regexp.MustCompile(`Thread (.*): (\d+) exits without a seen entry \(shown as O:\), (\d+) missed exits`)
	for _, n := range p.Notes {
		if m := missed.FindStringSubmatch(n); m != nil {
			assert.Equal(t, "0", m[3], n)
		}
	}
}
