package control

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestGarbageBytes(t *testing.T) {
	f := newFake()
	core, logs := observer.New(zap.WarnLevel)
	ts := startServer(t, Config{Controller: f, Logger: zap.New(core)})
	c := dialRaw(t, ts.addr)

	// 64 KiB of random bytes, newlines included (about one line in 256),
	// then a ping to find the end of the replies.
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(rng.UintN(256))
	}
	go func() {
		c.Write(junk)
		c.Write([]byte("\nping\n"))
	}()
	n := 0
	for {
		r := c.reply()
		if r == "OK ping: pong" {
			break
		}
		require.True(t, strings.HasPrefix(r, "ERR "), "reply %q to garbage", r)
		n++
		require.Less(t, n, 1000, "more replies than lines")
	}
	assert.Greater(t, n, 100)
	assert.Empty(t, f.Calls(), "garbage ran a command")
	// Bad lines are logged, but a bounded number of times.
	assert.LessOrEqual(t, logs.FilterMessageSnippet("bad line").Len(), maxLoggedBadLines+1)
}

func TestLongLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string
	}{
		{"at the limit", "ping" + strings.Repeat(" ", DefaultMaxLine-4), "OK ping: pong"},
		{"at the limit with CR", "ping" + strings.Repeat(" ", DefaultMaxLine-4) + "\r", "OK ping: pong"},
		{"one over", "ping" + strings.Repeat(" ", DefaultMaxLine-3), "ERR line: longer than 4096 bytes; discarded"},
		{"1 MB", strings.Repeat("a", 1<<20), "ERR line: longer than 4096 bytes; discarded"},
		{"1 MB of commands", strings.Repeat("start,", 1<<20/6), "ERR line: longer than 4096 bytes; discarded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			ts := startServer(t, Config{Controller: f})
			c := dialRaw(t, ts.addr)
			// Write from another goroutine: the server answers before it
			// has read the whole line.
			werr := make(chan error, 1)
			go func() {
				_, err := io.WriteString(c, tt.line+"\nping\n")
				werr <- err
			}()
			assert.Equal(t, tt.want, c.reply())
			assert.Equal(t, "OK ping: pong", c.reply())
			require.NoError(t, <-werr)
			assert.Empty(t, f.Calls())
		})
	}
}

func TestLongLineThenDisconnect(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.addr)
	_, err := c.Write([]byte(strings.Repeat("x", 100<<10)))
	require.NoError(t, err)
	assert.Equal(t, "ERR line: longer than 4096 bytes; discarded", c.reply())
	c.Close()
	// The server is still fine.
	assert.Equal(t, []string{"OK ping: pong"}, dialRaw(t, ts.addr).do("ping", 1))
}

func TestConcurrentClients(t *testing.T) {
	const clients = 50
	f := newFake()
	ts := startServer(t, Config{Controller: f, MaxConns: 64})

	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pingStatus(ts.addr, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Len(t, f.Calls(), 2*clients)
	assert.Equal(t, 1, f.MaxConcurrent(), "Controller calls overlapped")
}

// pingStatus runs a short session; it reports errors rather than failing the
// test, as it runs outside the test goroutine.
func pingStatus(addr string, i int) error {
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * testTimeout))
	r := bufio.NewReader(c)
	want := []string{"OK ping: pong", "OK status: *", "OK status: *", "OK exit_rtdriver: bye"}
	if _, err := fmt.Fprintf(c, "ping,status\nSTATUS\nexit_rtdriver\n"); err != nil {
		return fmt.Errorf("client %d: %w", i, err)
	}
	for _, w := range want {
		got, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		got = strings.TrimSuffix(got, "\n")
		if p, ok := strings.CutSuffix(w, "*"); (ok && !strings.HasPrefix(got, p)) || (!ok && got != w) {
			return fmt.Errorf("client %d: got %q, want %q", i, got, w)
		}
	}
	return nil
}

func TestConnectionLimit(t *testing.T) {
	ts := startServer(t, Config{MaxConns: 2})
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK ping: pong"}, a.do("ping", 1))
	assert.Equal(t, []string{"OK ping: pong"}, b.do("ping", 1))
	waitConns(t, ts.Server, 2, true)

	// A third takes the place of the one idle the longest, which is told
	// so and closed.
	c := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK ping: pong"}, c.do("ping", 1))
	assert.Equal(t, "ERR busy: too many connections (2); try again later", a.reply())
	a.expectClosed()
	assert.Equal(t, []string{"OK ping: pong"}, b.do("ping", 1))
}

