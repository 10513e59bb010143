package control

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// argMode says whether a command takes "=value".
type argMode int

const (
	argNone argMode = iota
	argOptional
	argRequired // a string, kept as given (roots=)
	argWord     // optional, one of cmdSpec.words (flush=interval)
)

// cmdSpec describes one command of the protocol.
type cmdSpec struct {
	name  string
	usage string
	arg   argMode
	words []string // the values an argWord command takes
	// ctl: the command calls the Controller, so it runs in the execution
	// slot; ping and help never wait behind a slow flush.
	ctl bool
	// last: the command ends its connection or the server, so anything
	// after it on the line could never run; refusing such lines up front
	// keeps "one reply per command" honest.
	last bool
	// quiet: logged at debug level, because monitoring loops poll these
	// and would otherwise flood log-msg.
	quiet bool
}

// Command names, also the names used in replies.
const (
	cmdStart    = "start"
	cmdFlush    = "flush"
	cmdReset    = "reset"
	cmdEnd      = "end"
	cmdStatus   = "status"
	cmdPing     = "ping"
	cmdFGC      = "fgc"
	cmdShutdown = "shutdown"
	cmdExit     = "exit_rtdriver"
	cmdHelp     = "help"
	cmdRoots    = "roots"
	cmdDetach   = "detach"
	cmdHeap     = "heap"
	cmdHeapDump = "heapdump"

	tokenKey = "token"

	// flushInterval (flush=interval) writes only what happened since the
	// previous interval flush, and starts the next interval.
	flushInterval = "interval"
)

// specs is the command table; it is never modified.
var specs = [...]cmdSpec{
	{name: cmdStart, usage: "start[=sec]", arg: argOptional, ctl: true},
	{name: cmdFlush, usage: "flush[=interval]", arg: argWord, words: []string{flushInterval}, ctl: true},
	{name: cmdReset, usage: "reset", ctl: true},
	{name: cmdEnd, usage: "end", ctl: true},
	{name: cmdStatus, usage: "status", ctl: true, quiet: true},
	{name: cmdPing, usage: "ping", quiet: true},
	{name: cmdFGC, usage: "fgc", ctl: true},
	{name: cmdRoots, usage: "roots=<Class.method+...|all>", arg: argRequired, ctl: true},
	{name: cmdDetach, usage: "detach", ctl: true},
	{name: cmdHeap, usage: "heap", ctl: true},
	{name: cmdHeapDump, usage: "heapdump", ctl: true},
	{name: cmdShutdown, usage: "shutdown", ctl: true, last: true},
	{name: cmdExit, usage: "exit_rtdriver", last: true, quiet: true},
	{name: cmdHelp, usage: "help", quiet: true},
}

const (
	// maxCommands bounds the replies one line can ask for.
	maxCommands = 64
	// maxDelay bounds start=N: a typo such as start=36000000 should be an
	// error, not a start that never comes.
	maxDelay = 24 * time.Hour
	// maxNameLen bounds what a reply echoes back of an unknown name.
	maxNameLen = 32
)

func lookup(name string) *cmdSpec {
	for i := range specs {
		if specs[i].name == name {
			return &specs[i]
		}
	}
	return nil
}

// helpText is the detail of the help reply.
func helpText() string {
	var b strings.Builder
	for i := range specs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(specs[i].usage)
	}
	b.WriteString(" | chain with commas; start with token=<T>, when the agent has a token")
	return b.String()
}

// command is one parsed element of a line.
type command struct {
	spec  *cmdSpec // nil when the name is unknown or malformed
	name  string   // name for the reply: canonical, or "?" when unprintable as a name
	delay time.Duration
	arg   string // the argument of a command that takes a string
	err   error  // why this command is invalid; nil when valid
}

// request is one parsed line.
type request struct {
	token    string
	hasToken bool
	cmds     []command
}

// valid reports whether every command of the line is valid; only then may
// any of it run.
func (r *request) valid() bool {
	for i := range r.cmds {
		if r.cmds[i].err != nil {
			return false
		}
	}
	return true
}

// needsSlot reports whether the line calls the Controller.
func (r *request) needsSlot() bool {
	for i := range r.cmds {
		if r.cmds[i].spec != nil && r.cmds[i].spec.ctl {
			return true
		}
	}
	return false
}

