package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/buildinfo"
)

// Exit statuses.
const (
	exitOK    = 0 // every reply OK
	exitERR   = 1 // the agent answered ERR
	exitFault = 2 // agent unreachable, connection lost, or usage error
)

const (
	tokenEnv       = "RTDRIVER_TOKEN"
	defaultTimeout = time.Minute
	// dialTimeout bounds each connection attempt; loopback answers at once.
	dialTimeout = 2 * time.Second
)

// env is what run needs from the process; tests provide their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// prompt: stdin is a terminal, so interactive mode prints a prompt.
	prompt bool
	// ports is what -b scans; nil means 8888-8895.
	ports []int
}

// options are the parsed command line.
type options struct {
	cmd     string
	delay   time.Duration
	host    string
	port    int
	all     bool
	token   string
	timeout time.Duration
	version bool
	// help: "rtdriver help" (or -h) asks for the usage and the command
	// list.
	help bool
}

const usageText = `usage: rtdriver [-c cmd[,cmd...] [sec]] [-p port | -b] [-a host] [-t token] [-timeout d]
       rtdriver help | -h | --help
       rtdriver version | --version

Drives a running libjprof agent through its rtdriver socket.
With -c, sends the command line once, after sec seconds when given, prints
the replies and exits. Without -c, reads command lines from stdin and prints
the replies; "help" lists the commands, "quit" leaves.

Exit status: 0 every reply OK, 1 the agent answered ERR, 2 the agent is
unreachable, the connection failed, or the usage is wrong.

Flags take one dash or two (-p and --p are the same); a value follows its
flag or an '=' (-p 8889, -p=8889).

Flags:
`

// usage is the text of rtdriver -h: the usage, the flags and the agent's
// commands.
func usage() string {
	var b strings.Builder
	b.WriteString(usageText)
	fs := newFlagSet(&options{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	b.WriteString("\nThe agent's commands (case-insensitive), for -c or one line each on stdin:\n")
	for _, l := range strings.Split(interactiveHelp, "\n")[1:] {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// newFlagSet is rtdriver's flags, parsed into o.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("rtdriver", flag.ContinueOnError)
	// Errors are printed by run, the usage only on request.
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.cmd, "c", "", "send this command `line` once instead of reading stdin")
	fs.IntVar(&o.port, "p", 0, "agent `port` (default 8888)")
	fs.BoolVar(&o.all, "b", false, "send to every port of 8888-8895 that answers")
	fs.StringVar(&o.host, "a", control.DefaultHost, "agent `host`")
	fs.StringVar(&o.host, "host", control.DefaultHost, "same as -a")
	fs.StringVar(&o.token, "t", "", "`token` the agent requires (default $"+tokenEnv+")")
	fs.DurationVar(&o.timeout, "timeout", defaultTimeout, "wait at most `d` for the replies to a line (0: forever)")
	fs.BoolVar(&o.version, "version", false, "print the version and commit of this build")
	return fs
}

// parseArgs parses args. Flags may follow the positional delay, as in
// "rtdriver -c flush 10 -p 8889".
func parseArgs(args []string, e env) (options, error) {
	var o options
	fs := newFlagSet(&o)
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				o.help = true
				return o, nil
			}
			return o, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		pos, rest = append(pos, rest[0]), rest[1:]
	}

	if len(pos) == 1 && o.cmd == "" {
		switch strings.ToLower(pos[0]) {
		case "help":
			o.help = true
			return o, nil
		case "version":
			o.version = true
			return o, nil
		}
	}
	switch {
	case len(pos) > 1 || (len(pos) == 1 && o.cmd == ""):
		return o, fmt.Errorf("unexpected argument %q (a delay in seconds may follow -c cmd)", pos[len(pos)-1])
	case o.all && o.port != 0:
		return o, errors.New("-p and -b exclude each other")
	case o.port < 0 || o.port > 65535:
		return o, fmt.Errorf("-p %d: not a port", o.port)
	case o.timeout < 0:
		return o, fmt.Errorf("-timeout %v: negative", o.timeout)
	case strings.ContainsAny(o.cmd, "\r\n"):
		return o, errors.New("-c: the command line contains a line break")
	}
	if len(pos) == 1 {
		d, err := parseDelay(pos[0])
		if err != nil {
			return o, err
		}
		o.delay = d
	}
	if o.port == 0 {
		o.port = control.DefaultFirstPort
	}
	if o.token == "" && e.getenv != nil {
		o.token = e.getenv(tokenEnv)
	}
	return o, nil
}

// parseDelay parses the optional delay after -c: whole seconds, as in
// JProf, or a Go duration.
func parseDelay(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("delay %q: want seconds", s)
	}
	return d, nil
}

// run is rtdriver without the process around it; it returns the exit status.
func run(ctx context.Context, args []string, e env) int {
	o, err := parseArgs(args, e)
	switch {
	case err != nil:
		fmt.Fprintf(e.stderr, "rtdriver: %v\n(rtdriver -h for the usage)\n", err)
		return exitFault
	case o.help:
		fmt.Fprint(e.stdout, usage())
		return exitOK
	case o.version:
		fmt.Fprint(e.stdout, buildinfo.String("rtdriver"))
		return exitOK
	}

	if o.delay > 0 {
		t := time.NewTimer(o.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			fmt.Fprintln(e.stderr, "rtdriver:", ctx.Err())
			return exitFault
		}
	}

	d := &driver{opts: o, env: e, prefix: o.all}
	defer d.close()
	if !d.connect(ctx) {
		return exitFault
	}
	if o.cmd != "" {
		return d.send(ctx, o.cmd)
	}
	return d.interactive(ctx)
}

