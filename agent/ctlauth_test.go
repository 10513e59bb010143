package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// Only the JVM's owner or root may drive its agent, on every channel.
// These tests run the rtdriver command as other users with setpriv, which
// needs root.

const (
	nobodyUID = 65534
	// ownerUID runs the JVMs of a test that needs a user of its own: no
	// other test's JVM runs as it, so "the caller's JVMs" are the test's.
	ownerUID = 4242
)

// needSetpriv skips a test that must run commands as other users when
// it cannot.
func needSetpriv(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running commands as other users needs root (setpriv --reuid)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not found: cannot run commands as other users")
	}
}

// setprivAs is the command prefix that runs a program as uid.
func setprivAs(uid int) []string {
	id := strconv.Itoa(uid)
	return []string{"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"}
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

// rtdriverAs runs the rtdriver command as uid (root: -1, no setpriv).
func rtdriverAs(t *testing.T, uid int, args ...string) cmdResult {
	t.Helper()
	argv := append([]string{jvmtest.Tool("rtdriver")}, args...)
	if uid >= 0 {
		argv = append(setprivAs(uid), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("rtdriver %v: %v", args, err)
	}
	res := cmdResult{code, out.String(), errOut.String()}
	t.Logf("uid %d: rtdriver %s -> %d\nstdout: %sstderr: %s", uid, strings.Join(args, " "), code, res.stdout, res.stderr)
	return res
}

// Another user cannot drive a root JVM through its UNIX socket: rtdriver
// says why, and the agent's own check (with the file modes opened up)
// answers "ERR auth" with the reason; nothing changes in the JVM. -l and
// -b as that user do not even see the JVM.
func TestRTDriverOtherUserRefused(t *testing.T) {
	needSetpriv(t)
	p, sock := driven(t, "METHODEVENTS,CALLTREE")
	pid := p.Result().PID
	spid := strconv.Itoa(pid)

	r := rtdriverAs(t, nobodyUID, "-pid", spid, "-c", "start")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, fmt.Sprintf("pid %d runs as uid 0: only the JVM's owner or root may control it", pid))
	assert.Empty(t, r.stdout)

	r = rtdriverAs(t, nobodyUID, "-l")
	assert.NotContains(t, r.stdout, "pid "+spid+" ")
	r = rtdriverAs(t, nobodyUID, "-b", "-c", "status")
	assert.NotContains(t, r.stdout, "pid "+spid)
	assert.NotContains(t, r.stdout, "OK status")

	// The agent checks the peer itself, whatever the file modes say: a
	// hard link to the socket in a directory anyone may enter, and the
	// socket's mode opened (the original stays in its private directory).
	open, err := os.MkdirTemp("", "jprof-open-")
	require.NoError(t, err)
	defer os.RemoveAll(open)
	require.NoError(t, os.Chmod(open, 0o755))
	link := filepath.Join(open, "agent.sock")
	require.NoError(t, os.Link(sock.addr, link))
	require.NoError(t, os.Chmod(link, 0o666))
	r = rtdriverAs(t, nobodyUID, "-s", link, "-c", "start,flush")
	require.NoError(t, os.Chmod(link, 0o600))
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "ERR auth: uid 65534 may not control a JVM of uid 0 (only its owner or root may)\n", r.stdout)

	p.Send("call 10")
	p.Expect("done 10")
	st := rt(t, sock, "status")[0].Detail
	assert.Contains(t, st, "state=stopped")
	assert.Contains(t, st, " events=0 ")

	// The owner (root here) works over the socket: start, flush, end.
	r = rtdriverAs(t, -1, "-pid", spid, "-c", "start")
	require.Equal(t, 0, r.code, r.stderr)
	p.Send("call 30")
	p.Expect("done 30")
	r = rtdriverAs(t, -1, "-pid", spid, "-c", "flush")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OK flush: ")
	assert.Contains(t, r.stdout, "log-rt.1_"+spid)
	r = rtdriverAs(t, -1, "-pid", spid, "-c", "end")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "log-rt.2_"+spid)

	p.Send("quit")
	res := p.Wait()
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, uint64(30), workCalls(t, res.LogRT(t, 1)))
	assert.Equal(t, uint64(30), workCalls(t, res.LogRT(t, 2)))
	_, err = os.Stat(res.File("rt.3"))
	assert.True(t, os.IsNotExist(err), "nothing collected after the end")
	msg := res.ReadFile(t, "msg")
	assert.Contains(t, msg, "rtdriver connection refused")
	assert.Contains(t, msg, "uid 65534 may not control a JVM of uid 0")
	_, err = os.Lstat(sock.addr)
	assert.True(t, os.IsNotExist(err), "the socket outlives its JVM")
}

