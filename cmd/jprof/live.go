package main

// The commands that profile a running JVM: list, profile, start, stop,
// status, flush. They reach the JVM's agent through its control socket
// (the one rtdriver uses), loading libjprof into the JVM first through
// the JDK's attach protocol (package attach) when it has no agent yet.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
)

// events maps jprof's -e to the agent's options and its source's name
// (as the agent's status says it).
// kind is what the agent's status says of it besides the source: its
// sample= kind, or its mode=.
var events = []struct {
	name, opts, source, kind, about string
}{
	{"cpu", "SAMPLE=cpu", "asgct-sampling", "sample=cpu", "CPU time, sampled every millisecond of each thread's CPU (cheap: for services in production)"},
	{"wall", "SAMPLE=wall", "asgct-sampling", "sample=wall", "wall-clock time, sampled, running or not (where threads wait)"},
	{"bci", "BCI,RTARCF", "bci", "mode=RTARCF", "exact calls and calibrated per-method times from bytecode instrumentation (slows\n       call-heavy code several times, tiny recursive methods far more: BENCHMARKS.md)"},
	{"calls", "BCI,CALLTREE", "bci", "mode=CALLTREE", "exact calls only, from bytecode instrumentation (cheaper than bci)"},
	{"jlm", "BCI,CALLTREE,JLM", "bci", "jlm=on", "exact counts of every monitor instrumented code takes, per site and class: takes,\n       recursive and contended ones, hold and wait times (JProf's JLM), with the exact calls"},
	{"lock", "LOCK", "lock-events", "mode=LOCK", "time threads wait entering contended monitors (synchronized), in Object.wait and\n       parked by java.util.concurrent, per calling context, the lock's class as the leaf"},
	{"alloc", "ALLOC", "alloc-sampling", "mode=ALLOC", "allocations, sampled about every 512 KiB a thread allocates: bytes and objects\n       per calling context, the allocated class as the leaf"},
}

func eventNames() string {
	var n []string
	for _, e := range events {
		n = append(n, e.name)
	}
	return strings.Join(n, "|")
}

func eventHelp() string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "%-6s %s\n", e.name, e.about)
	}
	return b.String()
}

// liveFlags are the flags the live commands share.
type liveFlags struct {
	event *string
	// eventSet: -e was given (without it, an agent loaded earlier
	// profiles what it was loaded for).
	eventSet bool
	out      *string
	lib      *string
	opts     *string
	timeout  *time.Duration
	// arg is the PID|MAIN, once the checks before the JVM is reached
	// have passed ("" until then).
	arg string
	// intr: the command's watch of Ctrl-C and SIGTERM, nil without one.
	intr *interrupts
}

func addLiveFlags(fs *flag.FlagSet, withEvent, withOut bool) liveFlags {
	var f liveFlags
	if withEvent {
		f.event = fs.String("e", "cpu", "what to profile: `EVENT` "+eventNames())
		f.lib = fs.String("lib", "", "libjprof.so to load (default: beside jprof, or $JPROF_AGENT)")
		f.opts = fs.String("opts", "", "more agent `OPTIONS`, comma-separated (as for -agentpath)")
	}
	if withOut {
		f.out = fs.String("o", "", "output `OUT`: .html (flame graph, the default: jprof-<pid>.html), .pb.gz (pprof),\n"+
			".collapsed or .txt (collapsed stacks), or a directory (the log-rt itself)")
	}
	f.timeout = fs.Duration("timeout", 30*time.Second, "longest `WAIT` for the JVM to answer")
	return f
}

