package control

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLine(t *testing.T) {
	type cmdWant struct {
		name  string
		delay time.Duration
		err   string // substring of the command's error; empty: valid
	}
	tests := []struct {
		name    string
		line    string
		lineErr string // "kind: substring" of a line-level error
		token   string
		cmds    []cmdWant
	}{
		{name: "empty", line: ""},
		{name: "blank", line: " \t  "},
		{name: "ping", line: "ping", cmds: []cmdWant{{name: "ping"}}},
		{name: "case-insensitive", line: "PiNg", cmds: []cmdWant{{name: "ping"}}},
		{name: "every command", line: "start,flush,reset,end,status,ping,fgc,help,shutdown",
			cmds: []cmdWant{{name: "start"}, {name: "flush"}, {name: "reset"}, {name: "end"}, {name: "status"},
				{name: "ping"}, {name: "fgc"}, {name: "help"}, {name: "shutdown"}}},
		{name: "blanks around", line: " Start = 5 ,\tFLUSH ", cmds: []cmdWant{{name: "start", delay: 5 * time.Second}, {name: "flush"}}},
		{name: "start seconds", line: "start=0", cmds: []cmdWant{{name: "start"}}},
		{name: "start duration", line: "start=500ms", cmds: []cmdWant{{name: "start", delay: 500 * time.Millisecond}}},
		{name: "start duration upper case", line: "START=2M", cmds: []cmdWant{{name: "start", delay: 2 * time.Minute}}},
		{name: "start max", line: "start=86400", cmds: []cmdWant{{name: "start", delay: 24 * time.Hour}}},
		{name: "start empty arg", line: "start=", cmds: []cmdWant{{name: "start", err: "empty argument"}}},
		{name: "start negative", line: "start=-1", cmds: []cmdWant{{name: "start", err: "bad delay"}}},
		{name: "start negative duration", line: "start=-1s", cmds: []cmdWant{{name: "start", err: "out of range"}}},
		{name: "start too long", line: "start=86401", cmds: []cmdWant{{name: "start", err: "longer than"}}},
		{name: "start huge", line: "start=99999999999999999999999", cmds: []cmdWant{{name: "start", err: "bad delay"}}},
		{name: "start too long duration", line: "start=25h", cmds: []cmdWant{{name: "start", err: "out of range"}}},
		{name: "start garbage", line: "start=soon", cmds: []cmdWant{{name: "start", err: "bad delay"}}},
		{name: "arg not taken", line: "reset=1", cmds: []cmdWant{{name: "reset", err: "takes no argument"}}},
		{name: "flush=interval", line: "flush=Interval,flush", cmds: []cmdWant{{name: "flush"}, {name: "flush"}}},
		{name: "flush=bad", line: "flush=1", cmds: []cmdWant{{name: "flush", err: `bad argument "1": want flush[=interval]`}}},
		{name: "ping arg", line: "ping=x", cmds: []cmdWant{{name: "ping", err: "takes no argument"}}},
		{name: "unknown", line: "bogus", cmds: []cmdWant{{name: "bogus", err: "unknown command"}}},
		{name: "malformed name", line: "st art", cmds: []cmdWant{{name: "?", err: "malformed command"}}},
		{name: "malformed punctuation", line: "flush;rm", cmds: []cmdWant{{name: "?", err: "malformed command"}}},
		{name: "name too long", line: strings.Repeat("a", 40), cmds: []cmdWant{{name: "?", err: "malformed"}}},
		{name: "empty name", line: "=5", cmds: []cmdWant{{name: "?", err: "malformed"}}},
		{name: "invalid element among valid", line: "start,bogus,flush",
			cmds: []cmdWant{{name: "start"}, {name: "bogus", err: "unknown"}, {name: "flush"}}},
		{name: "token", line: "token=s3cret,ping", token: "s3cret", cmds: []cmdWant{{name: "ping"}}},
		{name: "token key any case, value kept", line: " TOKEN = AbC ,ping", token: "AbC", cmds: []cmdWant{{name: "ping"}}},
		{name: "token with =", line: "token=a=b,ping", token: "a=b", cmds: []cmdWant{{name: "ping"}}},
		{name: "token alone", line: "token=x", lineErr: "line: no command after the token"},
		{name: "token not first", line: "ping,token=x", cmds: []cmdWant{{name: "ping"}, {name: "token", err: "must come first"}}},
		{name: "token without value is a command", line: "token,ping", cmds: []cmdWant{{name: "token", err: "must come first"}, {name: "ping"}}},
		{name: "empty element", line: "ping,,flush", lineErr: "line: empty command at position 2"},
		{name: "trailing comma", line: "ping,", lineErr: "line: empty command at position 2"},
		{name: "leading comma", line: ",ping", lineErr: "line: empty command at position 1"},
		{name: "blank element", line: "ping, ,ping", lineErr: "line: empty command at position 2"},
		{name: "NUL", line: "ping\x00", lineErr: "line: non-printable byte 0x00 at column 5"},
		{name: "binary", line: "\xff\xfe", lineErr: "line: non-printable byte 0xff at column 1"},
		{name: "DEL", line: "ping\x7f", lineErr: "line: non-printable byte 0x7f"},
		{name: "escape sequence", line: "\x1b[A", lineErr: "line: non-printable byte 0x1b"},
		{name: "UTF-8", line: "flüsh", lineErr: "line: non-printable byte 0xc3"},
		{name: "embedded CR", line: "ping\rflush", lineErr: "line: non-printable byte 0x0d"},
		{name: "shutdown not last", line: "shutdown,ping", cmds: []cmdWant{{name: "shutdown", err: "last command"}, {name: "ping"}}},
		{name: "exit not last", line: "exit_rtdriver,ping", cmds: []cmdWant{{name: "exit_rtdriver", err: "last command"}, {name: "ping"}}},
		{name: "exit last", line: "ping,exit_rtdriver", cmds: []cmdWant{{name: "ping"}, {name: "exit_rtdriver"}}},
		{name: "too many commands", line: strings.Repeat("ping,", maxCommands) + "ping", lineErr: "line: 65 commands on one line, at most 64"},
		{name: "max commands", line: strings.Repeat("ping,", maxCommands-1) + "ping", cmds: func() []cmdWant {
			w := make([]cmdWant, maxCommands)
			for i := range w {
				w[i] = cmdWant{name: "ping"}
			}
			return w
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := parseLine([]byte(tt.line))
			if tt.lineErr != "" {
				require.Error(t, err)
				var le *lineError
				require.ErrorAs(t, err, &le)
				assert.Contains(t, le.Error(), tt.lineErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.token, req.token)
			assert.Equal(t, tt.token != "", req.hasToken)
			require.Len(t, req.cmds, len(tt.cmds))
			valid := true
			for i, w := range tt.cmds {
				c := req.cmds[i]
				assert.Equal(t, w.name, c.name, "command %d", i)
				if w.err == "" {
					assert.NoError(t, c.err, "command %d", i)
					require.NotNil(t, c.spec)
					assert.Equal(t, w.delay, c.delay, "command %d", i)
				} else {
					valid = false
					assert.ErrorContains(t, c.err, w.err, "command %d", i)
				}
			}
			assert.Equal(t, valid, req.valid())
		})
	}
}

func TestNeedsSlot(t *testing.T) {
	for line, want := range map[string]bool{
		"ping":               false,
		"help,ping":          false,
		"ping,exit_rtdriver": false,
		"ping,status":        true,
		"start":              true,
		"fgc":                true,
	} {
		req, err := parseLine([]byte(line))
		require.NoError(t, err)
		assert.Equal(t, want, req.needsSlot(), line)
	}
}

func TestHelpTextListsEveryCommand(t *testing.T) {
	h := helpText()
	for _, s := range specs {
		assert.Contains(t, h, s.usage)
	}
	assert.NotContains(t, h, "\n")
}