// With PORT=, TCP on loopback: the peer's user is read from the socket
// table and another user is refused there too; the owner is served, on
// both channels, which the state line names.
func TestRTDriverOtherUserRefusedTCP(t *testing.T) {
	needSetpriv(t)
	port := freePort(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: fmt.Sprintf("METHODEVENTS,CALLTREE,PORT=%d", port)})
	p.Expect("ready")
	pid := p.Result().PID
	sport := strconv.Itoa(port)

	r := rtdriverAs(t, nobodyUID, "-p", sport, "-c", "start")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "ERR auth: uid 65534 may not control a JVM of uid 0 (only its owner or root may)\n", r.stdout)
	r = rtdriverAs(t, nobodyUID, "-b", "-p", sport+"-"+sport, "-c", "start")
	assert.NotContains(t, r.stdout, "OK")
	assert.Contains(t, rt(t, tcpCtl(port), "status")[0].Detail, "state=stopped")

	r = rtdriverAs(t, -1, "-p", sport, "-c", "start")
	require.Equal(t, 0, r.code, r.stderr)
	p.Send("call 25")
	p.Expect("done 25")
	requireOK(t, rt(t, socketCtl(pid), "end"))
	p.Send("quit")
	res := p.Wait()
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, uint64(25), workCalls(t, res.LogRT(t, 1)))
	assert.Contains(t, res.Stderr, fmt.Sprintf("rtdriver=%s+127.0.0.1:%d ", socketCtl(pid).addr, port))
}

// A user with two JVMs: a plain rtdriver refuses to guess and lists both,
// -pid picks one; with one JVM it is used without -pid. Root may drive
// them, another user may not.
func TestRTDriverTwoJVMsOfOneUser(t *testing.T) {
	needSetpriv(t)
	launch := func() (*jvmtest.Proc, string) {
		logs, err := os.MkdirTemp("", "jprof-owner-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(logs) })
		require.NoError(t, os.Chown(logs, ownerUID, ownerUID))
		p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: "METHODEVENTS,CALLTREE,LOGPATH=" + logs,
			Prefix: setprivAs(ownerUID), JVMArgs: []string{"-XX:-UsePerfData"}})
		p.Expect("ready")
		return p, logs
	}
	p1, logs1 := launch()
	pid1 := strconv.Itoa(p1.Result().PID)

	r := rtdriverAs(t, ownerUID, "-c", "status")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OK status: state=stopped since=- pid="+pid1+" ")

	p2, logs2 := launch()
	pid2 := strconv.Itoa(p2.Result().PID)
	r = rtdriverAs(t, ownerUID, "-c", "start")
	assert.Equal(t, 2, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "JVMs could be meant; say which with -pid")
	assert.Contains(t, r.stderr, "pid "+pid1+" ")
	assert.Contains(t, r.stderr, "pid "+pid2+" ")
	assert.Contains(t, r.stderr, "Driven")
	r = rtdriverAs(t, ownerUID, "-l")
	assert.Contains(t, r.stdout, "pid "+pid1+" ")
	assert.Contains(t, r.stdout, "pid "+pid2+" ")

	r = rtdriverAs(t, ownerUID, "-pid", pid1, "-c", "start")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "OK start\n", r.stdout)
	r = rtdriverAs(t, nobodyUID, "-pid", pid1, "-c", "end")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "runs as uid 4242: only the JVM's owner or root may control it")
	p1.Send("call 20")
	p1.Expect("done 20")
	p2.Send("call 20")
	p2.Expect("done 20")
	r = rtdriverAs(t, -1, "-pid", pid1, "-c", "end") // root may
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OK end: "+filepath.Join(logs1, "log-rt.1_"+pid1))
	r = rtdriverAs(t, -1, "-pid", pid2, "-c", "status")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "state=stopped")

	p1.Send("quit")
	p2.Send("quit")
	for _, p := range []*jvmtest.Proc{p1, p2} {
		res := p.Wait()
		require.Equal(t, 0, res.ExitCode, res.Stderr)
	}
	assert.Equal(t, uint64(20), workCalls(t, jvmtest.ParseLogRT(t, filepath.Join(logs1, "log-rt.1_"+pid1))))
	files, _ := filepath.Glob(filepath.Join(logs2, "log-rt.*"))
	assert.Empty(t, files, "the second JVM never collected")
}

