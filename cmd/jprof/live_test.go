package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// These tests profile running JVMs the way a user does: the jprof binary
// of the build (which finds libjprof.so beside it), against java/src/
// Service.java started without any agent.

// jprofBin runs build/bin/jprof and returns its exit status, stdout and
// stderr.
func jprofBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return jprofAs(t, nil, args...)
}

func jprofAs(t *testing.T, prefix []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append(append(append([]string(nil), prefix...), jvmtest.Tool("jprof")), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "jprof %v hung\nstderr:\n%s", args, errOut.String())
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "jprof %v: %v", args, err)
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// service starts Service (no agent) on java and waits until it runs.
func service(t *testing.T, java string, args ...string) *jvmtest.Proc {
	t.Helper()
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "-", Java: java, Args: args})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	return p
}

// leafTotals sums a collapsed file's values by leaf frame.
func leafTotals(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	tot := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "collapsed line %q", line)
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		require.NoError(t, err, line)
		frames := strings.Split(line[:i], ";")
		tot[frames[len(frames)-1]] += v
	}
	return tot
}

// checkHot: ServiceWork.hot holds the most time of the program's methods.
// Sampled after an attach, the code the JIT compiled before it tells its
// inlined methods apart at safepoints only (DebugNonSafepoints was off):
// ServiceWork.hot's samples may then land on any caller it was inlined into
// (unit, and the loops of work and main), so a sampled profile must show
// hot for a large share and well above warm, the decoy, rather than on
// top.
func checkHot(t *testing.T, path string, sampled bool) {
	t.Helper()
	tot := leafTotals(t, path)
	if sampled {
		tot["ServiceWork.hot(long)"] += tot["ServiceWork.unit(long)"]
		delete(tot, "ServiceWork.unit(long)")
	}
	// The program's own methods (wall time also counts the JVM's
	// waiting threads).
	var all float64
	for f, v := range tot {
		if !strings.HasPrefix(f, "Service") {
			delete(tot, f)
			continue
		}
		all += float64(v)
	}
	hot, warm := tot["ServiceWork.hot(long)"], tot["ServiceWork.warm(long)"]
	if sampled {
		assert.Greater(t, hot, 4*warm, "ServiceWork.hot must outweigh ServiceWork.warm: %v", tot)
		assert.Greater(t, float64(hot), all/4, "ServiceWork.hot's share of the program's samples: %v", tot)
		return
	}
	assert.Greater(t, hot, warm, "ServiceWork.hot must outweigh ServiceWork.warm: %v", tot)
	var top string
	for f, v := range tot {
		if top == "" || v > tot[top] {
			top = f
		}
	}
	assert.Equal(t, "ServiceWork.hot(long)", top, "the hottest leaf: %v", tot)
}

func status(t *testing.T, pid int) string {
	t.Helper()
	code, out, errOut := jprofBin(t, "status", strconv.Itoa(pid))
	require.Equal(t, 0, code, errOut)
	return out
}

func TestProfileRunningJVM(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		for _, ev := range []string{"cpu", "wall", "bci"} {
			t.Run(jdk.Name+"/"+ev, func(t *testing.T) {
				p := service(t, jdk.Java)
				pid := p.Result().PID
				out := filepath.Join(t.TempDir(), "p.collapsed")
				code, stdout, stderr := jprofBin(t, "profile", "-d", "2s", "-e", ev, "-o", out, strconv.Itoa(pid))
				require.Equal(t, 0, code, "stderr:\n%s", stderr)
				assert.Contains(t, stderr, "loading libjprof into pid "+strconv.Itoa(pid))
				assert.Contains(t, stderr, "detached:")
				assert.Contains(t, stdout, "wrote "+out)
				// QUIET: the agent's load lines reach jprof's user, not
				// the program's stderr (its log, for a service).
				assert.Regexp(t, `(?m)^libjprof \S+: mode=\S+ .*source=`, stderr, "the agent's state line")
				assert.NotRegexp(t, `(?m)^libjprof`, p.Stderr(), "the program's stderr")
				if strings.Contains(stderr, "not countable here") {
					assert.NotContains(t, stderr, "cannot be counted here", "the PMU fallback said twice")
				}
				assert.Regexp(t, `last=\S+_`+strconv.Itoa(pid)+`\(removed\)`, status(t, pid), "the log-rt jprof converted")
				checkHot(t, out, ev != "bci")
				b, _ := os.ReadFile(out)
				assert.Contains(t, string(b), "_Service-worker;", "the worker thread, running before the attach")
				l, ok := p.Fresh(5 * time.Second)
				assert.True(t, ok && strings.HasPrefix(l, "ops "), "the program runs on after the profile: %q", l)
			})
		}
	}
}

// TestAttachDetachAttach: a profile ends by giving the instrumented
// classes their bytes back (the probes are not called any more, where a
// stop alone leaves them running), and the agent left in the JVM answers
// the next profile.
func TestAttachDetachAttach(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			p := service(t, jdk.Java)
			pid := strconv.Itoa(p.Result().PID)
			code, _, stderr := jprofBin(t, "start", "-e", "bci", pid)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, status(t, p.Result().PID), "state=collecting")
			time.Sleep(500 * time.Millisecond)
			// A stop without a detach: the instrumented code still runs.
			out, err := exec.Command(jvmtest.Tool("rtdriver"), "-pid", pid, "-c", "end").CombinedOutput()
			require.NoError(t, err, "%s", out)
			idle1 := idleCalls(t, p.Result().PID)
			time.Sleep(500 * time.Millisecond)
			idle2 := idleCalls(t, p.Result().PID)
			assert.Greater(t, idle2, idle1, "instrumented code runs while stopped")

			out1 := filepath.Join(t.TempDir(), "one.collapsed")
			code, _, stderr = jprofBin(t, "start", "-e", "bci", pid)
			require.Equal(t, 0, code, stderr)
			time.Sleep(time.Second)
			code, _, stderr = jprofBin(t, "stop", "-o", out1, pid)
			require.Equal(t, 0, code, stderr)
			checkHot(t, out1, false)
			st := status(t, p.Result().PID)
			assert.Contains(t, st, "instrumenting=false")
			idle3 := idleCalls(t, p.Result().PID)
			time.Sleep(time.Second)
			assert.Equal(t, idle3, idleCalls(t, p.Result().PID), "probes called after the detach: %s", st)

			// Again, through the agent already there.
			out2 := filepath.Join(t.TempDir(), "two.collapsed")
			code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-o", out2, pid)
			require.Equal(t, 0, code, stderr)
			assert.NotContains(t, stderr, "loading libjprof")
			checkHot(t, out2, false)
			l, ok := p.Fresh(5 * time.Second)
			assert.True(t, ok && strings.HasPrefix(l, "ops "), "the program runs on: %q", l)
		})
	}
}

// A later profile's log-rt covers its own collection: the interval starts
// at its start, not at the earlier profile's reset (the detach).
func TestProfileAgainInterval(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	for i, wait := range []time.Duration{0, 3 * time.Second} {
		time.Sleep(wait)
		dir := t.TempDir() + "/"
		code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "calls", "-o", dir, pid)
		require.Equal(t, 0, code, stderr)
		files, _ := filepath.Glob(dir + "log-rt.*")
		require.Len(t, files, 1)
		iv := jvmtest.ParseLogRT(t, files[0]).Interval
		require.NotNil(t, iv)
		took := iv.End.Sub(iv.Start)
		assert.Less(t, took, 2500*time.Millisecond, "profile %d: interval %v for a 1s profile (%v to %v)", i+1, took, iv.Start, iv.End)
	}
}

