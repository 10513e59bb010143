package control

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matchReplies compares replies with wants; a want ending in "*" matches as a
// prefix.
func matchReplies(t *testing.T, want, got []string) {
	t.Helper()
	require.Len(t, got, len(want), "replies: %q", got)
	for i, w := range want {
		if p, ok := strings.CutSuffix(w, "*"); ok {
			assert.True(t, strings.HasPrefix(got[i], p), "reply %d: %q does not start with %q", i, got[i], p)
		} else {
			assert.Equal(t, w, got[i], "reply %d", i)
		}
	}
}

func TestServerCommands(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fakeCtl)
		lines []string // sent in order
		want  []string // all replies in order
		calls []string // Controller calls, in order
	}{
		{name: "ping", lines: []string{"ping"}, want: []string{"OK ping: pong"}},
		{name: "help", lines: []string{"HELP"}, want: []string{"OK help: start[=sec] flush[=interval] *"}},
		{name: "start", lines: []string{"start"}, want: []string{"OK start"}, calls: []string{"start"}},
		{name: "start delayed", lines: []string{"START=5"}, want: []string{"OK start: in 5s"}, calls: []string{"start"}},
		{name: "chain", lines: []string{"start,flush"},
			want: []string{"OK start", "OK flush: /tmp/log-rt.1_42"}, calls: []string{"start", "flush"}},
		{name: "crlf and blanks", lines: []string{" reset , fgc \r"},
			want: []string{"OK reset", "OK fgc"}, calls: []string{"reset", "fgc"}},
		{name: "status", lines: []string{"status"},
			want: []string{"OK status: collecting=no backend=clock threads=0 events=0 files=0"}, calls: []string{"status"}},
		{name: "status made one line", setup: func(f *fakeCtl) { f.status = "two\nlines" }, lines: []string{"status"},
			want: []string{"OK status: two lines"}, calls: []string{"status"}},
		{name: "end", lines: []string{"end"}, want: []string{"OK end: /tmp/log-rt.2_42"}, calls: []string{"end"}},
		{name: "blank lines get no reply", lines: []string{"", "   ", "ping"}, want: []string{"OK ping: pong"}},
		{name: "controller error", setup: func(f *fakeCtl) { f.fail["flush"] = errors.New("nothing collected") },
			lines: []string{"flush"}, want: []string{"ERR flush: nothing collected"}, calls: []string{"flush"}},
		{name: "noop is OK with what happened, and the chain goes on",
			setup: func(f *fakeCtl) {
				f.fail["start"] = Noop("already collecting since 10:00:00")
				f.fail["flush"] = Noop("nothing collected since 10:00:00; no file written")
			},
			lines: []string{"start,flush,ping"},
			want:  []string{"OK start: already collecting since 10:00:00", "OK flush: nothing collected since 10:00:00; no file written", "OK ping: pong"},
			calls: []string{"start", "flush"}},
		{name: "failure stops the chain", setup: func(f *fakeCtl) { f.fail["fgc"] = errors.New("no JVM") },
			lines: []string{"fgc,flush,ping"},
			want:  []string{"ERR fgc: no JVM", "ERR flush: not run: fgc failed", "ERR ping: not run: fgc failed"},
			calls: []string{"fgc"}},
		{name: "invalid element runs nothing", lines: []string{"start,bogus,flush"},
			want: []string{"ERR start: not run: another command on the line is invalid",
				"ERR bogus: unknown command (try help)",
				"ERR flush: not run: another command on the line is invalid"}},
		{name: "bad argument runs nothing", lines: []string{"reset,start=soon"},
			want: []string{"ERR reset: not run: *", `ERR start: bad delay "soon"*`}},
		{name: "argument on plain command", lines: []string{"reset=now"}, want: []string{"ERR reset: takes no argument"}},
		{name: "bad flush argument", lines: []string{"flush=now"}, want: []string{`ERR flush: bad argument "now": want flush[=interval]`}},
		{name: "interval flush", lines: []string{"flush=interval"}, want: []string{"OK flush: /tmp/log-rt.1_42"}, calls: []string{"flush=interval"}},
		{name: "shutdown must be last", lines: []string{"shutdown,ping", "ping"},
			want: []string{"ERR shutdown: must be the last command on its line", "ERR ping: not run: *", "OK ping: pong"}},
		{name: "malformed name", lines: []string{"fl ush"}, want: []string{`ERR ?: malformed command "fl ush"`}},
		{name: "empty element", lines: []string{"start,,flush", "ping"},
			want: []string{"ERR line: empty command at position 2", "OK ping: pong"}},
		{name: "binary garbage", lines: []string{"\x00\x01\xfe\xff", "ping"},
			want: []string{"ERR line: non-printable byte 0x00 at column 1", "OK ping: pong"}},
		{name: "controller panic", setup: func(f *fakeCtl) { f.panics["flush"] = "boom" },
			lines: []string{"flush", "reset", "ping"},
			want:  []string{"ERR flush: internal error: boom", "OK reset", "OK ping: pong"},
			calls: []string{"flush", "reset"}},
		{name: "token ignored without server token", lines: []string{"token=x,ping"}, want: []string{"OK ping: pong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			if tt.setup != nil {
				tt.setup(f)
			}
			ts := startServer(t, Config{Controller: f})
			c := dialRaw(t, ts.addr)
			for _, l := range tt.lines {
				c.send(l + "\n")
			}
			got := make([]string, len(tt.want))
			for i := range got {
				got[i] = c.reply()
			}
			matchReplies(t, tt.want, got)
			// Nothing more must arrive: a ping now answers first.
			assert.Equal(t, []string{"OK ping: pong"}, c.do("ping", 1))
			assert.Equal(t, tt.calls, nilIfEmpty(f.Calls()))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestServerStartDelay(t *testing.T) {
	f := newFake()
	ts := startServer(t, Config{Controller: f})
	c := dialRaw(t, ts.addr)
	matchReplies(t, []string{"OK start", "OK start: in 5s", "OK start: in 250ms"}, c.do("start,start=5,start=250ms", 3))
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Equal(t, []time.Duration{0, 5 * time.Second, 250 * time.Millisecond}, f.delays)
}

func TestServerToken(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		want   string
		closed bool
		calls  []string
	}{
		{name: "missing", line: "start", want: "ERR auth: token required: this agent was started with TOKEN=; give it with rtdriver -t <T> or RTDRIVER_TOKEN=<T> (a raw client begins the line with token=<T>,)", closed: true},
		{name: "wrong", line: "token=wrong,start", want: "ERR auth: wrong token", closed: true},
		{name: "wrong case", line: "token=S3CRET,start", want: "ERR auth: wrong token", closed: true},
		{name: "empty", line: "token=,start", want: "ERR auth: wrong token", closed: true},
		{name: "not first", line: "start,token=s3cret", want: "ERR auth: token required*", closed: true},
		{name: "accepted", line: "token=s3cret,start", want: "OK start", calls: []string{"start"}},
		{name: "key any case", line: "Token = s3cret , ping", want: "OK ping: pong"},
		{name: "accepted but invalid line", line: "token=s3cret,bogus", want: "ERR bogus: unknown command (try help)"},
		{name: "garbage before auth", line: "\x00", want: "ERR line: non-printable*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			ts := startServer(t, Config{Controller: f, Token: "s3cret"})
			c := dialRaw(t, ts.addr)
			matchReplies(t, []string{tt.want}, c.do(tt.line, 1))
			if tt.closed {
				c.expectClosed()
			} else {
				// The connection stays usable, still with the token.
				assert.Equal(t, []string{"OK ping: pong"}, c.do("token=s3cret,ping", 1))
			}
			assert.Equal(t, tt.calls, nilIfEmpty(f.Calls()))
		})
	}
}