// driver holds the connections of one rtdriver run.
type driver struct {
	opts    options
	env     env
	clients []*control.Client
	// prefix: label replies with the agent's address (-b), since several
	// agents answer the same line.
	prefix bool
}

// connect dials the agent, or with -b every agent that answers. It reports
// whether there is at least one connection.
func (d *driver) connect(ctx context.Context) bool {
	ports := []int{d.opts.port}
	if d.opts.all {
		ports = d.env.ports
		if ports == nil {
			for p := control.DefaultFirstPort; p <= control.DefaultLastPort; p++ {
				ports = append(ports, p)
			}
		}
	}
	var lastErr error
	for _, p := range ports {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := control.Dial(dctx, net.JoinHostPort(d.opts.host, strconv.Itoa(p)), d.opts.token)
		cancel()
		if err != nil {
			// With -b a port without an agent is normal; say so only
			// when no agent at all answers.
			lastErr = err
			if !d.opts.all {
				fmt.Fprintln(d.env.stderr, err)
				if errors.Is(err, syscall.ECONNREFUSED) {
					// The agent takes the first free port of 8888-8895
					// unless PORT= says otherwise, and says which.
					fmt.Fprintf(d.env.stderr, "rtdriver: no agent on port %d: the JVM's libjprof line on stderr names its port (rtdriver=HOST:PORT); -b tries every port %d-%d\n",
						p, control.DefaultFirstPort, control.DefaultLastPort)
				}
			}
			continue
		}
		d.clients = append(d.clients, c)
	}
	if len(d.clients) == 0 && d.opts.all {
		fmt.Fprintf(d.env.stderr, "rtdriver: no agent answers on %s ports %d-%d (last error: %v)\n",
			d.opts.host, ports[0], ports[len(ports)-1], lastErr)
	}
	return len(d.clients) > 0
}

func (d *driver) close() {
	for _, c := range d.clients {
		c.Close()
	}
	d.clients = nil
}

// send sends one line to every connected agent, prints the replies and
// returns the exit status for them. Agents whose connection failed or
// ended (exit_rtdriver, shutdown) are dropped.
func (d *driver) send(ctx context.Context, line string) int {
	status := exitOK
	kept := d.clients[:0]
	for _, c := range d.clients {
		st, keep := d.sendOne(ctx, c, line)
		status = max(status, st)
		if keep {
			kept = append(kept, c)
		} else {
			c.Close()
		}
	}
	clear(d.clients[len(kept):])
	d.clients = kept
	return status
}

func (d *driver) sendOne(ctx context.Context, c *control.Client, line string) (status int, keep bool) {
	if d.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opts.timeout)
		defer cancel()
	}
	label := ""
	if d.prefix {
		label = c.RemoteAddr().String() + ": "
	}
	replies, err := c.Do(ctx, line)
	status, keep = exitOK, true
	for _, r := range replies {
		fmt.Fprintf(d.env.stdout, "%s%s\n", label, r)
		if !r.OK {
			status = exitERR
		}
	}
	if err != nil {
		fmt.Fprintf(d.env.stderr, "%s%v\n", label, err)
		return exitFault, false
	}
	if n := len(replies); n > 0 {
		last := replies[n-1]
		switch {
		case last.OK && (last.Cmd == "exit_rtdriver" || last.Cmd == "shutdown"):
			// The agent closes this connection now.
			keep = false
		case !last.OK && (last.Cmd == "auth" || last.Cmd == "busy"):
			keep = false
		}
	}
	return status, keep
}

const interactiveHelp = `Type a command line and press enter; replies follow.
  start[=sec]     start collecting, now or after sec seconds
  flush           write the next log-rt file
  flush=interval  write one with only what happened since the previous
                  interval flush, and start the next interval
  reset           discard the data collected so far
  end             stop + flush + reset
  status          agent state
  ping            is the agent there?
  fgc             force a garbage collection
  roots=C.m+...   collect under these root methods from now on (ROOTS;
                  roots=all: every method, with BCI)
  shutdown        stop profiling and the agent's control socket
  exit_rtdriver   close this connection
  help            this text; quit leaves
Chain commands with commas: start,flush`

// interactive reads command lines from stdin until EOF, quit, or no agent
// is left. It returns the worst status of all replies.
func (d *driver) interactive(ctx context.Context) int {
	sc := bufio.NewScanner(d.env.stdin)
	status := exitOK
	for len(d.clients) > 0 {
		if d.env.prompt {
			fmt.Fprint(d.env.stdout, "rtdriver> ")
		}
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				fmt.Fprintln(d.env.stderr, "rtdriver: read stdin:", err)
				return exitFault
			}
			if d.env.prompt {
				fmt.Fprintln(d.env.stdout)
			}
			return status
		}
		line := strings.TrimSpace(sc.Text())
		switch strings.ToLower(line) {
		case "":
			continue
		case "quit", "q", "exit":
			return status
		case "help", "?":
			fmt.Fprintln(d.env.stdout, interactiveHelp)
			continue
		}
		status = max(status, d.send(ctx, line))
	}
	return status
}