// A JVM whose agent has no control socket (NORTDRIVER) is refused with
// that reason, before any load (which would reach that agent, and still
// leave nothing to drive it through).
func TestProfileUnreachableAgent(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "NORTDRIVER"})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	for _, cmd := range [][]string{{"profile", "-d", "1s"}, {"status"}} {
		code, _, stderr := jprofBin(t, append(cmd, strconv.Itoa(p.Result().PID))...)
		assert.Equal(t, 1, code, "%v", cmd)
		assert.Contains(t, stderr, "has libjprof loaded without a control socket", "%v", cmd)
		assert.NotContains(t, stderr, "loading libjprof", "%v", cmd)
	}
}

// A jprof stop in the middle of a jprof profile takes the collection;
// the profile says so at its end instead of writing a near-empty file.
func TestProfileStoppedByAnother(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result)
	go func() {
		code, _, stderr := jprofBin(t, "profile", "-d", "4s", "-o", filepath.Join(t.TempDir(), "a.collapsed"), pid)
		done <- result{code, stderr}
	}()
	require.Eventually(t, func() bool {
		code, out, _ := jprofBin(t, "status", pid)
		return code == 0 && strings.Contains(out, "state=collecting")
	}, 20*time.Second, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	code, _, stderr := jprofBin(t, "stop", "-o", filepath.Join(t.TempDir(), "b.collapsed"), pid)
	require.Equal(t, 0, code, stderr)
	r := <-done
	assert.Contains(t, r.stderr, "another command (jprof stop, rtdriver end or detach) ended this profile's collection before its end")
}

// -opts ROOTS= alone on a JVM whose agent is loaded changes its roots
// (as rtdriver roots= does) instead of being ignored.
func TestProfileChangesRoots(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	for _, c := range []struct{ root, other string }{{"ServiceWork.hot", "ServiceWork.warm"}, {"ServiceWork.warm", "ServiceWork.hot"}} {
		out := filepath.Join(t.TempDir(), "p.collapsed")
		code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-opts", "ROOTS="+c.root, "-o", out, pid)
		require.Equal(t, 0, code, stderr)
		assert.NotContains(t, stderr, "not used")
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Contains(t, string(b), c.root+"(", "the root")
		assert.NotContains(t, string(b), c.other+"(", "not a root now")
	}
}

// A session's flushes and its stop each get their own default output:
// jprof-PID-N.html for the flush of log-rt N, jprof-PID.html for the stop.
func TestFlushDefaultOutput(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(jvmtest.Tool("jprof"), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "jprof %v: %s", args, out)
	}
	run("start", "-e", "cpu", pid)
	time.Sleep(time.Second)
	run("flush", pid)
	time.Sleep(500 * time.Millisecond)
	run("flush", pid)
	run("stop", pid)
	for _, f := range []string{"jprof-" + pid + "-1.html", "jprof-" + pid + "-2.html", "jprof-" + pid + ".html"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}

func idleCalls(t *testing.T, pid int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(statusField(status(t, pid), "idle-probe-calls"), 10, 64)
	require.NoError(t, err)
	return v
}

// TestProfileAgentpathJVM: a JVM started with -agentpath is profiled by
// its own agent, with its own source.
func TestProfileAgentpathJVM(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) { profileAgentpath(t, jdk.Java) })
	}
}

func profileAgentpath(t *testing.T, java string) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "BCI", Java: java})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	pid := strconv.Itoa(p.Result().PID)
	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-o", out, pid)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "loading libjprof")
	checkHot(t, out, false)
	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-e", "cpu", pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot change to -e cpu; use -e bci")
	// Without -e, the agent profiles what it was loaded for.
	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-o", out, pid)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "-e bci, for 1s")
	// An output that cannot be written is refused before the profile.
	t0 := time.Now()
	code, _, stderr = jprofBin(t, "profile", "-d", "10s", "-o", "/nonexistent/p.html", pid)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no directory /nonexistent to write it in")
	assert.Less(t, time.Since(t0), 5*time.Second, "refused before the profile ran")
}

// threadNames counts the names of a process's threads.
func threadNames(t *testing.T, pid int) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/comm", pid))
	require.NoError(t, err)
	names := map[string]int{}
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil { // a thread may end meanwhile
			names[strings.TrimSpace(string(b))]++
		}
	}
	return names
}

// TestAgentThreadsNamed: the Go runtime's threads, started as the library
// loads, are named libjprof-go, not after the thread that loaded it (the
// JVM's main thread, "java", or its "Attach Listener"), so that top -H and
// perf tell them from the JVM's own; the loading thread keeps its name.
func TestAgentThreadsNamed(t *testing.T) {
	p := service(t, jvmtest.Java())
	pid := p.Result().PID
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "cpu", "-o", filepath.Join(t.TempDir(), "p.collapsed"), strconv.Itoa(pid))
	require.Equal(t, 0, code, stderr)
	names := threadNames(t, pid)
	assert.Equal(t, 1, names["Attach Listener"], "threads: %v", names)
	assert.NotZero(t, names["libjprof-go"], "threads: %v", names)

	q := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "NORTDRIVER"})
	q.Expect(fmt.Sprintf("ready %d", q.Result().PID))
	names = threadNames(t, q.Result().PID)
	// The launcher's thread and the JVM's main thread.
	assert.LessOrEqual(t, names["java"], 2, "threads: %v", names)
	assert.NotZero(t, names["libjprof-go"], "threads: %v", names)
}

// TestAttachRefused: what cannot be done says why, and leaves the JVM
// able to be profiled.
func TestAttachRefused(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-opts", "METHODEVENTS", pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "HotSpot grants method entry and exit events only to an agent loaded at the JVM's start")
	assert.NotContains(t, stderr, "valid options:", "METHODEVENTS is valid, only not at an attach")

	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-e", "nosuch", pid)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want one of cpu|wall|bci|calls")

	sleeper := exec.Command("sleep", "60")
	require.NoError(t, sleeper.Start())
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	code, _, stderr = jprofBin(t, "profile", strconv.Itoa(sleeper.Process.Pid))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not a HotSpot JVM")

	if os.Geteuid() == 0 {
		// Another user (nobody) may not profile root's JVM.
		bin, err := os.MkdirTemp("", "jprof-nobody-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(bin) })
		require.NoError(t, os.Chmod(bin, 0o755))
		b, err := os.ReadFile(jvmtest.Tool("jprof"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(bin, "jprof"), b, 0o755))
		cmd := exec.Command("runuser", "-u", "nobody", "--", filepath.Join(bin, "jprof"), "profile", "-d", "1s", pid)
		cmd.Dir = os.TempDir() // where nobody may write the default output
		o, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", o)
		assert.Contains(t, string(o), "only that user or root")
		assert.Empty(t, control.AgentsOfPID(control.SocketBase, p.Result().PID), "nothing was loaded")
	}

	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-o", out, pid)
	require.Equal(t, 0, code, stderr)
	checkHot(t, out, false)
}

// TestProfileStaleSocket: a socket left by a killed JVM of the same pid
// (pids are reused) is no agent: jprof loads one, which replaces it.
func TestProfileStaleSocket(t *testing.T) {
	p := service(t, "")
	dir := control.SocketDir(control.SocketBase, os.Geteuid())
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := control.SocketPath(control.SocketBase, os.Geteuid(), p.Result().PID)
	_ = os.Remove(path) // one an earlier JVM of this pid left
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: as a SIGKILLed JVM leaves it
	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "cpu", "-o", out, strconv.Itoa(p.Result().PID))
	require.Equal(t, 0, code, stderr)
	checkHot(t, out, true)
}

