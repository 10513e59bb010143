package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
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
	// socketBase is where the agents' sockets are looked for; empty
	// means control.SocketBase.
	socketBase string
	// uid is the caller's effective uid, whose JVMs are looked for (every
	// user's when 0); negative means os.Geteuid().
	uid int
}

// options are the parsed command line.
type options struct {
	cmd   string
	delay time.Duration
	host  string
	// portSpec is -p as given: a port, or with -b a range lo-hi.
	portSpec string
	// port, or the range firstPort..lastPort, is the TCP to use; 0: none.
	port, firstPort, lastPort int
	pid                       int
	// socket: -s, the path of an agent's socket.
	socket string
	all    bool
	// list: -l, list the JVMs the caller may control.
	list    bool
	token   string
	timeout time.Duration
	version bool
	// help: "rtdriver help" (or -h) asks for the usage and the command
	// list.
	help bool
}

const usageText = `usage: rtdriver [-c cmd[,cmd...] [sec]] [-pid pid | -s socket | -p port [-a host] | -b [-p lo-hi]] [-t token] [-timeout d]
       rtdriver -l
       rtdriver help | -h | --help
       rtdriver version | --version

Drives a running libjprof agent through its control socket.
With -c, sends the command line once, after sec seconds when given, prints
the replies and exits. Without -c, reads command lines from stdin and prints
the replies; "help" lists the commands, "quit" leaves.

Which JVM: -pid N reaches the agent of the JVM of pid N through its UNIX
socket, /tmp/.libjprof-<uid>/<pid>.sock (for a JVM in a container, the one
under /proc/N/root/tmp, named by its PID there). Without -pid, -p or -b,
rtdriver looks for your own JVMs' sockets (every user's when run as root)
and uses the one it finds; with several it lists them and asks for -pid.
-b sends to every one of them, and also to the TCP ports of -p lo-hi.
-p reaches an agent started with PORT= over TCP. Only the JVM's owner or
root may control it, on every channel.

Exit status: 0 every reply OK, 1 the agent answered ERR, 2 the agent is
unreachable, the connection failed, several JVMs could be meant, or the
usage is wrong.

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
	fs.IntVar(&o.pid, "pid", 0, "the `pid` of the JVM to control, through its UNIX socket")
	fs.StringVar(&o.socket, "s", "", "the agent's UNIX socket at `path`, when it is not where rtdriver looks (a container's /tmp mounted elsewhere, say)")
	fs.StringVar(&o.portSpec, "p", "", "TCP `port` of an agent started with PORT=; with -b a range lo-hi (8888-8895) to try as well")
	fs.BoolVar(&o.all, "b", false, "send to every JVM of yours that answers (every user's for root)")
	fs.BoolVar(&o.list, "l", false, "list the JVMs you may control: pid, uid, main class, socket")
	fs.StringVar(&o.host, "a", control.DefaultHost, "agent `host` for -p")
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
	case o.pid != 0 && (o.all || o.portSpec != ""):
		return o, errors.New("-pid names one JVM: it excludes -p and -b")
	case o.socket != "" && (o.pid != 0 || o.all || o.portSpec != ""):
		return o, errors.New("-s names one JVM: it excludes -pid, -p and -b")
	case o.pid < 0:
		return o, fmt.Errorf("-pid %d: not a pid", o.pid)
	case o.list && (o.cmd != "" || o.pid != 0 || o.all || o.portSpec != "" || o.socket != ""):
		return o, errors.New("-l lists the JVMs you may control: it takes no -c, -pid, -s, -p or -b")
	case o.host != control.DefaultHost && o.portSpec == "":
		return o, fmt.Errorf("-a %s: the host of a TCP port, which -p gives", o.host)
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
	if err := o.parsePort(); err != nil {
		return o, err
	}
	if o.token == "" && e.getenv != nil {
		o.token = e.getenv(tokenEnv)
	}
	return o, nil
}

// parsePort reads -p: one port, or with -b a range lo-hi.
func (o *options) parsePort() error {
	if o.portSpec == "" {
		return nil
	}
	port := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("-p %s: not a port", o.portSpec)
		}
		return n, nil
	}
	lo, hi, isRange := strings.Cut(o.portSpec, "-")
	if !isRange {
		n, err := port(lo)
		if o.all {
			o.firstPort, o.lastPort = n, n
		} else {
			o.port = n
		}
		return err
	}
	if !o.all {
		return fmt.Errorf("-p %s: a range of ports is for -b; give one port", o.portSpec)
	}
	var err error
	if o.firstPort, err = port(lo); err != nil {
		return err
	}
	if o.lastPort, err = port(hi); err != nil {
		return err
	}
	if o.firstPort > o.lastPort || o.lastPort-o.firstPort > 1024 {
		return fmt.Errorf("-p %s: want lo-hi, at most 1024 ports", o.portSpec)
	}
	return nil
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

	if e.socketBase == "" {
		e.socketBase = control.SocketBase
	}
	if e.uid < 0 {
		e.uid = os.Geteuid()
	}
	d := &driver{opts: o, env: e, prefix: o.all}
	defer d.close()
	if o.list {
		return d.listMine(ctx)
	}
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
	// labels name the clients' agents, in the same order.
	labels []string
	// prefix: label replies with the agent's address (-b), since several
	// agents answer the same line.
	prefix bool
}

// connect dials the agent: the one of -pid, of -p, the caller's only
// JVM, or with -b every agent that answers. It reports whether there is
// at least one connection.
func (d *driver) connect(ctx context.Context) bool {
	switch {
	case d.opts.pid != 0:
		c, err := d.dialPID(ctx, d.opts.pid)
		if err != nil {
			fmt.Fprintln(d.env.stderr, err)
			return false
		}
		d.add(c, fmt.Sprintf("pid %d", d.opts.pid))
		return true
	case d.opts.socket != "":
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := control.DialSocket(dctx, d.opts.socket, d.opts.token)
		cancel()
		if err != nil {
			fmt.Fprintln(d.env.stderr, err)
			return false
		}
		d.add(c, d.opts.socket)
		return true
	case d.opts.port != 0:
		return d.dialPorts(ctx, []int{d.opts.port})
	}
	mine, err := d.findMine(ctx)
	if err != nil {
		fmt.Fprintln(d.env.stderr, err)
		return false
	}
	if d.opts.all {
		for _, j := range mine {
			d.add(j.client, fmt.Sprintf("pid %d", j.agent.PID))
		}
		if d.opts.firstPort != 0 {
			var ports []int
			for p := d.opts.firstPort; p <= d.opts.lastPort; p++ {
				ports = append(ports, p)
			}
			d.dialPorts(ctx, ports)
		}
		if len(d.clients) == 0 {
			fmt.Fprintf(d.env.stderr, "rtdriver: no agent answers: %s\n", d.whereLooked())
		}
		return len(d.clients) > 0
	}
	switch len(mine) {
	case 0:
		fmt.Fprintf(d.env.stderr, "rtdriver: no JVM to control: %s; a JVM started with PORT= only is reached with -p port\n", d.whereLooked())
		return false
	case 1:
		d.add(mine[0].client, fmt.Sprintf("pid %d", mine[0].agent.PID))
		return true
	}
	for _, j := range mine {
		j.client.Close()
	}
	fmt.Fprintf(d.env.stderr, "rtdriver: %d JVMs could be meant; say which with -pid (or -b for all):\n", len(mine))
	listJVMs(d.env.stderr, mine)
	return false
}

// whereLooked says where the JVMs' sockets were looked for.
func (d *driver) whereLooked() string {
	where := fmt.Sprintf("no socket of a JVM of uid %d answers in %s", d.env.uid, control.SocketDir(d.env.socketBase, d.env.uid))
	if d.env.uid == 0 {
		where = fmt.Sprintf("no socket answers in %s (every user's, as root)", filepath.Join(d.env.socketBase, ".libjprof-*"))
	}
	if d.opts.firstPort != 0 {
		where += fmt.Sprintf(", nor a TCP port %d-%d on %s", d.opts.firstPort, d.opts.lastPort, d.opts.host)
	}
	return where
}

// listMine prints the JVMs the caller may control (-l).
func (d *driver) listMine(ctx context.Context) int {
	mine, err := d.findMine(ctx)
	if err != nil {
		fmt.Fprintln(d.env.stderr, err)
		return exitFault
	}
	for _, j := range mine {
		j.client.Close()
	}
	if len(mine) == 0 {
		fmt.Fprintf(d.env.stderr, "rtdriver: %s\n", d.whereLooked())
		return exitOK
	}
	listJVMs(d.env.stdout, mine)
	return exitOK
}

// dialPorts dials the agents on TCP ports. With -b a port without an
// agent is normal and said only when no agent at all answers.
func (d *driver) dialPorts(ctx context.Context, ports []int) bool {
	n := len(d.clients)
	for _, p := range ports {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := control.Dial(dctx, net.JoinHostPort(d.opts.host, strconv.Itoa(p)), d.opts.token)
		cancel()
		if err != nil {
			if !d.opts.all {
				fmt.Fprintln(d.env.stderr, err)
				if errors.Is(err, syscall.ECONNREFUSED) {
					fmt.Fprintf(d.env.stderr, "rtdriver: no agent on port %d: an agent listens on TCP only with PORT=, and its libjprof line on stderr names it (rtdriver=...+HOST:PORT); without -p rtdriver finds your JVMs by their UNIX sockets\n", p)
				}
			}
			continue
		}
		d.add(c, c.RemoteAddr().String())
	}
	return len(d.clients) > n
}

// add keeps a connection, labelled for -b's replies.
func (d *driver) add(c *control.Client, label string) {
	d.clients = append(d.clients, c)
	d.labels = append(d.labels, label)
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
	kept, keptLabels := d.clients[:0], d.labels[:0]
	for i, c := range d.clients {
		label := d.labels[i]
		st, keep := d.sendOne(ctx, c, label, line)
		status = max(status, st)
		if keep {
			kept, keptLabels = append(kept, c), append(keptLabels, label)
		} else {
			c.Close()
		}
	}
	clear(d.clients[len(kept):])
	d.clients, d.labels = kept, keptLabels
	return status
}

func (d *driver) sendOne(ctx context.Context, c *control.Client, name, line string) (status int, keep bool) {
	if d.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opts.timeout)
		defer cancel()
	}
	label := ""
	if d.prefix {
		label = name + ": "
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
  heap            write the JVM's class histogram (log-heap.N_<pid>)
  heapdump        write an HPROF dump of the live objects
  detach          stop collecting and take the event source out of the
                  program (BCI's classes get their bytes back); start again
  shutdown        detach, then stop profiling and close the agent's
                  control socket for good (restart the JVM to profile it)
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