// lineError is a problem with a line as a whole (or with the connection);
// it is answered with a single reply named by kind.
type lineError struct {
	kind   string // replyLine, replyAuth, replyBusy
	reason string
}

func (e *lineError) Error() string { return e.kind + ": " + e.reason }

func lineErrorf(kind, format string, args ...any) *lineError {
	return &lineError{kind: kind, reason: fmt.Sprintf(format, args...)}
}

// parseLine parses one line without its line terminator. It returns a
// *lineError for problems that make the line unreadable as commands; errors
// of single commands are recorded in the returned commands, so that each can
// be answered. A blank line yields a request without commands.
func parseLine(line []byte) (request, error) {
	for i, b := range line {
		if b != '\t' && (b < 0x20 || b > 0x7e) {
			return request{}, lineErrorf(replyLine, "non-printable byte 0x%02x at column %d", b, i+1)
		}
	}
	s := strings.TrimSpace(string(line))
	if s == "" {
		return request{}, nil
	}
	parts := strings.Split(s, ",")
	var req request
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return request{}, lineErrorf(replyLine, "empty command at position %d", i+1)
		}
		if i == 0 {
			if key, val, ok := strings.Cut(p, "="); ok && strings.EqualFold(strings.TrimSpace(key), tokenKey) {
				req.token, req.hasToken = strings.TrimSpace(val), true
				continue
			}
		}
		req.cmds = append(req.cmds, parseCommand(p))
	}
	switch {
	case len(req.cmds) == 0:
		return request{}, lineErrorf(replyLine, "no command after the token")
	case len(req.cmds) > maxCommands:
		return request{}, lineErrorf(replyLine, "%d commands on one line, at most %d", len(req.cmds), maxCommands)
	}
	for i := range req.cmds {
		c := &req.cmds[i]
		if c.err == nil && c.spec.last && i != len(req.cmds)-1 {
			c.err = fmt.Errorf("must be the last command on its line")
		}
	}
	return req, nil
}

// parseCommand parses one "name[=arg]" element, already trimmed.
func parseCommand(p string) command {
	name, arg, hasArg := strings.Cut(p, "=")
	name = strings.ToLower(strings.TrimSpace(name))
	arg = strings.TrimSpace(arg)
	if !isName(name) {
		return command{name: "?", err: fmt.Errorf("malformed command %q", clip(p, maxNameLen))}
	}
	if name == tokenKey {
		return command{name: name, err: fmt.Errorf("the token must come first on the line")}
	}
	spec := lookup(name)
	if spec == nil {
		return command{name: name, err: fmt.Errorf("unknown command (try help)")}
	}
	c := command{spec: spec, name: spec.name}
	switch {
	case !hasArg && spec.arg == argRequired:
		c.err = fmt.Errorf("needs an argument: %s", spec.usage)
	case !hasArg:
	case spec.arg == argNone:
		c.err = fmt.Errorf("takes no argument")
	case arg == "":
		c.err = fmt.Errorf("empty argument after =")
	case spec.arg == argRequired:
		c.arg = arg
	case spec.arg == argWord:
		c.arg = strings.ToLower(arg)
		if !slices.Contains(spec.words, c.arg) {
			c.err = fmt.Errorf("bad argument %q: want %s", clip(arg, maxNameLen), spec.usage)
		}
	default:
		c.delay, c.err = parseDelay(arg)
	}
	return c
}

// parseDelay parses the N of start=N: whole seconds as in JProf, or a Go
// duration for finer control.
func parseDelay(s string) (time.Duration, error) {
	s = strings.ToLower(s)
	var d time.Duration
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n > uint64(maxDelay/time.Second) {
			return 0, fmt.Errorf("delay %ds longer than %v", n, maxDelay)
		}
		d = time.Duration(n) * time.Second
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("bad delay %q: want seconds or a duration such as 500ms", clip(s, maxNameLen))
		}
	}
	if d < 0 || d > maxDelay {
		return 0, fmt.Errorf("delay %v out of range 0..%v", d, maxDelay)
	}
	return d, nil
}

// isName reports whether s can be a command name and so be echoed in a
// reply without breaking the reply grammar.
func isName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if (b < 'a' || b > 'z') && (b < '0' || b > '9') && b != '_' && b != '-' {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