func TestConnectionLimitAllBusy(t *testing.T) {
	// When every place runs or waits for a command, none can be given
	// away: a new connection is refused with a reply, even when it sends
	// first.
	f := newFake()
	f.flushGate = make(chan struct{})
	f.flushEntered = make(chan struct{}, 1)
	ts := startServer(t, Config{Controller: f, MaxConns: 2, QueueTimeout: time.Minute})
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.send("flush\n")
	<-f.flushEntered
	b.send("status\n") // queued behind the flush
	waitConns(t, ts.Server, 2, false)
	c := dialRaw(t, ts.addr)
	c.send("flush\n")
	got := c.reply()
	if got != "ERR busy: too many connections (2); try again later" {
		t.Fatalf("connection over the limit got %q", got)
	}
	c.expectClosed()
	close(f.flushGate)
	assert.Equal(t, "OK flush: /tmp/log-rt.1_42", a.reply())
	assert.True(t, strings.HasPrefix(b.reply(), "OK status: "))
}

func TestPartialLinesDoNotLockOut(t *testing.T) {
	// MaxConns connections each holding half a line, with the default
	// (long) timeouts: a new client is still served at once.
	ts := startServer(t, Config{})
	var partial []*rawConn
	for range DefaultMaxConns {
		p := dialRaw(t, ts.addr)
		p.send("sta")
		partial = append(partial, p)
	}
	c := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK ping: pong"}, c.do("ping", 1))
	// The oldest gave its place and was told why.
	assert.Equal(t, "ERR busy: too many connections (16); try again later", partial[0].reply())
	partial[0].expectClosed()
}

func TestPartialLineTimeout(t *testing.T) {
	// A begun line must end within LineTimeout; an idle connection may
	// stay for IdleTimeout.
	ts := startServer(t, Config{LineTimeout: 100 * time.Millisecond, IdleTimeout: time.Minute})
	idle := dialRaw(t, ts.addr)
	p := dialRaw(t, ts.addr)
	p.send("pi")
	assert.Equal(t, "ERR line: no end of line within 100ms; connection closed", p.reply())
	p.expectClosed()
	// The rest of a line that came too late is not run either.
	assert.Equal(t, []string{"OK ping: pong"}, idle.do("ping", 1))
}

func TestSimultaneousConnections(t *testing.T) {
	// 100 clients at once against 16 places: each gets a real reply or
	// "ERR busy", never a reset or an empty read.
	for _, allBusy := range []bool{false, true} {
		t.Run(fmt.Sprintf("allBusy=%v", allBusy), func(t *testing.T) {
			f := newFake()
			ts := startServer(t, Config{Controller: f, QueueTimeout: time.Minute})
			if allBusy {
				// Every place runs or waits for a command: nothing can
				// be evicted, so all 100 are refused.
				f.flushGate = make(chan struct{})
				f.flushEntered = make(chan struct{}, 1)
				defer close(f.flushGate)
				for i := range DefaultMaxConns {
					c := dialRaw(t, ts.addr)
					c.send("flush\n")
					if i == 0 {
						<-f.flushEntered
					}
				}
				waitConns(t, ts.Server, DefaultMaxConns, false)
			}
			const clients = 100
			var wg sync.WaitGroup
			got := make([]string, clients)
			errs := make([]error, clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], errs[i] = pingOnce(ts.addr)
				}()
			}
			wg.Wait()
			busy := 0
			for i := range clients {
				if !assert.NoError(t, errs[i], "client %d", i) {
					continue
				}
				switch {
				case got[i] == "OK ping: pong":
				case strings.HasPrefix(got[i], "ERR busy: "):
					busy++
				default:
					t.Errorf("client %d got %q", i, got[i])
				}
			}
			if allBusy {
				assert.Equal(t, clients, busy)
			}
		})
	}
}

