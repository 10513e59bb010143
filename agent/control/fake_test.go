package control

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait in these tests: a hang is a failure, not a
// stuck CI job.
const testTimeout = 5 * time.Second

// fakeCtl is a Controller that records calls and can fail, panic or block.
type fakeCtl struct {
	mu        sync.Mutex
	calls     []string
	delays    []time.Duration
	inCall    int
	maxInCall int
	fail      map[string]error // method name → error to return
	panics    map[string]any   // method name → value to panic with
	status    string
	// flushGate, when set, blocks Flush until it is closed; flushEntered
	// receives once per Flush when it starts.
	flushGate    chan struct{}
	flushEntered chan struct{}
	// onCall runs at the start of every call (outside mu).
	onCall func(name string)
}

func newFake() *fakeCtl {
	return &fakeCtl{fail: map[string]error{}, panics: map[string]any{}, status: "collecting=no backend=clock threads=0 events=0 files=0"}
}

// enter records a call and returns its configured error; it panics when
// told to.
func (f *fakeCtl) enter(name string) error {
	f.mu.Lock()
	f.calls = append(f.calls, name)
	f.inCall++
	f.maxInCall = max(f.maxInCall, f.inCall)
	err, hook := f.fail[name], f.onCall
	p, hasPanic := f.panics[name]
	f.mu.Unlock()
	if hook != nil {
		hook(name)
	}
	if hasPanic {
		panic(p) // the caller's deferred exit still runs
	}
	return err
}

func (f *fakeCtl) exit() {
	f.mu.Lock()
	f.inCall--
	f.mu.Unlock()
}

func (f *fakeCtl) Start(d time.Duration) error {
	defer f.exit()
	f.mu.Lock()
	f.delays = append(f.delays, d)
	f.mu.Unlock()
	return f.enter("start")
}

func (f *fakeCtl) Flush() (string, error) {
	defer f.exit()
	if err := f.enter("flush"); err != nil {
		return "", err
	}
	if f.flushEntered != nil {
		f.flushEntered <- struct{}{}
	}
	if f.flushGate != nil {
		<-f.flushGate
	}
	return "/tmp/log-rt.1_42", nil
}

func (f *fakeCtl) FlushInterval() (string, error) {
	defer f.exit()
	if err := f.enter("flush=interval"); err != nil {
		return "", err
	}
	return "/tmp/log-rt.1_42", nil
}

func (f *fakeCtl) Reset() error { defer f.exit(); return f.enter("reset") }

func (f *fakeCtl) End() (string, error) {
	defer f.exit()
	if err := f.enter("end"); err != nil {
		return "", err
	}
	return "/tmp/log-rt.2_42", nil
}

func (f *fakeCtl) Status() string {
	defer f.exit()
	_ = f.enter("status")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeCtl) ForceGC() error               { defer f.exit(); return f.enter("fgc") }
func (f *fakeCtl) Roots(string) (string, error) { defer f.exit(); return "", f.enter("roots") }
func (f *fakeCtl) Shutdown() (string, error)    { defer f.exit(); return "", f.enter("shutdown") }
func (f *fakeCtl) Detach() (string, error)      { defer f.exit(); return "", f.enter("detach") }
func (f *fakeCtl) Heap() (string, error)        { defer f.exit(); return "", f.enter("heap") }
func (f *fakeCtl) HeapDump() (string, error)    { defer f.exit(); return "", f.enter("heapdump") }

func (f *fakeCtl) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeCtl) MaxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInCall
}

// testServer is a running Server on a kernel-chosen loopback port.
type testServer struct {
	*Server
	addr   string
	served chan error
}

// startServer listens and serves with cfg, filling in the controller and
// port; the server is closed when the test ends, and Close must be prompt.
func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Controller == nil {
		cfg.Controller = newFake()
	}
	if cfg.Port == 0 {
		cfg.Port = AnyPort
	}
	s, err := Listen(cfg)
	require.NoError(t, err)
	ts := &testServer{Server: s, addr: s.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- s.Serve() }()
	t.Cleanup(func() {
		closeWithin(t, s, testTimeout)
		select {
		case err := <-ts.served:
			require.NoError(t, err)
		case <-time.After(testTimeout):
			t.Error("Serve did not return after Close")
		}
	})
	return ts
}

// closeWithin closes s and fails the test when that takes longer than d.
func closeWithin(t *testing.T, s *Server, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(d):
		t.Fatal("Close did not return in time")
	}
}

// rawConn is a plain TCP connection for speaking the protocol by hand.
type rawConn struct {
	t *testing.T
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(testTimeout)))
	return &rawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	_, err := c.Write([]byte(s))
	require.NoError(c.t, err)
}

// reply reads one reply line, without its terminator.
func (c *rawConn) reply() string {
	c.t.Helper()
	s, err := c.r.ReadString('\n')
	require.NoError(c.t, err, "reading a reply (got %q)", s)
	return strings.TrimSuffix(s, "\n")
}

// do sends line and reads n replies.
func (c *rawConn) do(line string, n int) []string {
	c.t.Helper()
	c.send(line + "\n")
	out := make([]string, n)
	for i := range out {
		out[i] = c.reply()
	}
	return out
}

// expectClosed asserts the server closes the connection: reads end in EOF
// (or a reset) without more data.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	s, err := c.r.ReadString('\n')
	require.Error(c.t, err, "connection still open, got %q", s)
	var ne net.Error
	require.False(c.t, errors.As(err, &ne) && ne.Timeout(), "connection not closed: %v", err)
	require.Empty(c.t, s)
}