// TestProfileTargetExits: the JVM ending in the middle of a profile is
// said, and nothing waits for it.
// Its agent's final log-rt, written at VM death, becomes the output.
func TestProfileTargetExits(t *testing.T) {
	p := service(t, "", "4")
	t0 := time.Now()
	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr := jprofBin(t, "profile", "-d", "60s", "-e", "cpu", "-o", out, strconv.Itoa(p.Result().PID))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "exited during the profile")
	assert.Contains(t, stderr, "its agent wrote a final log-rt at VM death")
	assert.Less(t, time.Since(t0), 20*time.Second)
	checkHot(t, out, true)
}

// TestStopFlushAfterExit: jprof stop (or flush) of a JVM that exited
// after jprof start converts the final log-rt its agent wrote at VM
// death, and says so; once converted, or when the agent collected
// nothing, it says why there is no profile rather than that the pid does
// not exist.
func TestStopFlushAfterExit(t *testing.T) {
	for _, cmd := range []string{"stop", "flush"} {
		t.Run(cmd, func(t *testing.T) {
			p := service(t, "", "3")
			pid := strconv.Itoa(p.Result().PID)
			code, _, stderr := jprofBin(t, "start", "-e", "cpu", pid)
			require.Equal(t, 0, code, stderr)
			p.Wait()
			out := filepath.Join(t.TempDir(), "p.collapsed")
			code, stdout, stderr := jprofBin(t, cmd, "-o", out, pid)
			require.Equal(t, 0, code, stderr)
			assert.Regexp(t, `jprof: pid `+pid+` exited \(VM death at [^)]+\); its agent wrote a final log-rt then: /tmp/jprof-\d+/log-rt\.1_`+pid+` \(converted below\)`, stderr)
			assert.Contains(t, stdout, "wrote "+out)
			checkHot(t, out, true)
			code, _, stderr = jprofBin(t, cmd, "-o", out, pid)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "its agent's final log-rt /tmp/jprof-")
			assert.Contains(t, stderr, "is gone: converted by an earlier jprof stop or flush")
		})
	}
	t.Run("nothing collected", func(t *testing.T) {
		p := jvmtest.Launch(t, jvmtest.Run{Class: "Spin", Options: "-", Args: []string{"2000"}})
		p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
		pid := strconv.Itoa(p.Result().PID)
		code, _, stderr := jprofBin(t, "start", "-e", "bci", pid)
		require.Equal(t, 0, code, stderr)
		p.Wait()
		code, _, stderr = jprofBin(t, "stop", "-o", filepath.Join(t.TempDir(), "p.txt"), pid)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "jprof: pid "+pid+" exited (VM death at ")
		assert.Contains(t, stderr, "and its agent wrote no final log-rt: nothing collected")
	})
}

// A JVM that exits during a profile in which its agent collected nothing
// (Spin's only loop is main's, left as it was) is said to have had nothing
// collected, as its log-msg says, not to have been killed.
func TestProfileTargetExitsEmpty(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Spin", Options: "-", Args: []string{"3000"}})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	code, _, stderr := jprofBin(t, "profile", "-d", "60s", "-e", "bci", "-o", filepath.Join(t.TempDir(), "p.txt"), strconv.Itoa(p.Result().PID))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "its agent wrote no final log-rt: nothing collected")
	assert.NotContains(t, stderr, "killed")
}

// TestProfileInterrupt: Ctrl-C ends the profile early, and it is written.
func TestProfileInterrupt(t *testing.T) {
	p := service(t, "")
	out := filepath.Join(t.TempDir(), "p.collapsed")
	cmd := exec.Command(jvmtest.Tool("jprof"), "profile", "-d", "60s", "-e", "cpu", "-o", out, strconv.Itoa(p.Result().PID))
	var errOut strings.Builder
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "profiling pid") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	t0 := time.Now()
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait(), errOut.String())
	assert.Less(t, time.Since(t0), 10*time.Second)
	assert.Contains(t, errOut.String(), "interrupt: stopping")
	checkHot(t, out, true)
}

// An agent started QUIET stays quiet when loaded again without it (its
// options are the first load's).
func TestQuietLoadedAgain(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "QUIET,SAMPLE=cpu"})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	tg, err := attach.Open(p.Result().PID)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, tg.LoadAgent(ctx, filepath.Join(jvmtest.Root(), "build", "libjprof.so"), "START"))
	assert.Contains(t, status(t, p.Result().PID), "state=collecting")
	time.Sleep(200 * time.Millisecond)
	assert.NotRegexp(t, `(?m)^libjprof`, p.Stderr())
}

// TestLoadTwice: loading the library again (as jcmd JVMTI.agent_load
// does) reaches the agent already there, which keeps its source.
func TestLoadTwice(t *testing.T) {
	p := service(t, "")
	tg, err := attach.Open(p.Result().PID)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib := filepath.Join(jvmtest.Root(), "build", "libjprof.so")
	require.NoError(t, tg.LoadAgent(ctx, lib, "SAMPLE=cpu,LOGPATH="+t.TempDir()))
	require.NoError(t, tg.LoadAgent(ctx, lib, "SAMPLE=cpu,START"))
	// Without QUIET (as jcmd loads it) the program's stderr is where the
	// agent talks; a QUIET load's lines are left for its loader.
	// (The JVM's stderr reaches the test through a pipe: not at once.)
	assert.Eventually(t, func() bool {
		return regexp.MustCompile(`(?m)^libjprof \S+: mode=SAMPLE`).MatchString(p.Stderr()) &&
			strings.Count(p.Stderr(), "libjprof: loaded again") == 1
	}, 5*time.Second, 50*time.Millisecond, p.Stderr())
	require.NoError(t, tg.LoadAgent(ctx, lib, "QUIET"))
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, 1, strings.Count(p.Stderr(), "libjprof: loaded again"), p.Stderr())
	held := filepath.Join(control.SocketDir(control.SocketBase, os.Geteuid()), strconv.Itoa(p.Result().PID)+".attach-msg")
	b, err := os.ReadFile(held)
	require.NoError(t, err)
	os.Remove(held)
	assert.Contains(t, string(b), "libjprof: loaded again")
	st := status(t, p.Result().PID)
	assert.Contains(t, st, "state=collecting")
	assert.Contains(t, st, "source=asgct-sampling")
	err = tg.LoadAgent(ctx, lib, "BCI")
	require.Error(t, err)
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "wall", strconv.Itoa(p.Result().PID))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot change to -e wall; use -e cpu")
	code, _, stderr = jprofBin(t, "stop", "-o", filepath.Join(t.TempDir(), "x.collapsed"), strconv.Itoa(p.Result().PID))
	assert.Equal(t, 0, code, stderr)
}

// TestProfileContainer: a JVM in its own PID and mount namespaces (its
// own /tmp, as in a container) is profiled by its pid here.
func TestProfileContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare")
	}
	if err := exec.Command("unshare", "--pid", "--mount", "--fork", "true").Run(); err != nil {
		t.Skipf("unshare --pid --mount refused here: %v", err)
	}
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) { profileContainer(t, jdk.Java) })
	}
}