func liveList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("list takes no arguments")
	}
	all, err := attach.List()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%8s %6s  %-9s %s\n", "PID", "UID", "AGENT", "MAIN")
	var unreachable []int
	noAttach := false
	for _, t := range all {
		agent := "-"
		switch {
		case agentAnswers(t.PID):
			agent = "libjprof"
		case agentMapped(t.PID):
			// Loaded with NORTDRIVER, shut down by rtdriver, its socket
			// directory another user's, or its socket's name taken (a
			// JVM of its PID in a PID namespace sharing /tmp): no
			// control socket to reach it by.
			agent = "libjprof*"
			unreachable = append(unreachable, t.PID)
		}
		main := t.MainClass
		if !t.SameMountNS {
			main += fmt.Sprintf(" (container, pid %d there)", t.NSPid)
		}
		if t.NoAttach && agent != "libjprof" {
			// Its agent, if it answers, needs no attach; a load does.
			main += " (no attach)"
			noAttach = true
		}
		fmt.Fprintf(stdout, "%8d %6d  %-9s %s\n", t.PID, t.UID, agent, main)
	}
	if len(unreachable) > 0 {
		fmt.Fprintf(stdout, "(*: libjprof loaded without a control socket (NORTDRIVER, rtdriver shutdown, a socket directory another user made, or another JVM of its PID in a PID namespace sharing /tmp has the socket's name; jprof status says which): jprof start/stop/flush and rtdriver cannot reach it)\n")
	}
	if noAttach {
		fmt.Fprintf(stdout, "(no attach: started with -XX:+DisableAttachMechanism, as its hsperfdata says: libjprof cannot be loaded into it, nor can jcmd reach it; start it without that option, or with -agentpath:libjprof.so)\n")
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(stdout, "(your JVMs only: other users' are not shown, and only root may profile them)\n")
	}
	return nil
}

// agentMapped says whether pid has a libjprof library mapped (its
// /proc/<pid>/maps names one), whether or not it listens for control.
func agentMapped(pid int) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.LastIndexByte(line, '/'); i >= 0 && strings.HasPrefix(line[i+1:], "libjprof") && strings.HasSuffix(line, ".so") {
			return true
		}
	}
	return false
}

// interrupts are Ctrl-C and SIGTERM, watched from a live command's start
// (a JVM's attach and the agent's load take a while): one that comes
// while the agent loads is kept for the command to act on once the load
// is over. Watching also takes SIGINT back from SIG_IGN, which a shell
// gives a command it starts in the background.
type interrupts struct {
	c    chan os.Signal
	done chan struct{} // closed at the first signal
	mu   sync.Mutex
	sig  os.Signal
}

func watchInterrupts() *interrupts {
	i := &interrupts{c: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(i.c, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range i.c {
			i.mu.Lock()
			if i.sig == nil {
				i.sig = s
				close(i.done)
			}
			i.mu.Unlock()
		}
	}()
	return i
}

// stop ends the watch: later signals do what they do by default.
func (i *interrupts) stop() { signal.Stop(i.c) }

// seen is the first signal received, nil if none (or no watch).
func (i *interrupts) seen() os.Signal {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.sig
}

// context is ctx, cancelled too at the first signal: for waits that may
// be given up (the JVM's attach listener), not for a request under way.
func (i *interrupts) context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if i != nil {
		stop := make(chan struct{})
		go func() {
			select {
			case <-i.done:
				cancel()
			case <-ctx.Done():
			case <-stop:
			}
		}()
		return ctx, func() { close(stop); cancel() }
	}
	return ctx, cancel
}

// interruptedError is a live command given up at a signal before it
// began to collect: nothing was written.
type interruptedError struct {
	sig   os.Signal
	pid   int
	when  string // when the signal came
	after string // what was done about it, "" if nothing needed doing
}

func (e *interruptedError) Error() string {
	msg := fmt.Sprintf("pid %d: %v %s: given up, nothing collected, nothing written", e.pid, e.sig, e.when)
	if e.after != "" {
		msg += "; " + e.after
	}
	return msg
}

// abandon gives up a live command at signal sig before collection began:
// an agent this command's load made is detached again, so that nothing
// of the command stays in the program (the agent itself stays loaded,
// idle, for the next command); one that was there before is left as it
// was, even when this command's load reached it (a detach would end a
// collection it had run since the JVM started, and take its
// instrumentation out of the program), and that is said.
func (lt *liveTarget) abandon(sig os.Signal, when string, timeout time.Duration) error {
	e := &interruptedError{sig: sig, pid: lt.t.PID, when: when}
	if lt.reached {
		e.after = "the agent was there before this command (its load only reached it): left as it was, not detached"
	}
	if lt.loaded {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if detail, err := lt.do(ctx, "detach"); err != nil {
			e.after = fmt.Sprintf("the agent this command loaded could not be detached: %v", err)
		} else {
			e.after = "the agent this command loaded was detached (" + detail + "); it stays loaded, idle, for the next command"
		}
	}
	return e
}

