package control

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		line    string
		want    Reply
		lineLvl bool
		err     bool
	}{
		{line: "OK ping: pong\n", want: Reply{OK: true, Cmd: "ping", Detail: "pong"}},
		{line: "OK start\r\n", want: Reply{OK: true, Cmd: "start"}},
		{line: "OK flush: /tmp/a: b", want: Reply{OK: true, Cmd: "flush", Detail: "/tmp/a: b"}},
		{line: "ERR bogus: unknown command (try help)", want: Reply{Cmd: "bogus", Detail: "unknown command (try help)"}},
		{line: "ERR line: empty command at position 2", want: Reply{Cmd: "line", Detail: "empty command at position 2"}, lineLvl: true},
		{line: "ERR auth: wrong token", want: Reply{Cmd: "auth", Detail: "wrong token"}, lineLvl: true},
		{line: "ERR busy: too many connections", want: Reply{Cmd: "busy", Detail: "too many connections"}, lineLvl: true},
		{line: "", err: true},
		{line: "\n", err: true},
		{line: "HTTP/1.1 400 Bad Request", err: true},
		{line: "OK", err: true},
		{line: "OK ", err: true},
		{line: "ERR : reason", err: true},
		{line: "ok ping", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r, err := ParseReply(tt.line)
			if tt.err {
				require.Error(t, err)
				assert.True(t, errors.Is(err, errNotReply))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, r)
			assert.Equal(t, tt.lineLvl, r.LineLevel())
			assert.Equal(t, strings.TrimRight(tt.line, "\r\n"), r.String())
		})
	}
}

func TestLineLevelOKIsNot(t *testing.T) {
	// Only ERR replies end a line early; an OK named like a line-level
	// reply cannot occur, but must not confuse the client either.
	assert.False(t, Reply{OK: true, Cmd: replyLine}.LineLevel())
}

func TestOneLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"collecting=yes threads=3", "collecting=yes threads=3"},
		{"a\nb\r\nc", "a b  c"},
		{"tab\there", "tab here"},
		{"bad \xff utf8", "bad ? utf8"},
		{"/tmp/prof/log-rt.1_42", "/tmp/prof/log-rt.1_42"},
		{"ünïcode ok", "ünïcode ok"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, oneLine(tt.in), "%q", tt.in)
	}

	long := strings.Repeat("é", maxDetail) // 2 bytes each: cut must respect runes
	got := oneLine(long)
	assert.LessOrEqual(t, len(got), maxDetail+len("..."))
	assert.True(t, utf8.ValidString(got))
	assert.True(t, strings.HasSuffix(got, "..."))
}

func TestReplyStringOneLine(t *testing.T) {
	r := errReply("flush", errors.New("disk full\nsecond line"))
	assert.Equal(t, "ERR flush: disk full second line", r.String())
	r = okReply("status", "a\rb")
	assert.Equal(t, "OK status: a b", r.String())
}
