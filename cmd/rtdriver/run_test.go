package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/agent/control"
)

const testTimeout = 5 * time.Second

// agent is a Controller that records the commands it ran.
type agent struct {
	mu    sync.Mutex
	calls []string
}

func (a *agent) record(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, s)
}

func (a *agent) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

func (a *agent) Start(d time.Duration) error {
	a.record("start")
	return nil
}
func (a *agent) Flush() (string, error)    { a.record("flush"); return "/tmp/log-rt.1_7", nil }
func (a *agent) Reset() error              { a.record("reset"); return nil }
func (a *agent) End() (string, error)      { a.record("end"); return "/tmp/log-rt.2_7", nil }
func (a *agent) Status() string            { a.record("status"); return "collecting=yes" }
func (a *agent) ForceGC() error            { a.record("fgc"); return errors.New("no JVM here") }
func (a *agent) Shutdown() (string, error) { a.record("shutdown"); return "", nil }
func (a *agent) Detach() (string, error)   { a.record("detach"); return "collection off", nil }
func (a *agent) Heap() (string, error)     { a.record("heap"); return "/tmp/log-heap.1_1", nil }
func (a *agent) HeapDump() (string, error) {
	a.record("heapdump")
	return "/tmp/log-hprof.1_1.hprof", nil
}
func (a *agent) Roots(r string) (string, error) {
	a.record("roots=" + r)
	return "1 method matches", nil
}

func (a *agent) FlushInterval() (string, error) {
	a.record("flush=interval")
	return "/tmp/log-rt.1_7", nil
}

// startAgent serves an agent on a kernel-chosen port and returns the port.
func startAgent(t *testing.T, token string) (*agent, int) {
	t.Helper()
	a := &agent{}
	s, err := control.Listen(control.Config{Controller: a, Port: control.AnyPort, Token: token})
	require.NoError(t, err)
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return a, s.Addr().(*net.TCPAddr).Port
}

// deadPort returns a loopback port nobody listens on (most likely).
func deadPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

type result struct {
	status         int
	stdout, stderr string
}

func runWith(t *testing.T, e env, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	e.stdout, e.stderr = &out, &errOut
	if e.stdin == nil {
		e.stdin = strings.NewReader("")
	}
	if e.getenv == nil {
		e.getenv = func(string) string { return "" }
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, e) }()
	select {
	case st := <-done:
		return result{st, out.String(), errOut.String()}
	case <-time.After(2 * testTimeout):
		t.Fatal("rtdriver did not finish")
		return result{}
	}
}

