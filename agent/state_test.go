package main

import (
	"fmt"
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

// stderrLines is the agent's lines on a run's stderr.
func stderrLines(r *jvmtest.Result) []string {
	var out []string
	for _, l := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(l, "libjprof") {
			out = append(out, l)
		}
	}
	return out
}

// The README's demo says on stderr, in one line, what the agent does, and
// the PMU fallback (where there is no PMU) in one short line; log-msg says
// "rtdriver listening" once. Under METHODEVENTS one more short line, and
// the header, say that JIT-compiled code's share is distorted.
func TestStateLineAtStart(t *testing.T) {
	for _, c := range []struct{ opts, source string }{
		{"RTARCF,START", "source=bci"},
		{"METHODEVENTS,RTARCF,START", "source=jvmti-method-events"},
	} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: c.opts})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		lines := stderrLines(r)
		var state string
		for _, l := range lines {
			if strings.Contains(l, " mode=") {
				state = l
			}
			assert.Less(t, len(l), 200, "a wall of text on stderr: %q", l)
		}
		require.NotEmpty(t, state, r.Stderr)
		for _, want := range []string{"mode=RTARCF", "metrics=PTT_", "ptt=", c.source, "start=now",
			fmt.Sprintf("rtdriver=%s ", socketCtl(r.PID).addr), "logpath=" + r.Dir} {
			assert.Contains(t, state, want)
		}
		most := 2
		notes := strings.Join(r.LogRT(t, 1).Notes, "\n")
		if c.source == "source=jvmti-method-events" {
			most = 3
			assert.Contains(t, r.Stderr, "libjprof: note: METHODEVENTS runs collected code interpreted: JIT-compiled code's share is distorted")
			assert.Contains(t, notes, "JIT-compiled code's share of the time is distorted")
		} else {
			assert.NotContains(t, r.Stderr, "distorted")
			assert.Contains(t, notes, "BCI: trivial methods not instrumented")
		}
		assert.LessOrEqual(t, len(lines), most, "only the state line, the source's note and at most the PMU fallback: %q", lines)
		msg := r.ReadFile(t, "msg")
		assert.Equal(t, 1, strings.Count(msg, "rtdriver listening"), "rtdriver listening logged more than once")
		assert.Contains(t, msg, "libjprof state")
		if strings.Contains(r.Stderr, "not countable") {
			// The details are in log-msg and the header.
			assert.Contains(t, msg, "cannot be counted here")
			assert.Contains(t, notes, "cannot be counted here")
		}
	}
}

// QUIET: nothing on the JVM's stderr, every line in log-msg instead, the
// C side's warnings too (FFMPROBES on a JDK without FFM critical
// downcalls); an option error that stops the JVM is still said there.
func TestQuiet(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "QUIET,FFMPROBES,NORTDRIVER,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Empty(t, stderrLines(r), r.Stderr)
	msg := r.ReadFile(t, "msg")
	assert.Regexp(t, `not on stderr \(QUIET\).*libjprof \S+: mode=RTARCF`, msg, "the state line")
	p := r.LogRT(t, 1)
	if strings.Contains(strings.Join(p.Notes, "\n"), "BCI: probes: JNI natives") {
		assert.Regexp(t, `not on stderr \(QUIET\).*FFMPROBES not used`, msg)
	}
	assert.NotEmpty(t, p.Threads)

	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "QUIET,NOSUCH"})
	assert.NotEqual(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, `libjprof: invalid option "NOSUCH"`)
}

// A run that collects nothing says why at VM death and what to add;
// NORTDRIVER without START is warned about at load.
func TestNothingCollectedIsSaid(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, "start=rtdriver")
	assert.Contains(t, r.Stderr, fmt.Sprintf("nothing collected: no START in the options and no rtdriver start came; add START, or run `rtdriver -pid %d -c start` while the program runs", r.PID))

	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, "warning: NORTDRIVER without START: nothing can be collected")
	assert.Contains(t, r.Stderr, "rtdriver=off")

	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.NotContains(t, r.Stderr, "nothing collected")
}