func profileContainer(t *testing.T, java string) {
	marker := fmt.Sprintf("ns%d", time.Now().UnixNano())
	// The classes are bound to /mnt first: the repository may itself be
	// under /tmp (a fresh clone), which the tmpfs hides.
	script := fmt.Sprintf("mount --bind %s /mnt && mount -t tmpfs tmpfs /tmp && exec %s -cp /mnt Service 120 %s",
		filepath.Join(jvmtest.Root(), "build", "java"), java, marker)
	cmd := exec.Command("unshare", "--pid", "--mount", "--fork", "--mount-proc", "sh", "-c", script)
	var nsErr strings.Builder
	cmd.Stderr = &nsErr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// Its own process group: the JVM (the namespace's init) is killed
	// with unshare, not left to run out its time.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	require.NoError(t, err, "the namespaced JVM: %s", nsErr.String())
	require.True(t, strings.HasPrefix(line, "ready "), line)
	go io.Copy(io.Discard, r)
	hostPID := hostJavaPID(t, "Service 120 "+marker)
	code, list, stderr := jprofBin(t, "list")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^ *%d .*Service \(container, pid \d+ there\)$`, hostPID), list)
	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr = jprofBin(t, "profile", "-d", "2s", "-e", "cpu", "-o", out, strconv.Itoa(hostPID))
	require.Equal(t, 0, code, stderr)
	checkHot(t, out, true)
}

// TestProfileAlloc: -e alloc on a running JVM: each allocation site's
// share of the bytes within 2 points of the truth (AllocSites: 50, 30,
// 20%) over a few seconds (gigabytes allocated), at a 64 KiB interval as
// TestAlloc has it at start.
func TestProfileAlloc(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			p := jvmtest.Launch(t, jvmtest.Run{Class: "AllocSites", Args: []string{"1024", "forever"}, Options: "-", Java: jdk.Java})
			p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
			out := filepath.Join(t.TempDir(), "a.collapsed")
			code, _, stderr := jprofBin(t, "profile", "-d", "3s", "-e", "alloc", "-opts", "ALLOC=64k", "-o", out, strconv.Itoa(p.Result().PID))
			require.Equal(t, 0, code, stderr)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			by := map[string]float64{}
			var total float64
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				i := strings.LastIndexByte(line, ' ')
				v, err := strconv.ParseFloat(line[i+1:], 64)
				require.NoError(t, err)
				for _, site := range []string{"big", "medium", "small"} {
					if strings.Contains(line, ";AllocSites."+site+"();") {
						by[site] += v
						total += v
					}
				}
			}
			require.Positive(t, total, "no allocation of the sites in:\n%s", b)
			for site, want := range map[string]float64{"big": 50, "medium": 30, "small": 20} {
				assert.InDelta(t, want, 100*by[site]/total, 2, "%s: %v of %v", site, by, total)
			}
		})
	}
}

// TestProfileLock: -e lock on a running JVM finds the contended monitor,
// the contended ReentrantLock and the Object.wait where the program
// waits.
func TestProfileLock(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			p := jvmtest.Launch(t, jvmtest.Run{Class: "LockSites", Args: []string{"forever"}, Options: "-", Java: jdk.Java})
			p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
			out := filepath.Join(t.TempDir(), "l.collapsed")
			code, _, stderr := jprofBin(t, "profile", "-d", "2s", "-e", "lock", "-o", out, strconv.Itoa(p.Result().PID))
			require.Equal(t, 0, code, stderr)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Regexp(t, `(?m);LockSites\.contend\(\);O:lock java\.lang\.Object [1-9][0-9]*$`, string(b))
			assert.Regexp(t, `(?m);LockSites\.await\(\);.*O:wait java\.lang\.Object [1-9][0-9]*$`, string(b))
			assert.Regexp(t, `(?m);LockSites\.contendLock\(\);java\.util\.concurrent\.locks\.ReentrantLock\.lock\(\);.*O:park java\.util\.concurrent\.locks\.ReentrantLock\$NonfairSync [1-9][0-9]*$`, string(b))
			// The detach gave LockSupport its own bytes back.
			assert.Equal(t, "original", statusField(status(t, p.Result().PID), "locksupport"))
		})
	}
}

// TestProfileLockTotals: attached before LockSites does its round, a
// lock profile finds the waits the program measured itself at each site
// (a contended monitor, a contended ReentrantLock, Object.wait) within
// 10%, as TestLock does at start.
func TestProfileLockTotals(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "go")
			p := jvmtest.Launch(t, jvmtest.Run{Class: "LockSites", Args: []string{"gate", gate}, Options: "-", Java: jdk.Java})
			pid := strconv.Itoa(p.Result().PID)
			p.Expect("ready " + pid)
			code, _, stderr := jprofBin(t, "start", "-e", "lock", "-opts", "LOCK=0", pid)
			require.Equal(t, 0, code, stderr)
			require.NoError(t, os.WriteFile(gate, nil, 0o644))
			measured, ok := p.Line(60 * time.Second)
			require.True(t, ok, "LockSites did not finish its round")
			out := filepath.Join(t.TempDir(), "l.collapsed")
			code, _, stderr = jprofBin(t, "stop", "-o", out, pid)
			require.Equal(t, 0, code, stderr)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			jvmtest.CheckLockSites(t, measured, b)
		})
	}
}

// TestProfileJLM: -e jlm on a running JVM writes the lock monitor's
// report beside the call tree, with the contended monitor's takes, and
// the detach takes the probes out.
func TestProfileJLM(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			// The round starts once the profile has: its contenders,
			// each in its loop for a quarter of a second, are not
			// there to be taken for lifelong loops at the attach, however
			// slowly a loaded machine runs them.
			gate := filepath.Join(t.TempDir(), "go")
			p := jvmtest.Launch(t, jvmtest.Run{Class: "LockSites", Args: []string{"gate", gate}, Options: "-", Java: jdk.Java})
			p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
			openOnStart(t, p.Result().PID, gate)
			dir := t.TempDir()
			code, stdout, stderr := jprofBin(t, "profile", "-d", "2s", "-e", "jlm", "-o", filepath.Join(dir, "p.html"), strconv.Itoa(p.Result().PID))
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "p.jlm.txt (the lock monitor")
			b, err := os.ReadFile(filepath.Join(dir, "p.jlm.txt"))
			require.NoError(t, err)
			// %MISS GETS NONREC SLOW REC ...: three threads take turns on
			// the monitor, so most takes block.
			assert.Regexp(t, `(?m)^ +[0-9.]+ +[1-9][0-9]* +[1-9][0-9]* +[1-9][0-9]* +0 .*java\.lang\.Object  LockSites\.contend \(block 1, line [0-9]+\)$`, string(b))
			assert.Equal(t, "0", statusField(status(t, p.Result().PID), "idle-probe-calls"))
		})
	}
}

// TestProfileRecoversWalksAttached: sampling attached to a running JVM
// recovers the walks AsyncGetCallTrace fails on the threads that ran
// before the attach too (each thread's stack bounds from HotSpot's own
// table, found in its first sample): on GCHeavy, threads in the VM under
// an allocation's runtime stub are walked past it.
func TestProfileRecoversWalksAttached(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "GCHeavy", Args: []string{"100000", "2"}, Options: "-",
		JVMArgs: []string{"-Xmx48m", "-XX:+UseParallelGC"}})
	pid := p.Result().PID
	time.Sleep(500 * time.Millisecond) // its threads running
	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, _, stderr := jprofBin(t, "profile", "-d", "3s", "-e", "cpu", "-o", out, strconv.Itoa(pid))
	require.Equal(t, 0, code, stderr)
	msg, err := os.ReadFile(fmt.Sprintf("/tmp/jprof-%d/log-msg_%d", os.Getuid(), pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`"walkedPastStub": (\d+)`).FindSubmatch(msg)
	require.NotNil(t, m, "%s", msg)
	n, _ := strconv.Atoi(string(m[1]))
	assert.Positive(t, n, "stacks walked past a runtime stub on threads that ran before the attach")
	assert.Contains(t, string(msg), `"pollingWordUnknown": false`)
}

// TestListAgentColumn: jprof list tells a JVM whose agent has no control
// socket (NORTDRIVER), which nothing can reach, from one without the
// agent and from one it can control.
func TestListAgentColumn(t *testing.T) {
	quiet := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"120"}, Options: "NORTDRIVER"})
	quiet.Expect(fmt.Sprintf("ready %d", quiet.Result().PID))
	none := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"120"}, Options: "-"})
	none.Expect(fmt.Sprintf("ready %d", none.Result().PID))
	code, list, stderr := jprofBin(t, "list")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, fmt.Sprintf(`(?m)^ *%d +\d+  libjprof\* +Service$`, quiet.Result().PID), list)
	assert.Regexp(t, fmt.Sprintf(`(?m)^ *%d +\d+  - +Service$`, none.Result().PID), list)
	assert.Contains(t, list, "without a control socket (NORTDRIVER, rtdriver shutdown, ")
}

// TestProfileCPUAgain: a second CPU profile of the same JVM samples as
// the first did, with perf task-clock events (a 1 ms period). A thread
// that ended while no profile ran (its record not yet dropped) once made
// the next start give up on perf for every thread, and their POSIX CPU
// timers fire at the kernel's tick at the earliest: four times fewer
// samples on this kernel.
func TestProfileCPUAgain(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "ThreadChurn", Args: []string{"100000000", "2"}, Options: "-"})
	pid := strconv.Itoa(p.Result().PID)
	time.Sleep(300 * time.Millisecond)
	timers := regexp.MustCompile(`timers: (\d+) perf task-clock events, (\d+) POSIX CPU timers`)
	for i := 1; i <= 3; i++ {
		b, stderr := profileLogRT(t, pid, "cpu")
		// What code compiled before the attach shows of inlined
		// methods, where a user looks.
		assert.Contains(t, stderr, "Warning: SAMPLE: DebugNonSafepoints turned on at the attach", "profile %d", i)
		m := timers.FindSubmatch(b)
		require.NotNil(t, m, "profile %d: no timers note", i)
		if i == 1 && string(m[1]) == "0" {
			t.Skip("perf events refused on this host (perf_event_paranoid, seccomp): POSIX timers from the first")
		}
		assert.Equal(t, "0", string(m[2]), "profile %d: POSIX timers (perf given up): %s", i, m[0])
		time.Sleep(200 * time.Millisecond) // threads end while nothing samples
	}
}

// profileLogRT runs a one-second `jprof profile -e event` of pid and
// returns the log-rt it kept, and jprof's stderr.
func profileLogRT(t *testing.T, pid, event string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir() + "/"
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", event, "-o", dir, pid)
	require.Equal(t, 0, code, stderr)
	logs, _ := filepath.Glob(filepath.Join(dir, "log-rt.*"))
	require.Len(t, logs, 1, "the log-rt kept in %s", dir)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	return b, stderr
}

// Two jprof profiles started at the same moment: one profiles and writes
// its file; the other is refused, whether it saw the first's collection
// in its status or lost the race between its status and its start (it
// then ended the first's profile at its stop, which got nothing).
func TestProfileTwoAtOnce(t *testing.T) {
	p := service(t, jvmtest.Java(), "120")
	pid := strconv.Itoa(p.Result().PID)
	dir := t.TempDir()
	for round := 0; round < 3; round++ {
		type result struct {
			code        int
			stderr, out string
		}
		res := make(chan result, 2)
		for i := 0; i < 2; i++ {
			out := filepath.Join(dir, fmt.Sprintf("r%d-%d.collapsed", round, i))
			go func() {
				cmd := exec.Command(jvmtest.Tool("jprof"), "profile", "-d", "3s", "-o", out, pid)
				var errOut strings.Builder
				cmd.Stderr = &errOut
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					code = -1
				}
				res <- result{code, errOut.String(), out}
			}()
		}
		a, b := <-res, <-res
		if a.code != 0 {
			a, b = b, a
		}
		require.Equal(t, 0, a.code, "round %d: one profile wrote its file:\n%s\n---\n%s", round, a.stderr, b.stderr)
		assert.FileExists(t, a.out, "round %d", round)
		assert.NoFileExists(t, b.out, "round %d", round)
		require.NotEqual(t, 0, b.code, "round %d: the other is refused:\n%s", round, b.stderr)
		assert.Regexp(t, `collecting already|another command started collecting just now`, b.stderr, "round %d", round)
		assert.NotContains(t, b.stderr, "nothing collected", "round %d", round)
	}
}

// TestShutdownAttached: rtdriver shutdown of an agent jprof loaded takes
// the event source out of the program first (as jprof's detach does:
// with the channel gone, nothing could later), so no instrumented class
// is left calling its probes; jprof status and profile then say that the
// agent was shut down, not that there is none or that it answers.
func TestShutdownAttached(t *testing.T) {
	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "bci", "-o", filepath.Join(t.TempDir(), "a.collapsed"), pid)
	require.Equal(t, 0, code, stderr)
	rtdriver := func(cmd string) string {
		t.Helper()
		out, err := exec.Command(jvmtest.Tool("rtdriver"), "-pid", pid, "-c", cmd).CombinedOutput()
		require.NoError(t, err, "rtdriver -c %s: %s", cmd, out)
		return string(out)
	}
	tg, err := attach.Open(p.Result().PID)
	require.NoError(t, err)
	probes := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		dump, err := tg.Execute(ctx, "threaddump")
		require.NoError(t, err)
		return strings.Contains(dump, "libjprof.bci.Probe")
	}
	rtdriver("start")
	// Collecting, the probes show in thread dumps: what is looked for
	// below can be seen.
	require.Eventually(t, probes, 20*time.Second, 50*time.Millisecond, "no libjprof.bci.Probe frame in the thread dumps while collecting")
	out := rtdriver("shutdown")
	assert.Contains(t, out, "OK shutdown: detached first: collection off; instrumented classes given their own bytes back")
	assert.Contains(t, out, "restart the JVM to profile it again")
	for i := 0; i < 20; i++ {
		require.False(t, probes(), "a thread dump after the shutdown shows libjprof.bci.Probe frames: classes still instrumented")
		time.Sleep(50 * time.Millisecond)
	}
	for _, cmd := range [][]string{{"status"}, {"profile", "-d", "1s", "-e", "bci", "-o", filepath.Join(t.TempDir(), "b.collapsed")}} {
		code, _, stderr := jprofBin(t, append(cmd, pid)...)
		assert.Equal(t, 1, code, "%v", cmd)
		assert.Contains(t, stderr, "has libjprof loaded, but rtdriver shut it down at ", "%v", cmd)
		assert.Contains(t, stderr, "restart the JVM to profile it again", "%v", cmd)
		assert.NotContains(t, stderr, "loading libjprof", "%v", cmd)
	}
	code, list, _ := jprofBin(t, "list")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^ *`+pid+` .*libjprof\* `, list)
	assert.Contains(t, list, "rtdriver shutdown")
}