func TestOneShot(t *testing.T) {
	a, port := startAgent(t, "")
	p := strconv.Itoa(port)
	tests := []struct {
		name   string
		args   []string
		status int
		stdout string
		calls  []string
	}{
		{name: "start,flush", args: []string{"-p", p, "-c", "start,flush"}, status: 0,
			stdout: "OK start\nOK flush: /tmp/log-rt.1_7\n", calls: []string{"start", "flush"}},
		{name: "flags after delay", args: []string{"-c", "PING", "0", "-p", p}, status: 0, stdout: "OK ping: pong\n"},
		{name: "unknown command", args: []string{"-p", p, "-c", "bogus"}, status: 1,
			stdout: "ERR bogus: unknown command (try help)\n"},
		{name: "invalid line runs nothing", args: []string{"-p", p, "-c", "reset,start=x"}, status: 1,
			stdout: "ERR reset: not run: another command on the line is invalid\nERR start: bad delay \"x\": want seconds or a duration such as 500ms\n"},
		{name: "agent error", args: []string{"-p", p, "-c", "fgc"}, status: 1, stdout: "ERR fgc: no JVM here\n", calls: []string{"fgc"}},
		{name: "line error", args: []string{"-p", p, "-c", "ping,,ping"}, status: 1, stdout: "ERR line: empty command at position 2\n"},
		{name: "host flag", args: []string{"-a", "127.0.0.1", "-p", p, "-c", "end"}, status: 0,
			stdout: "OK end: /tmp/log-rt.2_7\n", calls: []string{"end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(a.Calls())
			r := runWith(t, env{}, tt.args...)
			assert.Equal(t, tt.status, r.status, "stderr: %s", r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			assert.Equal(t, tt.calls, nilIfEmpty(a.Calls()[before:]))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestDelay(t *testing.T) {
	_, port := startAgent(t, "")
	start := time.Now()
	r := runWith(t, env{}, "-p", strconv.Itoa(port), "-c", "ping", "200ms")
	assert.Equal(t, 0, r.status)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)

	// The delay gives way to cancellation.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	st := run(ctx, []string{"-p", strconv.Itoa(port), "-c", "ping", "60"}, env{stdout: &out, stderr: &errOut})
	assert.Equal(t, 2, st)
	assert.Empty(t, out.String())
}

func TestUnreachable(t *testing.T) {
	r := runWith(t, env{}, "-p", strconv.Itoa(deadPort(t)), "-c", "ping")
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stderr, "refused")
	assert.Contains(t, r.stderr, "an agent listens on TCP only with PORT=")
	assert.Empty(t, r.stdout)
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"unknown flag", []string{"-x"}, 2, "flag provided but not defined"},
		{"-pid and -b", []string{"-pid", "8888", "-b", "-c", "ping"}, 2, "excludes -p and -b"},
		{"-pid and -p", []string{"-pid", "8888", "-p", "8888", "-c", "ping"}, 2, "excludes -p and -b"},
		{"-l and -c", []string{"-l", "-c", "ping"}, 2, "takes no -c"},
		{"-s and -pid", []string{"-s", "/x", "-pid", "1", "-c", "ping"}, 2, "excludes -pid"},
		{"-a without -p", []string{"-a", "10.0.0.1", "-c", "ping"}, 2, "which -p gives"},
		{"bad port", []string{"-p", "70000", "-c", "ping"}, 2, "not a port"},
		{"range without -b", []string{"-p", "8888-8895", "-c", "ping"}, 2, "a range of ports is for -b"},
		{"bad range", []string{"-b", "-p", "8895-8888", "-c", "ping"}, 2, "want lo-hi"},
		{"delay without -c", []string{"5"}, 2, "unexpected argument"},
		{"two delays", []string{"-c", "ping", "5", "6"}, 2, "unexpected argument"},
		{"bad delay", []string{"-c", "ping", "soon"}, 2, "delay"},
		{"negative delay", []string{"-c", "ping", "-5s"}, 2, ""},
		{"line break", []string{"-c", "ping\nflush"}, 2, "line break"},
		{"negative timeout", []string{"-timeout", "-1s", "-c", "ping"}, 2, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWith(t, env{}, tt.args...)
			assert.Equal(t, tt.status, r.status)
			assert.Contains(t, r.stderr, tt.stderr)
			assert.Empty(t, r.stdout)
		})
	}
}

// TestHelpAndVersion: -h, --help and "help" print the usage and the
// agent's commands on stdout and exit 0; --version and "version" print the
// build.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}, {"HELP"}, {"-p", "8889", "help"}} {
		r := runWith(t, env{}, args...)
		assert.Equal(t, 0, r.status, "%v: %s", args, r.stderr)
		assert.Empty(t, r.stderr, args)
		assert.True(t, strings.HasPrefix(r.stdout, "usage: rtdriver"), "%v: %s", args, r.stdout)
		for _, want := range []string{"-timeout d", "-version", "exit_rtdriver", "start[=sec]", "one dash or two"} {
			assert.Contains(t, r.stdout, want, args)
		}
	}
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		r := runWith(t, env{}, args...)
		assert.Equal(t, 0, r.status, "%v: %s", args, r.stderr)
		assert.True(t, strings.HasPrefix(r.stdout, "rtdriver "), r.stdout)
		assert.Contains(t, r.stdout, runtime.Version())
	}
	// An error points to -h instead of flooding stderr with the usage.
	r := runWith(t, env{}, "-x")
	assert.Equal(t, 2, r.status)
	assert.Equal(t, "rtdriver: flag provided but not defined: -x\n(rtdriver -h for the usage)\n", r.stderr)
	// "help" after -c is a command for the agent, not rtdriver's help.
	r = runWith(t, env{}, "-p", strconv.Itoa(deadPort(t)), "-c", "help")
	assert.Equal(t, 2, r.status)
	assert.Empty(t, r.stdout)
}

func TestToken(t *testing.T) {
	a, port := startAgent(t, "s3cret")
	p := strconv.Itoa(port)

	r := runWith(t, env{}, "-p", p, "-t", "s3cret", "-c", "start")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "OK start\n", r.stdout)

	r = runWith(t, env{getenv: func(k string) string {
		if k == tokenEnv {
			return "s3cret"
		}
		return ""
	}}, "-p", p, "-c", "flush")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "OK flush: /tmp/log-rt.1_7\n", r.stdout)

	r = runWith(t, env{}, "-p", p, "-c", "reset")
	assert.Equal(t, 1, r.status)
	assert.Equal(t, "ERR auth: token required: this agent was started with TOKEN=; give it with rtdriver -t <T> or RTDRIVER_TOKEN=<T> (a raw client begins the line with token=<T>,)\n", r.stdout)

	r = runWith(t, env{}, "-p", p, "-t", "guess", "-c", "reset")
	assert.Equal(t, 1, r.status)
	assert.Equal(t, "ERR auth: wrong token\n", r.stdout)

	assert.Equal(t, []string{"start", "flush"}, a.Calls())
}