// rtdriver replies say what happened: flush with nothing collected writes
// no file and says so, start while collecting says so, status names the
// process.
func TestRTDriverRepliesSayWhatHappened(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE")
	replies := rt(t, port, "flush")
	require.Len(t, replies, 1)
	assert.True(t, replies[0].OK, replies[0].String())
	assert.Contains(t, replies[0].Detail, "nothing collected since the JVM started (not collecting: send start); no file written")

	st := rt(t, port, "status")[0].Detail
	assert.Contains(t, st, "state=stopped since=- pid=")
	assert.Contains(t, st, "main=Driven ")
	assert.Contains(t, st, "logpath="+p.Result().Dir+" ")

	requireOK(t, rt(t, port, "start"))
	replies = rt(t, port, "start")
	require.True(t, replies[0].OK, replies[0].String())
	assert.Contains(t, replies[0].Detail, "already collecting since ")
	st = rt(t, port, "status")[0].Detail
	assert.Regexp(t, `state=collecting since=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`, st)
	assert.Contains(t, st, fmt.Sprintf("pid=%d ", p.Result().PID))

	p.Send("call 10")
	p.Expect("done 10")
	replies = rt(t, port, "flush,reset,flush")
	requireOK(t, replies)
	assert.Contains(t, replies[0].Detail, "log-rt.1_")
	assert.Contains(t, replies[2].Detail, "nothing collected since the last reset at ")
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	files, _ := filepath.Glob(filepath.Join(r.Dir, "log-rt.*"))
	// rt.2 is VM death's (collection was still on): the empty flush took
	// no number and wrote nothing.
	assert.Equal(t, []string{r.File("rt.1"), r.File("rt.2")}, files, "the empty flush wrote no file")
}

// The default LOGPATH (the current directory) unwritable: one line on
// stderr (no log lines), START ignored, rtdriver start refused with the
// reason; the JVM runs on.
func TestUnwritableLogPathCollectsNothing(t *testing.T) {
	ro := jvmtest.ReadOnlyFS(t)
	port := freePort(t)
	// NOLOGPATH in JPROFOPTS undoes the test's LOGPATH; the JVM runs in
	// the read-only directory.
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven",
		Options: "METHODEVENTS,CALLTREE,START,PORT=" + strconv.Itoa(port), Env: []string{"JPROFOPTS=NOLOGPATH", "RO=" + ro},
		Prefix: []string{"sh", "-c", `cd "$RO" && exec "$@"`, "sh"}})
	p.Expect("ready")
	st := rt(t, tcpCtl(port), "status")[0].Detail
	assert.Contains(t, st, "state=stopped", "START must be ignored")
	replies := rt(t, tcpCtl(port), "start")
	assert.False(t, replies[0].OK)
	assert.Contains(t, replies[0].Detail, "not writable")
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode)
	assert.Contains(t, r.Stderr, "libjprof: warning: LOGPATH "+ro+" (the default: the current directory) is not writable: read-only file system; no profile will be written (START ignored, rtdriver start refused)")
	assert.Contains(t, r.Stderr, "start=never(LOGPATH-not-writable)")
	assert.NotRegexp(t, `\t(INFO|WARN|ERROR)\t`, r.Stderr, "no log-msg lines on the program's stderr")
	assert.NotContains(t, r.Stderr, "log-rt not written", "nothing was collected, so nothing failed to be written")
}

// The header names the calibration table by its JVM build, and says when
// that build (or the CPU) is not this run's.
func TestCalibrationTableIdentityInHeader(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,METRICS=PTT_TIME,PTT=clock,START"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	notes := strings.Join(r.LogRT(t, 1).Notes, "\n")
	out, err := exec.Command(jvmtest.Java(), "-XshowSettings:properties", "-version").CombinedOutput()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*java\.vm\.version = (.*)$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	running := strings.TrimSpace(m[1])

	tm := regexp.MustCompile(`Calibration table PTT_TIME: built-in jvm=".*" version=(\S+) `).FindStringSubmatch(notes)
	if tm == nil {
		assert.Contains(t, notes, "Calibration table PTT_TIME: none")
		t.Skipf("no built-in table for JVM %s", running)
	}
	if tm[1] != running {
		assert.Contains(t, notes, "Warning: calibration table PTT_TIME was made on another JVM build "+tm[1]+", this JVM is "+running)
		assert.Contains(t, r.ReadFile(t, "msg"), "was made on another JVM build")
	} else {
		assert.NotContains(t, notes, "was made on another JVM build")
	}
}

// Frames open when collection starts late (main waits in readLine, deep
// in the JDK) are seeded as O: contexts: the calls made after the start
// hang below O:Driven.main, not off the thread root, and main is not an
// empty O: node at the root.
func TestLateStartSeedsOpenFrames(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE")
	requireOK(t, rt(t, port, "start"))
	p.Send("call 10")
	p.Expect("done 10")
	requireOK(t, rt(t, port, "flush"))
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	prof := r.LogRT(t, 1)
	m := mainThread(t, prof)
	var mainNode *reports.Node
	for _, c := range m.Children {
		assert.NotEqual(t, "i:Driven.work(I)J", c.Name, "work hangs off the thread root")
		if c.Name == "O:Driven.main([Ljava/lang/String;)V" {
			mainNode = c
		}
	}
	require.NotNil(t, mainNode, "main is not a seeded O: frame at the root")
	var work uint64
	mainNode.Walk(func(n *reports.Node, d int) {
		if n.Name == "i:Driven.work(I)J" {
			work += n.Calls
		}
	})
	assert.Equal(t, uint64(10), work, "the calls since the start hang below O:Driven.main")
	assert.Equal(t, uint64(1), mainNode.Calls, "one activation of main, seen from the start")
}