func liveProfile(args []string, stdout io.Writer) error {
	// Ctrl-C and SIGTERM: during the load, the profile is given up
	// once the load is over; during the profile, they end its wait
	// and the profile is still written.
	intr := watchInterrupts()
	defer intr.stop()
	var d *time.Duration
	lt, lf, err := openLiveWatched("profile", args, true, true, true, intr, func(fs *flag.FlagSet) func() error {
		d = fs.Duration("d", 30*time.Second, "profile for `DURATION` (0: until Ctrl-C)")
		return func() error {
			if *d < 0 {
				return usagef("-d %v: want 0 or more", *d)
			}
			return nil
		}
	})
	if err != nil {
		return err
	}
	stderr := warnings
	defer lt.close()
	cmdCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), *lf.timeout)
	}
	ctx, cancel := cmdCtx()
	st, err := checkEvent(ctx, lt, lf)
	cancel()
	if err != nil {
		return err
	}
	if statusField(st, "state") == "collecting" {
		return fmt.Errorf("pid %d's agent is collecting already (started by START or another command): jprof flush writes what it has, jprof stop ends it", lt.t.PID)
	}
	if s := intr.seen(); s != nil {
		return lt.abandon(s, "before collection started", *lf.timeout)
	}
	lt.logs = statusField(st, "logpath")
	ctx, cancel = cmdCtx()
	err = lt.applyRoots(ctx, stderr)
	cancel()
	if err != nil {
		return err
	}
	if s := intr.seen(); s != nil {
		return lt.abandon(s, "before collection started", *lf.timeout)
	}
	started := time.Now()
	ctx, cancel = cmdCtx()
	reply, err := lt.do(ctx, "start")
	cancel()
	if err != nil {
		return err
	}
	if strings.HasPrefix(reply, control.AlreadyCollecting) {
		// Another command started it between the status and this
		// start (two jprof profiles at once): its stop would end this
		// profile too, so this one stops here and leaves it be.
		return fmt.Errorf("pid %d: another command started collecting just now (the agent says %q): jprof flush writes what it has, jprof stop ends it", lt.t.PID, reply)
	}
	// The collection this profile started, to tell at its end whether
	// another command ended it meanwhile.
	ctx, cancel = cmdCtx()
	st, err = lt.do(ctx, "status")
	cancel()
	ours := ""
	if err == nil {
		ours = statusField(st, "since")
		lt.from = statusField(st, "interval-start")
		if lt.from == "" || lt.from == "-" {
			// An agent of a build before it said where its counts
			// begin: this collection's start, which such a
			// namespaced JVM's final log-rt may predate (finalLogRT).
			lt.from = ours
		}
	}
	until := "Ctrl-C"
	if *d > 0 {
		until = d.String() + " (Ctrl-C stops early)"
	}
	fmt.Fprintf(stderr, "jprof: profiling pid %d (%s), -e %s, for %s\n", lt.t.PID, lt.t.MainClass, *lf.event, until)
	var timer <-chan time.Time
	if *d > 0 {
		timer = time.After(*d)
	}
	gone := watchExit(lt.t.PID)
	select {
	case <-timer:
	case <-intr.done:
		fmt.Fprintf(stderr, "jprof: %v: stopping\n", intr.seen())
	case <-gone:
		return targetGone(lt, started, *lf.out, stdout, stderr)
	}
	ctx, cancel = cmdCtx()
	err = lt.takenByAnother(ctx, ours)
	cancel()
	if err != nil {
		return err
	}
	return stopAndWrite(lt, started, *lf.out, *lf.timeout, stdout, stderr)
}

// takenByAnother says, as an error, whether another command ended the
// collection this profile started at ours (its status's since=), "" when
// unknown.
func (lt *liveTarget) takenByAnother(ctx context.Context, ours string) error {
	st, err := lt.do(ctx, "status")
	if err != nil || ours == "" {
		return nil
	}
	switch {
	case statusField(st, "state") != "collecting":
		// That command wrote what there was; the agent still goes out of
		// the program's way (an rtdriver end does not detach), as at the
		// end of every profile.
		_, _ = lt.do(ctx, "detach")
		return fmt.Errorf("pid %d: another command (jprof stop, rtdriver end or detach) ended this profile's collection before its end: what was collected went to that command's output; nothing written here", lt.t.PID)
	case statusField(st, "since") != ours:
		// Ended, then started again by someone else: theirs to end.
		return fmt.Errorf("pid %d: another command ended this profile's collection and started one of its own (since %s): left to it; nothing written", lt.t.PID, statusField(st, "since"))
	}
	return nil
}

