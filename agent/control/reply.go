package control

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names of replies that stand for a whole line or connection rather than a
// command. None of them is a command name.
const (
	replyLine = "line"
	replyAuth = "auth"
	replyBusy = "busy"
)

// maxDetail bounds the detail of a reply, so that a Controller returning a
// huge status cannot make one reply unbounded.
const maxDetail = 2048

// Reply is one reply line: "OK <cmd>[: <detail>]" or "ERR <cmd>: <reason>".
type Reply struct {
	OK     bool
	Cmd    string // command name, or line, auth, busy for line-level replies
	Detail string // detail of an OK, reason of an ERR; may be empty
}

// String formats r as a reply line without the line terminator.
func (r Reply) String() string {
	var b strings.Builder
	if r.OK {
		b.WriteString("OK ")
	} else {
		b.WriteString("ERR ")
	}
	b.WriteString(r.Cmd)
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(r.Detail)
	}
	return b.String()
}

// LineLevel reports whether r answers a whole line (or the connection)
// rather than one command: after such a reply no more replies follow for
// that line.
func (r Reply) LineLevel() bool {
	if r.OK {
		return false
	}
	switch r.Cmd {
	case replyLine, replyAuth, replyBusy:
		return true
	}
	return false
}

// errNotReply is wrapped by ParseReply's errors.
var errNotReply = errors.New("not an rtdriver reply")

// ParseReply parses one reply line, with or without its terminator.
func ParseReply(line string) (Reply, error) {
	line = strings.TrimRight(line, "\r\n")
	var r Reply
	var rest string
	switch {
	case strings.HasPrefix(line, "OK "):
		r.OK, rest = true, line[len("OK "):]
	case strings.HasPrefix(line, "ERR "):
		rest = line[len("ERR "):]
	default:
		return Reply{}, fmt.Errorf("%w: %q", errNotReply, clip(line, 64))
	}
	cmd, detail, _ := strings.Cut(rest, ": ")
	if cmd == "" {
		return Reply{}, fmt.Errorf("%w: no command name in %q", errNotReply, clip(line, 64))
	}
	r.Cmd, r.Detail = cmd, detail
	return r, nil
}

func okReply(cmd, detail string) Reply { return Reply{OK: true, Cmd: cmd, Detail: oneLine(detail)} }

func errReply(cmd string, err error) Reply { return Reply{Cmd: cmd, Detail: oneLine(err.Error())} }

// oneLine makes s safe to put in a reply: control characters (line breaks
// above all, which would desynchronise the client) become spaces, invalid
// UTF-8 becomes '?', and the result is bounded.
func oneLine(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f {
			clean = false
			break
		}
	}
	if !clean {
		s = strings.Map(func(r rune) rune {
			switch {
			case r == utf8.RuneError:
				return '?'
			case unicode.IsControl(r):
				return ' '
			}
			return r
		}, s)
	}
	if len(s) > maxDetail {
		// Cut on a rune boundary so the reply stays valid UTF-8.
		n := maxDetail
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "..."
	}
	return s
}
