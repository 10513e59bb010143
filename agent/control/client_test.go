package control

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dialClient(t *testing.T, addr, token string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Dial(ctx, addr, token)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func doWithin(t *testing.T, c *Client, line string) ([]Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return c.Do(ctx, line)
}

func TestClientDo(t *testing.T) {
	f := newFake()
	f.fail["fgc"] = errors.New("no JVM")
	ts := startServer(t, Config{Controller: f})
	c := dialClient(t, ts.addr, "")

	tests := []struct {
		line string
		want []string
	}{
		{"start,flush", []string{"OK start", "OK flush: /tmp/log-rt.1_42"}},
		{"  ping  ", []string{"OK ping: pong"}},
		{"fgc,reset", []string{"ERR fgc: no JVM", "ERR reset: not run: fgc failed"}},
		{"bogus,ping", []string{"ERR bogus: unknown command (try help)", "ERR ping: not run: another command on the line is invalid"}},
		// Line-level replies end the line early.
		{"ping,,ping", []string{"ERR line: empty command at position 2"}},
		{"token=x,ping", []string{"OK ping: pong"}},
		{"token=x", []string{"ERR line: no command after the token"}},
		{"ping,exit_rtdriver", []string{"OK ping: pong", "OK exit_rtdriver: bye"}},
	}
	for _, tt := range tests {
		got, err := doWithin(t, c, tt.line)
		require.NoError(t, err, tt.line)
		var s []string
		for _, r := range got {
			s = append(s, r.String())
		}
		assert.Equal(t, tt.want, s, tt.line)
	}
	// The server closed after exit_rtdriver.
	_, err := doWithin(t, c, "ping")
	assert.ErrorContains(t, err, "connection")
}

func TestClientLocalErrors(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialClient(t, ts.addr, "")
	for _, line := range []string{"", "  ", "ping\nflush", "ping\rflush"} {
		_, err := doWithin(t, c, line)
		assert.Error(t, err, "%q", line)
	}
	_, err := Dial(context.Background(), ts.addr, "bad token")
	assert.ErrorContains(t, err, "token")
}

func TestClientToken(t *testing.T) {
	ts := startServer(t, Config{Token: "s3cret"})

	good := dialClient(t, ts.addr, "s3cret")
	got, err := doWithin(t, good, "start,status")
	require.NoError(t, err)
	assert.Len(t, got, 2)
	assert.True(t, got[0].OK && got[1].OK)

	bad := dialClient(t, ts.addr, "guess")
	got, err = doWithin(t, bad, "start,status")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, Reply{Cmd: "auth", Detail: "wrong token"}, got[0])
	_, err = doWithin(t, bad, "ping")
	assert.Error(t, err, "server keeps an unauthenticated connection")
}

func TestClientBusy(t *testing.T) {
	f := newFake()
	f.flushGate = make(chan struct{})
	f.flushEntered = make(chan struct{}, 1)
	defer close(f.flushGate)
	ts := startServer(t, Config{Controller: f, MaxConns: 1})
	// The one place runs a command, so it cannot be given away.
	dialRaw(t, ts.addr).send("flush\n")
	<-f.flushEntered

	second := dialClient(t, ts.addr, "")
	got, err := doWithin(t, second, "start,flush")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "busy", got[0].Cmd)
	assert.True(t, got[0].LineLevel())
}

// fakePeer serves each connection with fn on a loopback listener.
func fakePeer(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestClientNotAnAgent(t *testing.T) {
	addr := fakePeer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
	})
	c := dialClient(t, addr, "")
	_, err := doWithin(t, c, "ping")
	assert.ErrorContains(t, err, "not an rtdriver reply")
}

func TestClientHugeReply(t *testing.T) {
	addr := fakePeer(t, func(c net.Conn) {
		buf := make([]byte, 8<<10)
		for i := range buf {
			buf[i] = 'x'
		}
		c.SetWriteDeadline(time.Now().Add(testTimeout))
		for range (maxReplyLine / len(buf)) + 2 {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
	c := dialClient(t, addr, "")
	_, err := doWithin(t, c, "ping")
	assert.ErrorContains(t, err, "reply longer than")
}

func TestClientTimeout(t *testing.T) {
	// A peer that accepts and never answers.
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	addr := fakePeer(t, func(c net.Conn) { <-hold })
	c := dialClient(t, addr, "")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, "ping")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), testTimeout)

	// A late reply could be taken for the next line's: refuse to go on.
	_, err = doWithin(t, c, "ping")
	assert.ErrorContains(t, err, "unusable")
}

func TestClientCancel(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	addr := fakePeer(t, func(c net.Conn) { <-hold })
	c := dialClient(t, addr, "")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Do(ctx, "ping")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = Dial(context.Background(), addr, "")
	assert.ErrorContains(t, err, "refused")
}

func TestCountCommands(t *testing.T) {
	for line, want := range map[string]int{
		"ping":               1,
		"start,flush":        2,
		"a,,b":               3,
		"token=x,ping,flush": 2,
		"TOKEN = x ,ping":    1,
		"token=x":            1,
		"ping,token=x":       2,
	} {
		assert.Equal(t, want, countCommands(line), line)
	}
}