// stopAndWrite ends collection, takes the agent out of the program and
// writes the output.
func stopAndWrite(lt *liveTarget, since time.Time, out string, timeout time.Duration, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path, endErr := lt.do(ctx, "end")
	if endErr != nil && !processAlive(lt.t.PID) {
		return targetGone(lt, since, out, stdout, stderr)
	}
	detail, err := lt.do(ctx, "detach")
	// Nothing collected: said first, the detach after it, not the other
	// way round (which read as if collection had just been turned off).
	nothing := endErr == nil && !strings.HasPrefix(path, "/")
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "jprof: warning: %v\n", err)
	case !nothing:
		fmt.Fprintf(stderr, "jprof: detached: %s\n", detail)
	}
	if endErr != nil {
		return endErr
	}
	if nothing {
		if err == nil {
			return fmt.Errorf("%w; detached all the same: %s", nothingWritten(lt, path), detail)
		}
		return nothingWritten(lt, path)
	}
	return writeOutput(lt, path, out, stdout, stderr)
}

func liveStart(args []string, stdout io.Writer) error {
	// As for profile: a signal during the load gives the start up.
	intr := watchInterrupts()
	defer intr.stop()
	lt, lf, err := openLiveWatched("start", args, true, false, true, intr, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	defer lt.close()
	if _, err := checkEvent(ctx, lt, lf); err != nil {
		return err
	}
	if s := intr.seen(); s != nil {
		return lt.abandon(s, "before collection started", *lf.timeout)
	}
	if err := lt.applyRoots(ctx, warnings); err != nil {
		return err
	}
	if s := intr.seen(); s != nil {
		return lt.abandon(s, "before collection started", *lf.timeout)
	}
	detail, err := lt.do(ctx, "start")
	if err != nil {
		return err
	}
	if detail == "" {
		detail = "collecting"
	}
	fmt.Fprintf(stdout, "jprof: pid %d (%s): %s; jprof stop %d writes the profile\n", lt.t.PID, lt.t.MainClass, detail, lt.t.PID)
	return nil
}

func liveStop(args []string, stdout io.Writer) error {
	lt, lf, err := openLive("stop", args, false, true, false, nil)
	if err != nil {
		return afterExit(lf, "", err, stdout, warnings)
	}
	defer lt.close()
	return stopAndWrite(lt, time.Now(), *lf.out, *lf.timeout, stdout, warnings)
}

func liveFlush(args []string, stdout io.Writer) error {
	lt, lf, err := openLive("flush", args, false, true, false, nil)
	if err != nil {
		return afterExit(lf, "flush", err, stdout, warnings)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	defer lt.close()
	path, err := lt.do(ctx, "flush")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(path, "/") {
		return nothingWritten(lt, path)
	}
	out := *lf.out
	if out == "" {
		out = flushOut(lt.t.PID, path)
	}
	return writeOutput(lt, path, out, stdout, warnings)
}

// flushOut is a flush's default output for its log-rt: not
// jprof-<pid>.html, which the stop that ends the session writes, but one
// file per flush, numbered as its log-rt is.
func flushOut(pid int, logRT string) string {
	seq, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(logRT), "log-rt."), "_")
	return fmt.Sprintf("jprof-%d-%s.html", pid, seq)
}

func liveStatus(args []string, stdout io.Writer) error {
	lt, lf, err := openLive("status", args, false, false, false, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	defer lt.close()
	st, err := lt.do(ctx, "status")
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, st)
	return nil
}

// nothingWritten is the agent's answer when it had nothing to write (a
// reply that is not a file), in jprof's words: its "send start" is
// rtdriver's.
func nothingWritten(lt *liveTarget, reply string) error {
	reply = strings.ReplaceAll(reply, "(not collecting: send start)",
		"(not collecting: jprof start begins, or another command ended the profile)")
	return fmt.Errorf("pid %d: %s", lt.t.PID, reply)
}

// agentAnswers says whether the JVM of pid has an agent listening on its
// control socket: the socket's listener is that process (DialAgent checks
// it), not another JVM of its PID in a PID namespace sharing /tmp.
func agentAnswers(pid int) bool {
	for _, a := range control.AgentsOfPID(control.SocketBase, pid) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		c, err := control.DialAgent(ctx, a, "")
		cancel()
		if err == nil {
			c.Close()
			return true
		}
	}
	return false
}