// A JVM in a PID namespace of its own (a container's) names its socket by
// the PID it sees there; rtdriver -pid with its PID as the host sees it
// finds the socket through /proc/<pid>/root and the NSpid line.
func TestRTDriverJVMInPIDNamespace(t *testing.T) {
	needSetpriv(t)
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "true").Run(); err != nil {
		t.Skipf("cannot make a PID namespace here (unshare: %v)", err)
	}
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: "METHODEVENTS,CALLTREE",
		Prefix: []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}})
	p.Expect("ready")
	// unshare forks the JVM: the JVM is its only child.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.Result().PID, p.Result().PID))
	require.NoError(t, err)
	hostPID := strings.TrimSpace(string(b))
	require.NotEmpty(t, hostPID)
	require.NotContains(t, hostPID, " ")

	r := rtdriverAs(t, -1, "-pid", hostPID, "-c", "start,status")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "OK status: state=collecting")
	assert.NotContains(t, r.stdout, " pid="+hostPID+" ", "the JVM sees another PID")
	p.Send("call 15")
	p.Expect("done 15")
	r = rtdriverAs(t, -1, "-pid", hostPID, "-c", "end")
	require.Equal(t, 0, r.code, r.stderr)
	r = rtdriverAs(t, nobodyUID, "-pid", hostPID, "-c", "start")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "runs as uid 0: only the JVM's owner or root may control it")

	// A second JVM in a namespace of its own, of the same PID there,
	// sharing /tmp: the socket is the first one's, so it has none, and
	// rtdriver asked for it must not reach the first.
	p2 := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: "METHODEVENTS,CALLTREE",
		JVMArgs: []string{"-XX:-UsePerfData"}, // hsperfdata_root/1 is the first one's too
		Prefix:  []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}})
	p2.Expect("ready")
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p2.Result().PID, p2.Result().PID))
	require.NoError(t, err)
	hostPID2 := strings.TrimSpace(string(b))
	assert.Contains(t, p2.Stderr(), "another agent listens on it")
	r = rtdriverAs(t, -1, "-pid", hostPID2, "-c", "status")
	assert.NotEqual(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stderr, "is the agent of pid "+hostPID+", not of pid "+hostPID2)
	assert.NotContains(t, r.stdout, "OK status")
	p2.Send("quit")
	p2.Wait()
	p.Send("quit")
	res := p.Wait()
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	files, err := filepath.Glob(filepath.Join(res.Dir, "log-rt.1_*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, uint64(15), workCalls(t, jvmtest.ParseLogRT(t, files[0])))
}

// A socket directory the JVM's user does not own (another user made it
// first) is not used: said on stderr, in log-msg and in the log-rt
// header; with PORT= the TCP port is kept, else the JVM runs without a
// control channel.
func TestRTDriverSocketDirNotPrivate(t *testing.T) {
	needSetpriv(t)
	const uid = 4243
	dir := filepath.Join("/tmp", fmt.Sprintf(".libjprof-%d", uid))
	os.RemoveAll(dir)
	require.NoError(t, os.Mkdir(dir, 0o755)) // root's, not uid's
	t.Cleanup(func() { os.RemoveAll(dir) })
	logs, err := os.MkdirTemp("", "jprof-owner-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(logs) })
	require.NoError(t, os.Chown(logs, uid, uid))

	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,CALLTREE,START,LOGPATH=" + logs,
		Prefix: setprivAs(uid), JVMArgs: []string{"-XX:-UsePerfData"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	why := fmt.Sprintf("rtdriver socket directory %s belongs to uid 0, not to this JVM's uid %d: remove it", dir, uid)
	assert.Contains(t, r.Stderr, "libjprof: rtdriver socket not available: "+why)
	assert.Contains(t, r.Stderr, " rtdriver=off ")
	msg, err := os.ReadFile(filepath.Join(logs, fmt.Sprintf("log-msg_%d", r.PID)))
	require.NoError(t, err)
	assert.Contains(t, string(msg), why)
	prof := jvmtest.ParseLogRT(t, filepath.Join(logs, fmt.Sprintf("log-rt.1_%d", r.PID)))
	assert.Contains(t, strings.Join(prof.Notes, "\n"), "Warning: rtdriver socket not available: "+why)

	port := freePort(t)
	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: fmt.Sprintf("METHODEVENTS,CALLTREE,START,PORT=%d,LOGPATH=%s", port, logs),
		Prefix: setprivAs(uid), JVMArgs: []string{"-XX:-UsePerfData"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, why)
	assert.Contains(t, r.Stderr, fmt.Sprintf("rtdriver listens on 127.0.0.1:%d only", port))
	assert.Contains(t, r.Stderr, fmt.Sprintf(" rtdriver=127.0.0.1:%d ", port))
}
