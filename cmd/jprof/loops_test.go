package main

// Attached BCI profiles and the loops running when they start and end:
// a class whose method runs a lifelong loop is left as it was (HotSpot
// never compiles a replaced method version again), loops the looks miss
// are named, and classes a detach keeps instrumented get their bytes back.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// TestProfileKeepsRunningLoop: a BCI profile attached while the first
// frame of a thread's own code runs a loop (LoopMain.main) leaves that
// class as it was, which keeps the loop compiled during the profile and
// after it (HotSpot never compiles a replaced method version again), and
// says so; the classes it calls are instrumented.
func TestProfileKeepsRunningLoop(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		// main's own loop, and a loop main calls (LoopRun.loop, while
		// main, which has a loop too, is not in it): the outermost loop
		// is left alone, never the step it calls, a hot method with a
		// loop of its own.
		// The same loop on a thread whose lambda calls it (LoopDelegate
		// thread): seen at three looks over half a second, it is no task
		// that ends. And on a virtual thread (JDK 21+), which JVMTI's
		// GetAllThreads does not list.
		type loopCase struct {
			main, mode string
			kept       []string
			method     string
		}
		for _, c := range []loopCase{{"LoopMain", "", []string{"LoopMain"}, "LoopMain.main"}, {"LoopDelegate", "", []string{"LoopRun"}, "LoopRun.loop"},
			{"LoopDelegate", "thread", []string{"LoopRun"}, "LoopRun.loop"}, {"LoopDelegate", "virtual", []string{"LoopRun"}, "LoopRun.loop"}} {
			t.Run(jdk.Name+"/"+c.main+c.mode, func(t *testing.T) {
				args := []string{"120"}
				if c.mode != "" {
					args = append(args, c.mode)
				}
				p := jvmtest.Launch(t, jvmtest.Run{Class: c.main, Args: args, Options: "-", Java: jdk.Java})
				pid := p.Result().PID
				ready, _ := p.Line(time.Minute)
				if ready == "vthreads: unsupported" {
					t.Skipf("%s has no virtual threads", jdk.Name)
				}
				require.Equal(t, fmt.Sprintf("ready %d", pid), ready)
				// Three profiles: the loop calls step, so the thread's stack
				// changes depth while the agent reads it (once missed, the
				// loop ran interpreted for good).
				for i := 1; i <= 3; i++ {
					b, stderr := profileLogRT(t, strconv.Itoa(pid), "bci")
					what := "1 class left as it was, its methods not seen: a method of it was running a loop"
					if len(c.kept) > 1 {
						what = fmt.Sprintf("%d classes left as they were, their methods not seen: a method of each was running a loop", len(c.kept))
					}
					assert.Contains(t, string(b), "BCI: "+what, "profile %d", i)
					assert.Contains(t, string(b), "LoopWork.step(J)J")
					assert.NotContains(t, string(b), c.method)
					// jprof's last line says so too: the log-rt's header
					// is lost in a flame graph or collapsed stacks.
					assert.Contains(t, stderr, "; note: 1 class was left uninstrumented for the profile, a loop of each running when it started")
					assert.Contains(t, stderr, " says more): "+strings.Join(c.kept, ", ")+";", "the class named")
					// No loop missed (TestProfileWarnsMissedLoop's
					// warning), nor any other but a PMU fallback.
					for _, l := range strings.Split(stderr, "\n") {
						if !strings.Contains(l, "not countable here") {
							assert.NotContains(t, l, "warning:")
						}
					}
				}
				msg, err := os.ReadFile(fmt.Sprintf("/tmp/jprof-%d/log-msg_%d", os.Getuid(), pid))
				require.NoError(t, err)
				// At each start (the detach has nothing to give back).
				for _, k := range c.kept {
					assert.Equal(t, 3, strings.Count(string(msg), "BCI: class "+k+" left as it was: a method of it is running a loop"), k)
				}
				assert.NotContains(t, string(msg), "keeps its instrumentation")
				assert.NotContains(t, string(msg), "runs interpreted until it returns")
			})
		}
	}
}