func TestServerExit(t *testing.T) {
	ts := startServer(t, Config{})
	c := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK ping: pong", "OK exit_rtdriver: bye"}, c.do("ping,EXIT_RTDRIVER", 2))
	c.expectClosed()

	// Other connections are unaffected.
	assert.Equal(t, []string{"OK ping: pong"}, dialRaw(t, ts.addr).do("ping", 1))
}

func TestServerShutdown(t *testing.T) {
	f := newFake()
	ts := startServer(t, Config{Controller: f})
	other := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK ping: pong"}, other.do("ping", 1))

	c := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"OK shutdown"}, c.do("shutdown", 1))
	c.expectClosed()
	other.expectClosed()

	select {
	case err := <-ts.served:
		require.NoError(t, err)
		ts.served <- nil // for the cleanup's check
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after shutdown")
	}
	_, err := net.DialTimeout("tcp", ts.addr, time.Second)
	assert.Error(t, err, "listener still open")
	assert.Equal(t, []string{"shutdown"}, f.Calls())
}

func TestServerShutdownFails(t *testing.T) {
	f := newFake()
	f.fail["shutdown"] = errors.New("cannot stop now")
	ts := startServer(t, Config{Controller: f})
	c := dialRaw(t, ts.addr)
	assert.Equal(t, []string{"ERR shutdown: cannot stop now"}, c.do("shutdown", 1))
	assert.Equal(t, []string{"OK ping: pong"}, c.do("ping", 1))
}

func TestCloseBeforeServe(t *testing.T) {
	s, err := Listen(Config{Controller: newFake(), Port: AnyPort})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")
	assert.NoError(t, s.Serve(), "Serve after Close")
}

func TestServeTwice(t *testing.T) {
	ts := startServer(t, Config{})
	// Wait until the first Serve runs, then a second must fail.
	assert.Equal(t, []string{"OK ping: pong"}, dialRaw(t, ts.addr).do("ping", 1))
	assert.ErrorContains(t, ts.Serve(), "twice")
}

func TestControllerMayCloseServer(t *testing.T) {
	// A Controller that closes the server from inside a call must not
	// deadlock: Close does not wait for Controller calls.
	f := newFake()
	var srv *Server
	closed := make(chan error, 1)
	f.onCall = func(name string) {
		if name == "reset" {
			closed <- srv.Close()
		}
	}
	ts := startServer(t, Config{Controller: f})
	srv = ts.Server
	c := dialRaw(t, ts.addr)
	c.send("reset\n")
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Close from inside a Controller call deadlocked")
	}
	c.expectClosed()
}