// TestProfileSocketDirSquatted: a directory another user made where a
// JVM's agent puts its control socket (anyone may make
// /tmp/.libjprof-<uid>) is refused before anything is loaded, as one in
// place of jprof's output directory is; and an agent that loaded without
// a socket because of it opens one when it is loaded again, once the
// directory is gone, rather than staying unreachable until the JVM ends.
func TestProfileSocketDirSquatted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the JVM and the squatter run as other users")
	}
	const uid = 4244
	sockDir := fmt.Sprintf("/tmp/.libjprof-%d", uid)
	logs := fmt.Sprintf("/tmp/jprof-%d", uid)
	os.RemoveAll(sockDir)
	os.RemoveAll(logs)
	t.Cleanup(func() { os.RemoveAll(sockDir); os.RemoveAll(logs) })
	squat := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0777", sockDir)
	out, err := squat.CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := strconv.Itoa(uid)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: "-", JVMArgs: []string{"-XX:-UsePerfData"},
		Prefix: []string{"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"}})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	// Its working directory, root's, must be the JVM's to look into for
	// the attach trigger file.
	require.NoError(t, os.Chown(p.Dir(), uid, uid))
	pid := strconv.Itoa(p.Result().PID)

	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "cpu", "-o", filepath.Join(t.TempDir(), "a.collapsed"), pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, sockDir+", where its agent's control socket goes, belongs to uid 65534, not to the JVM's user 4244: not used")
	assert.NotContains(t, stderr, "loading libjprof")
	assert.False(t, agentMapped(p.Result().PID), "nothing was loaded")

	// Loaded all the same (as jcmd JVMTI.agent_load would), the agent
	// has no socket.
	if err := os.Mkdir(logs, 0o700); !errors.Is(err, fs.ErrExist) {
		require.NoError(t, err)
	}
	require.NoError(t, os.Chown(logs, uid, uid))
	tg, err := attach.Open(p.Result().PID)
	require.NoError(t, err)
	staged, err := tg.Stage(jvmtest.Agent())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, tg.LoadAgent(ctx, filepath.Join(staged, "libjprof.so"), "SAMPLE=cpu,QUIET,LOGPATH="+logs))
	code, _, stderr = jprofBin(t, "status", pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "has libjprof loaded but no control socket to reach it by")

	// The squatter's directory removed, a load opens the socket.
	require.NoError(t, os.RemoveAll(sockDir))
	outFile := filepath.Join(t.TempDir(), "b.collapsed")
	code, _, stderr = jprofBin(t, "profile", "-d", "2s", "-e", "cpu", "-o", outFile, pid)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "had no control socket; it listens on "+sockDir+"/")
	checkHot(t, outFile, true)
	assert.Contains(t, status(t, p.Result().PID), "state=stopped")
}