// pingOnce connects, sends ping and reads one line.
func pingOnce(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * testTimeout))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	s, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return s, fmt.Errorf("read reply (got %q): %w", s, err)
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// waitConns waits until n connections hold a place and are all waiting
// for input (waiting) or all busy with a command (!waiting).
func waitConns(t *testing.T, s *Server, n int, waiting bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		s.mu.Lock()
		got := 0
		for _, e := range s.conns {
			if e.counted && e.waiting == waiting {
				got++
			}
		}
		s.mu.Unlock()
		if got == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d of %d connections waiting=%v", got, n, waiting)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConnectionFlood(t *testing.T) {
	// Far more connections than the limit, none polite: the server stays
	// up and serves again afterwards.
	ts := startServer(t, Config{MaxConns: 4})
	var conns []net.Conn
	for range 40 {
		c, err := net.DialTimeout("tcp", ts.addr, testTimeout)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(testTimeout)
	for {
		d := dialRaw(t, ts.addr)
		d.send("ping\n")
		if s, err := d.r.ReadString('\n'); err == nil && s == "OK ping: pong\n" {
			break
		}
		d.Close()
		require.True(t, time.Now().Before(deadline), "server did not recover from the flood")
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDisconnectMidCommand(t *testing.T) {
	f := newFake()
	f.flushGate = make(chan struct{})
	f.flushEntered = make(chan struct{}, 1)
	ts := startServer(t, Config{Controller: f, QueueTimeout: 200 * time.Millisecond})

	a := dialRaw(t, ts.addr)
	a.send("flush\n")
	select {
	case <-f.flushEntered:
	case <-time.After(testTimeout):
		t.Fatal("flush never started")
	}
	a.Close() // gone while its flush runs

	b := dialRaw(t, ts.addr)
	// ping needs no Controller: answered at once despite the slow flush.
	assert.Equal(t, []string{"OK ping: pong"}, b.do("ping", 1))
	// status must wait for the flush; it gives up after QueueTimeout
	// instead of piling up, and runs nothing.
	start := time.Now()
	matchReplies(t, []string{"ERR status: busy: another command is still running after 200ms; not run"}, b.do("status", 1))
	assert.Less(t, time.Since(start), testTimeout)

	close(f.flushGate)
	// Once the flush ends the slot is free: the reply to the vanished
	// client was dropped without blocking anything.
	assert.Equal(t, []string{"OK status: collecting=no backend=clock threads=0 events=0 files=0"}, b.do("status", 1))
	assert.Equal(t, []string{"flush", "status"}, f.Calls())
}

func TestCloseWhileConnected(t *testing.T) {
	f := newFake()
	f.flushGate = make(chan struct{})
	f.flushEntered = make(chan struct{}, 1)
	s, err := Listen(Config{Controller: f, Port: AnyPort})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	addr := s.Addr().String()

	idle := dialRaw(t, addr)
	assert.Equal(t, []string{"OK ping: pong"}, idle.do("ping", 1))
	partial := dialRaw(t, addr)
	partial.send("sta") // half a line
	waiting := dialRaw(t, addr)
	busy := dialRaw(t, addr)
	busy.send("flush\n")
	select {
	case <-f.flushEntered:
	case <-time.After(testTimeout):
		t.Fatal("flush never started")
	}
	waiting.send("reset\n") // queued behind the flush

	// Close returns promptly although a Controller call is running.
	closeWithin(t, s, 2*time.Second)
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return")
	}
	for _, c := range []*rawConn{idle, partial, waiting, busy} {
		c.expectClosed()
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err)

	// The flush finishes after Close; the queued reset never runs.
	close(f.flushGate)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, []string{"flush"}, f.Calls())
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dialRaw(t, ts.addr)
	start := time.Now()
	c.expectClosed()
	assert.Less(t, time.Since(start), testTimeout)

	// A dribbled line does not keep a connection forever either.
	d := dialRaw(t, ts.addr)
	d.send("pi")
	assert.Equal(t, "ERR line: no end of line within 100ms; connection closed", d.reply())
	d.expectClosed()
}

func TestUnterminatedLastLine(t *testing.T) {
	// "printf ping | nc" sends no newline: the command still counts.
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.addr)
	c.send("ping")
	require.NoError(t, c.Conn.(*net.TCPConn).CloseWrite())
	assert.Equal(t, "OK ping: pong", c.reply())
	c.expectClosed()
}

func TestPipelinedLines(t *testing.T) {
	// Many lines in one write are answered in order.
	f := newFake()
	ts := startServer(t, Config{Controller: f})
	c := dialRaw(t, ts.addr)
	c.send(strings.Repeat("ping\nstatus\n", 100))
	for i := range 100 {
		require.Equal(t, "OK ping: pong", c.reply(), "pair %d", i)
		require.True(t, strings.HasPrefix(c.reply(), "OK status: "), "pair %d", i)
	}
	assert.Len(t, f.Calls(), 100)
}

func TestConnectionPanicIsContained(t *testing.T) {
	// Make the connection goroutine itself panic, through a logger hook on
	// the bad-line message: the connection is dropped, the server lives on.
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == "rtdriver bad line" {
			panic("logger bug")
		}
		return nil
	}))
	f := newFake()
	ts := startServer(t, Config{Controller: f, Logger: log})
	c := dialRaw(t, ts.addr)
	c.send("\x00\n")
	c.expectClosed()
	assert.Equal(t, 1, logs.FilterMessage("rtdriver connection panicked").Len())
	assert.Equal(t, []string{"OK ping: pong", "OK reset"}, dialRaw(t, ts.addr).do("ping,reset", 2))
}