// startSocketAgent serves an agent on the UNIX socket of pid under base,
// as the agent of a JVM of this process's user does.
func startSocketAgent(t *testing.T, base string, pid int) *agent {
	t.Helper()
	a := &agent{}
	s, err := control.Listen(control.Config{Controller: a, Socket: control.SocketPath(base, os.Geteuid(), pid), NoTCP: true})
	require.NoError(t, err)
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	return a
}

// socketBase is an empty directory for the sockets of one test: the
// agents of this machine's real JVMs are not found there.
func socketBase(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "rtd")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	return base
}

func TestBroadcast(t *testing.T) {
	base := socketBase(t)
	a1 := startSocketAgent(t, base, 101)
	a2 := startSocketAgent(t, base, 102)
	a3, p3 := startAgent(t, "")
	e := env{socketBase: base, uid: os.Geteuid()}

	r := runWith(t, e, "-b", "-c", "flush")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "pid 101: OK flush: /tmp/log-rt.1_7\npid 102: OK flush: /tmp/log-rt.1_7\n", r.stdout)
	assert.Empty(t, r.stderr)
	assert.Equal(t, []string{"flush"}, a1.Calls())
	assert.Equal(t, []string{"flush"}, a2.Calls())

	// TCP ports only when asked for: a range, or one port.
	dead := deadPort(t)
	r = runWith(t, e, "-b", "-p", strconv.Itoa(p3), "-c", "fgc")
	assert.Equal(t, 1, r.status)
	assert.Contains(t, r.stdout, "127.0.0.1:"+strconv.Itoa(p3)+": ERR fgc: no JVM here\n")
	assert.Equal(t, []string{"fgc"}, a3.Calls())
	r = runWith(t, env{socketBase: socketBase(t)}, "-b", "-p", fmt.Sprintf("%d-%d", dead, dead), "-c", "ping")
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stderr, "no agent answers")
	assert.Contains(t, r.stderr, fmt.Sprintf("nor a TCP port %d-%d", dead, dead))
}

// Without -pid or -p, rtdriver uses the caller's only JVM, refuses to guess
// among several and lists them, and says where it looked when there is
// none; -pid picks one; a socket left by a dead JVM is removed.
func TestFindJVM(t *testing.T) {
	base := socketBase(t)
	uid := os.Geteuid()
	e := env{socketBase: base, uid: uid}

	r := runWith(t, e, "-c", "ping")
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stderr, "no JVM to control: no socket")
	assert.Contains(t, r.stderr, base)

	a1 := startSocketAgent(t, base, 201)
	r = runWith(t, e, "-c", "start")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "OK start\n", r.stdout)
	assert.Equal(t, []string{"start"}, a1.Calls())

	// Served by this process: rtdriver -pid checks who listens.
	me := os.Getpid()
	a2 := startSocketAgent(t, base, me)
	r = runWith(t, e, "-c", "status")
	assert.Equal(t, 2, r.status)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "2 JVMs could be meant; say which with -pid")
	assert.Contains(t, r.stderr, "pid 201 ")
	assert.Contains(t, r.stderr, fmt.Sprintf("pid %d ", me))
	assert.Equal(t, []string{"start"}, a1.Calls(), "nothing sent when refusing to guess")
	assert.Empty(t, a2.Calls())

	r = runWith(t, e, "-pid", strconv.Itoa(me), "-c", "status")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "OK status: collecting=yes\n", r.stdout)
	assert.Equal(t, []string{"status"}, a2.Calls())

	r = runWith(t, e, "-s", control.SocketPath(base, uid, 201), "-c", "ping")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Equal(t, "OK ping: pong\n", r.stdout)

	r = runWith(t, e, "-pid", "4194305", "-c", "status") // above any pid_max
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stderr, "pid 4194305 has no libjprof control socket")

	// A JVM killed outright leaves its socket: found, refused, removed.
	stale := control.SocketPath(base, uid, 204)
	leaveSocket(t, stale)
	r = runWith(t, e, "-l")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stdout, "pid 201 ")
	assert.Contains(t, r.stdout, fmt.Sprintf("pid %d ", me))
	assert.NotContains(t, r.stdout, "pid 204")
	assert.Contains(t, r.stderr, "removed "+stale+": its JVM (pid 204) is gone")
	_, err := os.Lstat(stale)
	assert.True(t, os.IsNotExist(err), "stale socket still there")

	// Many of them: one line says so.
	for pid := 205; pid < 215; pid++ {
		leaveSocket(t, control.SocketPath(base, uid, pid))
	}
	r = runWith(t, e, "-l")
	assert.Equal(t, 0, r.status, r.stderr)
	assert.Contains(t, r.stderr, "removed 10 control sockets whose JVMs are gone")
	assert.Equal(t, 1, strings.Count(r.stderr, "removed"), r.stderr)
}