// TestProfileAttachDisabled: a JVM started with
// -XX:+DisableAttachMechanism, as its hsperfdata says, is refused at
// once, as jcmd refuses it, without the SIGQUITs that would make it print
// a thread dump into the program's output at each try; jprof list marks
// it. Without hsperfdata (-XX:-UsePerfData) the attach is tried as before.
func TestProfileAttachDisabled(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"8"}, Options: "-", JVMArgs: []string{"-XX:+DisableAttachMechanism"}})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	pid := strconv.Itoa(p.Result().PID)
	t0 := time.Now()
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-o", filepath.Join(t.TempDir(), "a.collapsed"), pid)
	assert.Equal(t, 1, code)
	assert.Less(t, time.Since(t0), 5*time.Second, "refused at once, not after the attach socket's wait")
	assert.Contains(t, stderr, "does not support the attach mechanism: it runs with -XX:+DisableAttachMechanism")
	assert.NotContains(t, stderr, "loading libjprof")
	code, _, stderr = jprofBin(t, "heap", "-o", filepath.Join(t.TempDir(), "h.txt"), pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "does not support the attach mechanism")
	code, list, _ := jprofBin(t, "list")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^ *`+pid+` .* - +Service \(no attach\)$`, list)
	assert.Contains(t, list, "(no attach: started with -XX:+DisableAttachMechanism")
	res := p.Wait()
	assert.NotContains(t, res.Stdout, "Full thread dump", "the JVM was sent SIGQUIT")

	q := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"8"}, Options: "-",
		JVMArgs: []string{"-XX:+DisableAttachMechanism", "-XX:-UsePerfData"}})
	q.Expect(fmt.Sprintf("ready %d", q.Result().PID))
	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-timeout", "2s", "-o", filepath.Join(t.TempDir(), "b.collapsed"), strconv.Itoa(q.Result().PID))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "did not open its attach socket")
}

// TestProfileInterruptDuringLoad: Ctrl-C while the agent loads gives the
// profile up once the load is over: the agent jprof loaded is detached,
// nothing is written, and jprof says so and fails, rather than profile
// for -d and write a profile as if nothing had happened (the signal lost:
// a shell starts a background command with SIGINT ignored, as here) or
// be killed in the middle of the load. Ctrl-C while jprof waits for the
// JVM's attach listener ends the wait at once, nothing loaded.
func TestProfileInterruptDuringLoad(t *testing.T) {
	// interrupted runs jprof profile on pid with SIGINT ignored at its
	// start, as in `jprof profile ... &`, sends it SIGINT once it says
	// it loads the agent and, with mapped, once the JVM maps the library
	// (the load request sent: jprof's few milliseconds between its line
	// and the request are not the case tested), and returns its stderr.
	interrupted := func(pid, out string, mapped bool) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", `trap "" INT; exec "$0" "$@"`, jvmtest.Tool("jprof"),
			"profile", "-d", "8s", "-e", "bci", "-o", out, pid)
		var errOut lockedBuilder
		cmd.Stderr = &errOut
		require.NoError(t, cmd.Start())
		deadline := time.Now().Add(30 * time.Second)
		n, _ := strconv.Atoi(pid)
		for !(strings.Contains(errOut.String(), "loading libjprof into pid") && (!mapped || agentMapped(n))) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		t0 := time.Now()
		err := cmd.Wait()
		require.Error(t, err, "jprof must fail: %s", errOut.String())
		assert.Less(t, time.Since(t0), 5*time.Second, "given up at the end of the load, not at the end of -d")
		return errOut.String()
	}

	p := service(t, "")
	pid := strconv.Itoa(p.Result().PID)
	// The JVM's attach listener up already: the signal comes during
	// the load itself.
	tg, err := attach.Open(p.Result().PID)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = tg.Execute(ctx, "properties")
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "p.collapsed")
	stderr := interrupted(pid, out, true)
	assert.Contains(t, stderr, "interrupt during the load of libjprof: given up, nothing collected, nothing written; the agent this command loaded was detached")
	assert.NotContains(t, stderr, "profiling pid")
	assert.NoFileExists(t, out)
	st := status(t, p.Result().PID)
	assert.Contains(t, st, "state=stopped")
	assert.Contains(t, st, "instrumenting=false")

	// A JVM that never opens its attach listener (nothing says why
	// without hsperfdata): the wait ends at the signal.
	q := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"60"}, Options: "-",
		JVMArgs: []string{"-XX:+DisableAttachMechanism", "-XX:-UsePerfData"}})
	q.Expect(fmt.Sprintf("ready %d", q.Result().PID))
	stderr = interrupted(strconv.Itoa(q.Result().PID), out, false)
	assert.Contains(t, stderr, "interrupt before libjprof was loaded: given up, nothing collected, nothing written; nothing was loaded")
	assert.NoFileExists(t, out)
}

// lockedBuilder is a strings.Builder that a command writes while the
// test reads it.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// namespacedService starts Service for seconds in a PID namespace of its
// own that keeps this /tmp (unshare -fp --mount-proc, as a user runs a
// JVM "in a container" without a /tmp of its own), and returns its pid
// here and its pid there. Skips where that cannot be done.
func namespacedService(t *testing.T, seconds int) (int, int) {
	t.Helper()
	hostPID, nspid, _ := namespacedServiceAs(t, 0, seconds)
	return hostPID, nspid
}

// namespacedServiceAs is namespacedService with the JVM run as uid (and
// gid uid), another user than root unless uid is 0; it returns that uid
// too. For another user, the JVM's working directory is theirs (the
// attach trigger file goes there), and so is /tmp/jprof-<uid>, made now
// as jprof's load would make it, and removed at the end with
// /tmp/.libjprof-<uid>.
func namespacedServiceAs(t *testing.T, uid, seconds int) (int, int, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for unshare")
	}
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skipf("unshare --pid --mount-proc refused here: %v", err)
	}
	jvmtest.Build(t) // the classes, and the jprof the test runs
	marker := fmt.Sprintf("ns%d", time.Now().UnixNano())
	args := []string{"--pid", "--fork", "--mount-proc"}
	if uid != 0 {
		id := strconv.Itoa(uid)
		args = append(args, "setpriv", "--reuid="+id, "--regid="+id, "--clear-groups")
	}
	args = append(args, jvmtest.Java(), "-cp", filepath.Join(jvmtest.Root(), "build", "java"), "Service", strconv.Itoa(seconds), marker)
	cmd := exec.Command("unshare", args...)
	if uid != 0 {
		wd := t.TempDir()
		require.NoError(t, os.Chown(wd, uid, uid))
		cmd.Dir = wd
		logs := uidDir(uid)
		sock := control.SocketDir(control.SocketBase, uid)
		os.RemoveAll(logs)
		os.RemoveAll(sock)
		require.NoError(t, os.Mkdir(logs, 0o700))
		require.NoError(t, os.Chown(logs, uid, uid))
		t.Cleanup(func() { os.RemoveAll(logs); os.RemoveAll(sock) })
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(line, "ready "), line)
	nspid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	require.NoError(t, err)
	go io.Copy(io.Discard, r)
	hostPID := hostJavaPID(t, "Service "+strconv.Itoa(seconds)+" "+marker)
	started := time.Now().Add(-time.Second)
	t.Cleanup(func() {
		// What the agent and jprof left for it (the files of its pid
		// there written since it started: an earlier JVM's are not the
		// test's).
		dir := uidDir(uid)
		left, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("*_%d", nspid)))
		left = append(left, filepath.Join(dir, fmt.Sprintf("nspid_%d", hostPID)))
		for _, f := range left {
			if fi, err := os.Lstat(f); err == nil && !fi.ModTime().Before(started) && !fi.ModTime().After(time.Now()) {
				os.Remove(f)
			}
		}
	})
	return hostPID, nspid, uid
}

// TestProfileNamespaceSharedTmpExits: a JVM in a PID namespace of its own
// that shares this /tmp, exiting in the middle of jprof profile, leaves
// its agent's final log-rt in /tmp/jprof-<uid>/, named by its pid there
// (log-rt.1_1): jprof finds it (not through /proc/<pid>/root, gone with
// the process), tells it from a newer file of the same pid there whose
// interval began before this profile (another JVM's of that pid, or an
// earlier run's), converts and removes it. jprof stop <pid here> after
// such a JVM exited finds its final log-rt too.
func TestProfileNamespaceSharedTmpExits(t *testing.T) {
	hostPID, nspid := namespacedService(t, 6)
	dir := fmt.Sprintf("/tmp/jprof-%d", os.Geteuid())
	// Another JVM's file of the same pid there, the newest, from before
	// the profile.
	decoy := filepath.Join(dir, fmt.Sprintf("log-rt.9_%d", nspid))
	past := time.Now().Add(-time.Hour)
	var b strings.Builder
	require.NoError(t, reports.WriteLogRT(&b, &reports.Profile{PID: nspid, Seq: 9,
		Metrics:  []reports.Metric{{Name: "SAMPLED_CPU_TIME", Unit: "ns"}},
		Interval: &reports.Interval{Start: past, End: past.Add(time.Second), Counts: reports.CumulativeSinceStart}}))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(decoy, []byte(b.String()), 0o644))
	t.Cleanup(func() { os.Remove(decoy) })
	require.NoError(t, os.Chtimes(decoy, time.Now().Add(time.Hour), time.Now().Add(time.Hour)))

	out := filepath.Join(t.TempDir(), "p.collapsed")
	code, stdout, stderr := jprofBin(t, "profile", "-d", "60s", "-e", "cpu", "-o", out, strconv.Itoa(hostPID))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, fmt.Sprintf("pid %d exited during the profile", hostPID))
	final := filepath.Join(dir, fmt.Sprintf("log-rt.1_%d", nspid))
	assert.Contains(t, stderr, "its agent wrote a final log-rt at VM death: "+final+" (converted below)")
	assert.Contains(t, stdout, "wrote "+out+" (from "+final+", removed now)")
	assert.NoFileExists(t, final)
	assert.FileExists(t, decoy, "another JVM's file is left alone")
	checkHot(t, out, true)

	hostPID, nspid = namespacedService(t, 4)
	code, _, stderr = jprofBin(t, "start", "-e", "cpu", strconv.Itoa(hostPID))
	require.Equal(t, 0, code, stderr)
	require.Eventually(t, func() bool { return !processAlive(hostPID) }, 20*time.Second, 100*time.Millisecond)
	code, stdout, stderr = jprofBin(t, "stop", "-o", out, strconv.Itoa(hostPID))
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, fmt.Sprintf(`jprof: pid %d exited \(VM death at [^)]+\); its agent wrote a final log-rt then: %s \(converted below\)`,
		hostPID, regexp.QuoteMeta(filepath.Join(dir, fmt.Sprintf("log-rt.1_%d", nspid)))), stderr)
	assert.Contains(t, stdout, "wrote "+out)
	checkHot(t, out, true)
}

// TestProfileTargetExitsAfterStop: a JVM whose agent collected before
// without an end (jprof start, then rtdriver detach: its counts are kept,
// so the next log-rt's interval begins at that start, not at the
// profile's; an end that found nothing to write leaves it so too) exits
// during a later jprof profile: its final log-rt becomes the profile's
// output, not "no final log-rt". A JVM in a PID namespace sharing /tmp
// likewise, while a newer file of its name whose interval began before
// its agent's counts did is still taken for another JVM's.
func TestProfileTargetExitsAfterStop(t *testing.T) {
	run := func(t *testing.T, pid, nspid int) {
		p := strconv.Itoa(pid)
		code, _, stderr := jprofBin(t, "start", "-e", "cpu", p)
		require.Equal(t, 0, code, stderr)
		// The counts' start and the profile's over a second apart
		// (Interval_Start is compared to the second).
		time.Sleep(1500 * time.Millisecond)
		out, err := exec.Command(jvmtest.Tool("rtdriver"), "-pid", p, "-c", "detach").CombinedOutput()
		require.NoError(t, err, "rtdriver detach: %s", out)
		st := status(t, pid)
		require.Contains(t, st, "state=stopped")
		logs := statusField(st, "logpath")
		decoy := filepath.Join(logs, fmt.Sprintf("log-rt.99_%d", nspid))
		if nspid != pid {
			past := time.Now().Add(-time.Hour)
			var b strings.Builder
			require.NoError(t, reports.WriteLogRT(&b, &reports.Profile{PID: nspid, Seq: 99,
				Metrics:  []reports.Metric{{Name: "SAMPLED_CPU_TIME", Unit: "ns"}},
				Interval: &reports.Interval{Start: past, End: past.Add(time.Second), Counts: reports.CumulativeSinceStart}}))
			require.NoError(t, os.WriteFile(decoy, []byte(b.String()), 0o644))
			t.Cleanup(func() { os.Remove(decoy) })
			require.NoError(t, os.Chtimes(decoy, time.Now().Add(time.Hour), time.Now().Add(time.Hour)))
		}
		outFile := filepath.Join(t.TempDir(), "p.collapsed")
		code, stdout, stderr := jprofBin(t, "profile", "-d", "60s", "-e", "cpu", "-o", outFile, p)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, fmt.Sprintf("pid %d exited during the profile", pid))
		final := filepath.Join(logs, fmt.Sprintf("log-rt.1_%d", nspid))
		assert.Contains(t, stderr, "its agent wrote a final log-rt at VM death: "+final+" (converted below)")
		assert.Contains(t, stdout, "wrote "+outFile)
		if nspid != pid {
			assert.FileExists(t, decoy, "another JVM's file is left alone")
		}
		checkHot(t, outFile, true)
	}
	t.Run("host", func(t *testing.T) {
		p := service(t, "", "9")
		run(t, p.Result().PID, p.Result().PID)
	})
	t.Run("namespace sharing /tmp", func(t *testing.T) {
		hostPID, nspid := namespacedService(t, 9)
		run(t, hostPID, nspid)
	})
}

// squattedAgentJVM starts Service as uid (another user than root) with
// the agent at its start (-agentpath, opts and LOGPATH=/tmp/jprof-<uid>),
// while /tmp/.libjprof-<uid>, where its control socket goes, is another
// user's (nobody's, mode 0777): the agent runs without its UNIX socket.
// It returns the JVM and that directory, which the test removes to let a
// later load open the socket.
func squattedAgentJVM(t *testing.T, uid int, opts string) (*jvmtest.Proc, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the JVM and the squatter run as other users")
	}
	sockDir := control.SocketDir(control.SocketBase, uid)
	logs := uidDir(uid)
	os.RemoveAll(sockDir)
	os.RemoveAll(logs)
	t.Cleanup(func() { os.RemoveAll(sockDir); os.RemoveAll(logs) })
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "mkdir", "-m", "0777", sockDir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Mkdir(logs, 0o700))
	require.NoError(t, os.Chown(logs, uid, uid))
	id := strconv.Itoa(uid)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Options: opts + ",LOGPATH=" + logs,
		Prefix: []string{"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"}})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	// Its working directory, root's, must be the JVM's to look into for
	// the attach trigger file.
	require.NoError(t, os.Chown(p.Dir(), uid, uid))
	return p, sockDir
}

// TestProfileTCPOnlyAgentGetsItsSocket: an agent started with PORT= whose
// socket directory was another user's listens on its TCP port alone;
// once the directory is removed, a load (jprof profile) makes it open its
// UNIX socket too, and jprof reaches it, rather than "loaded but does not
// answer". So does an agent whose socket file was removed while it ran.
func TestProfileTCPOnlyAgentGetsItsSocket(t *testing.T) {
	port := 0
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	require.NotZero(t, port)
	p, sockDir := squattedAgentJVM(t, 4254, fmt.Sprintf("SAMPLE=cpu,PORT=%d", port))
	pid := strconv.Itoa(p.Result().PID)
	assert.Contains(t, p.Stderr(), fmt.Sprintf("rtdriver listens on 127.0.0.1:%d only", port))
	code, _, stderr := jprofBin(t, "status", pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "has libjprof loaded but no control socket to reach it by")

	require.NoError(t, os.RemoveAll(sockDir))
	out := filepath.Join(t.TempDir(), "a.collapsed")
	code, _, stderr = jprofBin(t, "profile", "-d", "2s", "-e", "cpu", "-o", out, pid)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "had no control socket; it listens on "+sockDir+"/"+pid+".sock+")
	checkHot(t, out, true)
	// The TCP port still answers.
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	c.Close()

	// Its socket file removed (with its directory, by a /tmp cleaner):
	// a load opens it again.
	require.NoError(t, os.RemoveAll(sockDir))
	code, _, stderr = jprofBin(t, "status", pid)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "has libjprof loaded but no control socket to reach it by")
	code, _, stderr = jprofBin(t, "profile", "-d", "2s", "-e", "cpu", "-o", out, pid)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "had no control socket; it listens on "+sockDir+"/"+pid+".sock+")
	checkHot(t, out, true)
	assert.Contains(t, status(t, p.Result().PID), "state=stopped")
}

// TestProfileInterruptDuringLoadAgain: Ctrl-C while jprof's load only
// reaches an agent that was there already (an -agentpath agent with
// START, collecting since the JVM started, without its control socket:
// its directory was another user's, removed since) gives the profile up
// without detaching that agent: its collection goes on, and jprof says
// it left it as it was. The JVM is stopped while jprof sends the load,
// so that the signal comes before the load's reply, always.
func TestProfileInterruptDuringLoadAgain(t *testing.T) {
	p, sockDir := squattedAgentJVM(t, 4255, "SAMPLE=cpu,START")
	pid := p.Result().PID
	// The JVM's attach listener up already: jprof's load is sent at
	// once, with no SIGQUIT a stopped JVM would not answer.
	tg, err := attach.Open(pid)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = tg.Execute(ctx, "properties")
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(sockDir))

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	stopped := true
	t.Cleanup(func() {
		if stopped {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	out := filepath.Join(t.TempDir(), "p.collapsed")
	cmd := exec.Command(jvmtest.Tool("jprof"), "profile", "-d", "8s", "-e", "cpu", "-o", out, strconv.Itoa(pid))
	var errOut lockedBuilder
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errOut.String(), "loading libjprof into pid") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// The load request sent, its reply not come: the JVM is stopped.
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	stopped = false
	err = cmd.Wait()
	stderr := errOut.String()
	require.Error(t, err, "jprof must fail: %s", stderr)
	assert.Contains(t, stderr, "libjprof: loaded again: the agent loaded at ")
	assert.Contains(t, stderr, "interrupt during the load of libjprof: given up, nothing collected, nothing written; "+
		"the agent was there before this command (its load only reached it): left as it was, not detached")
	assert.NotContains(t, stderr, "detached (")
	assert.NoFileExists(t, out)
	st := status(t, pid)
	assert.Contains(t, st, "state=collecting", "the collection since the JVM's start goes on")
	assert.Contains(t, st, "loads=2")
}

// hostJavaPID is the pid, here, of the java process (a JVM in a PID
// namespace of its own) whose command line matches pattern.
func hostJavaPID(t *testing.T, pattern string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("pgrep", "-f", pattern).Output()
		for _, f := range strings.Fields(string(out)) {
			n, _ := strconv.Atoi(f)
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n)); err == nil && strings.TrimSpace(string(b)) == "java" {
				return n
			}
		}
	}
	require.FailNow(t, "the namespaced JVM's pid here", pattern)
	return 0
}

// A BCI profile started at attach collects once every class is
// rewritten. RetransformClasses runs in batches, and while they run part
// of the program is instrumented and part is not: a call chain collected
// then skips the links not rewritten yet. ChainWork's links are 320
// classes, more than one batch. The frames entered while the classes
// were rewritten are seeded at the first event (as O: rows): no exit
// comes without its entry. (Seeded frames may skip links: the frames
// between them run a link's code as it was before, without probes.)
func TestAttachCollectsAfterRewrite(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "ChainWork", Options: "-"})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	pid := strconv.Itoa(p.Result().PID)
	dir := t.TempDir() + "/"
	code, _, stderr := jprofBin(t, "profile", "-d", "1s", "-e", "calls", "-o", dir, pid)
	require.Equal(t, 0, code, stderr)
	files, _ := filepath.Glob(dir + "log-rt.*")
	require.Len(t, files, 1)
	link := regexp.MustCompile(`^[A-Za-z]:ChainWork\$C(\d+)\.m\(J\)J$`)
	linkOf := func(n *reports.Node) int {
		m := link.FindStringSubmatch(n.Name)
		if m == nil {
			return -1
		}
		i, _ := strconv.Atoi(m[1])
		return i
	}
	var links, skips int
	var walk func(n *reports.Node)
	walk = func(n *reports.Node) {
		from := linkOf(n)
		if strings.HasPrefix(n.Name, "O:") {
			from = -1 // seeded: its callee may have been entered from a link's code as it was
		}
		for _, c := range n.Children {
			if to := linkOf(c); to >= 0 && !strings.HasPrefix(c.Name, "O:") {
				links++
				if from >= 0 && to != from+1 {
					skips++
					if skips <= 3 {
						t.Errorf("%s calls %s: the links between were not instrumented yet", n.Name, c.Name)
					}
				}
			}
			walk(c)
		}
	}
	prof := jvmtest.ParseLogRT(t, files[0])
	for _, th := range prof.Threads {
		walk(th)
	}
	assert.Greater(t, links, 300, "the chain's links in the profile")
	assert.Zero(t, skips, "calls that skip a link of the chain")
	for _, n := range prof.Notes {
		assert.NotContains(t, n, "without a seen entry", "the frames entered while the classes were rewritten are seeded")
	}
}