// TestProfileWarnsMissedLoop: a lifelong loop deeper than the looks for
// running loops (LoopDeep: under 70 frames of recursion) is retransformed
// under its feet and runs interpreted from then on; a second after the
// start, log-msg names it.
func TestProfileWarnsMissedLoop(t *testing.T) {
	// Deeper than the looks (LoopDeep), and above the outermost loop (a
	// server's loop under a retry loop, LoopRetry: the retry loop's
	// class is left alone).
	for _, c := range []struct{ main, loop string }{{"LoopDeep", "LoopRun.loop"}, {"LoopRetry", "RetryServer.serve"}} {
		t.Run(c.main, func(t *testing.T) {
			p := jvmtest.Launch(t, jvmtest.Run{Class: c.main, Args: []string{"60"}, Options: "-"})
			pid := p.Result().PID
			p.Expect(fmt.Sprintf("ready %d", pid))
			code, _, stderr := jprofBin(t, "profile", "-d", "2s", "-e", "bci", "-o", t.TempDir()+"/", strconv.Itoa(pid))
			require.Equal(t, 0, code, stderr)
			msgFile := fmt.Sprintf("/tmp/jprof-%d/log-msg_%d", os.Getuid(), pid)
			want := `BCI: a loop in ` + c.loop + ` on thread "main" has been running since its class was retransformed`
			var msg []byte
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				if msg, _ = os.ReadFile(msgFile); strings.Contains(string(msg), want) {
					break
				}
			}
			assert.Contains(t, string(msg), want)
			// Once per method, not at every look.
			assert.Equal(t, 1, strings.Count(string(msg), want))
			// And on jprof's last line, where a user looks.
			assert.Contains(t, stderr, "; warning: 1 loop is running interpreted in code a profile's retransformation replaced, until it returns")
			assert.Contains(t, stderr, c.loop+` on thread "main"`)
		})
	}
}

// A loop that starts during an attached BCI profile, in a class
// instrumented meanwhile, is running at the detach: that class keeps its
// instrumentation (restored, the loop would run interpreted for good),
// and jprof's detach line and log-msg say so; once the loop has
// returned, the class is given its own bytes back.
func TestProfileDetachKeepsLoop(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		// The loop on main, and on a virtual thread (JDK 21+): JVMTI does
		// not list those, and the restore looks at the one it ran on.
		for _, mode := range []string{"platform", "virtual"} {
			t.Run(jdk.Name+"/"+mode, func(t *testing.T) { detachKeepsLoop(t, jdk.Java, mode) })
		}
	}
}

func detachKeepsLoop(t *testing.T, java, mode string) {
	gate := filepath.Join(t.TempDir(), "gate")
	// The loop runs 7 s from the profile's start, past its detach.
	p := jvmtest.Launch(t, jvmtest.Run{Class: "LoopLater", Args: []string{gate, "7", "60", mode}, Options: "-", Java: java})
	pid := p.Result().PID
	ready, _ := p.Line(time.Minute)
	if ready == "vthreads: unsupported" {
		t.Skip("no virtual threads")
	}
	require.Equal(t, fmt.Sprintf("ready %d", pid), ready)
	msgFile := fmt.Sprintf("/tmp/jprof-%d/log-msg_%d", os.Getuid(), pid)
	openOnStart(t, pid, gate)
	code, _, stderr := jprofBin(t, "profile", "-d", "4s", "-e", "bci", "-o", t.TempDir()+"/", strconv.Itoa(pid))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "; 1 kept their instrumentation while a loop of theirs runs")
	msg, err := os.ReadFile(msgFile)
	require.NoError(t, err)
	assert.Contains(t, string(msg), "BCI: class LaterGate left as it was: a method of it is running a loop")
	assert.Contains(t, string(msg), "BCI: class LoopRun keeps its instrumentation: a method of it is running a loop")
	// Once the loop has returned, the class gets its own bytes back: its
	// other callers do not pay the probes until the next profile. Not
	// before: the first look, a second after the detach, still finds the
	// loop (it runs about 2.5 s more), wherever its thread is.
	want := "BCI: class LLoopRun; given its own bytes back: its loop has returned"
	time.Sleep(1200 * time.Millisecond)
	early, _ := os.ReadFile(msgFile)
	assert.NotContains(t, string(early), want, "restored while its loop still ran")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !strings.Contains(string(msg), want); time.Sleep(200 * time.Millisecond) {
		msg, _ = os.ReadFile(msgFile)
	}
	assert.Contains(t, string(msg), want)
	idle := statusField(status(t, pid), "idle-probe-calls")
	time.Sleep(time.Second)
	assert.Equal(t, idle, statusField(status(t, pid), "idle-probe-calls"), "no probe runs once the class is restored")
	assert.Contains(t, string(msg), "BCI: detach: 1 classes keep their instrumentation")
}

// openOnStart makes the file gate once the profile attached to pid has
// started collecting (its log-msg says so), or after 30 s.
func openOnStart(t *testing.T, pid int, gate string) {
	msgFile := fmt.Sprintf("/tmp/jprof-%d/log-msg_%d", os.Getuid(), pid)
	// A log-msg left by an earlier JVM of the same pid (pids wrap) would
	// open the gate before the attach.
	_ = os.Remove(msgFile)
	go func() {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(msgFile); strings.Contains(string(b), "collection started") {
				break
			}
		}
		_ = os.WriteFile(gate, nil, 0o600)
	}()
}