// leaveSocket leaves a control socket nothing listens on, as a JVM
// killed outright does.
func leaveSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
}

func TestInteractive(t *testing.T) {
	tests := []struct {
		name   string
		prompt bool
		stdin  string
		status int
		stdout []string // substrings, in order
		absent []string
		calls  []string
	}{
		{name: "session", stdin: "ping\n\n  \nstart,status\nquit\nflush\n", status: 0,
			stdout: []string{"OK ping: pong\n", "OK start\n", "OK status: collecting=yes\n"},
			absent: []string{"flush"}, calls: []string{"start", "status"}},
		{name: "EOF ends", stdin: "reset", status: 0, stdout: []string{"OK reset\n"}, calls: []string{"reset"}},
		{name: "error remembered", stdin: "bogus\nping\n", status: 1,
			stdout: []string{"ERR bogus: unknown command (try help)\n", "OK ping: pong\n"}},
		{name: "local help", stdin: "help\n", status: 0, stdout: []string{"start[=sec]", "quit leaves"}},
		{name: "prompt", prompt: true, stdin: "ping\n", status: 0, stdout: []string{"rtdriver> ", "OK ping: pong\n", "rtdriver> "}},
		{name: "exit_rtdriver ends", stdin: "exit_rtdriver\nflush\n", status: 0,
			stdout: []string{"OK exit_rtdriver: bye\n"}, absent: []string{"flush"}},
		{name: "shutdown ends", stdin: "shutdown\nflush\n", status: 0,
			stdout: []string{"OK shutdown\n"}, absent: []string{"flush"}, calls: []string{"shutdown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, port := startAgent(t, "")
			r := runWith(t, env{stdin: strings.NewReader(tt.stdin), prompt: tt.prompt}, "-p", strconv.Itoa(port))
			assert.Equal(t, tt.status, r.status, "stderr: %s", r.stderr)
			rest := r.stdout
			for _, s := range tt.stdout {
				i := strings.Index(rest, s)
				require.GreaterOrEqual(t, i, 0, "%q not in %q", s, rest)
				rest = rest[i+len(s):]
			}
			for _, s := range tt.absent {
				assert.NotContains(t, r.stdout, s)
			}
			assert.Equal(t, tt.calls, nilIfEmpty(a.Calls()))
		})
	}
}

func TestInteractiveAgentGone(t *testing.T) {
	a := &agent{}
	s, err := control.Listen(control.Config{Controller: a, Port: control.AnyPort})
	require.NoError(t, err)
	go s.Serve()
	port := s.Addr().(*net.TCPAddr).Port

	// stdin delivers the second line only after the agent is gone.
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("ping\n"))
		time.Sleep(100 * time.Millisecond)
		s.Close()
		pw.Write([]byte("status\n"))
		pw.Close()
	}()
	r := runWith(t, env{stdin: pr}, "-p", strconv.Itoa(port))
	assert.Equal(t, 2, r.status)
	assert.Contains(t, r.stdout, "OK ping: pong")
	assert.NotEmpty(t, r.stderr)
}

// The interactive help names every command of the agent's table
// (agent/control/command.go).
func TestHelpListsEveryCommand(t *testing.T) {
	src, err := os.ReadFile("../../agent/control/command.go")
	require.NoError(t, err)
	usages := regexp.MustCompile(`usage: "([a-z_]+)`).FindAllStringSubmatch(string(src), -1)
	require.NotEmpty(t, usages)
	for _, u := range usages {
		assert.Regexp(t, `(?m)^  `+u[1]+`\b`, interactiveHelp, "rtdriver's help does not list %s", u[1])
	}
}
