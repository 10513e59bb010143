package main

// Finding a running JVM and its agent for the live commands: by pid or
// main class, through its control socket, loading libjprof into it
// first (the attach protocol, with the agent's files staged where the
// JVM can read them) when it has none.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
	"github.com/libjprof/libjprof/internal/sourceopts"
)

// liveTarget is a JVM found from the command line, with its agent's
// control connection once there is one.
type liveTarget struct {
	t      *attach.Target
	client *control.Client
	logs   string // the agent's LOGPATH as the JVM sees it ("" until known)
	loaded bool   // this command's load made the agent
	// reached: this command's load reached an agent that was there
	// already (it had no control socket, and opened one).
	reached bool
	// roots: -opts ROOTS=... for an agent loaded already, sent (as
	// rtdriver roots=) once the command's checks have passed.
	roots string
	// saidPMU: the load's lines, printed, said the PMU fallback.
	saidPMU bool
	// from: where the counts of the agent's next log-rt began when this
	// command started collecting (the status's interval-start=; since=
	// from an agent that does not say it), "" if unknown: what tells a
	// namespaced JVM's final log-rt from another's of the same name
	// (finalLogRT).
	from string
}

// applyRoots sends -opts ROOTS=... to an agent loaded before, if given.
func (lt *liveTarget) applyRoots(ctx context.Context, stderr io.Writer) error {
	if lt.roots == "" {
		return nil
	}
	reply, err := lt.do(ctx, "roots="+lt.roots)
	if err != nil {
		return fmt.Errorf("pid %d: -opts ROOTS=%s: %w", lt.t.PID, lt.roots, err)
	}
	if reply == "" {
		reply = lt.roots
	}
	fmt.Fprintf(stderr, "jprof: roots changed: %s\n", reply)
	return nil
}

func (lt *liveTarget) close() {
	if lt.client != nil {
		lt.client.Close()
	}
}

// findTarget resolves a pid or a main class name.
func findTarget(arg string) (*attach.Target, error) {
	if pid, err := strconv.Atoi(arg); err == nil {
		return attach.Open(pid)
	}
	all, err := attach.List()
	if err != nil {
		return nil, err
	}
	var match []attach.Target
	for _, t := range all {
		if mainMatches(t.MainClass, arg) {
			match = append(match, t)
		}
	}
	switch len(match) {
	case 0:
		return nil, fmt.Errorf("no JVM you may profile runs %q (jprof list shows them)", arg)
	case 1:
		return attach.Open(match[0].PID)
	}
	var pids []string
	for _, t := range match {
		pids = append(pids, strconv.Itoa(t.PID))
	}
	return nil, fmt.Errorf("%d JVMs run %q (pids %s): name one by its pid", len(match), arg, strings.Join(pids, ", "))
}

// mainMatches: the main class or jar by its full name, its simple name,
// or its file name.
func mainMatches(main, arg string) bool {
	if main == "" {
		return false
	}
	if main == arg {
		return true
	}
	simple := main
	if i := strings.LastIndexAny(simple, "./"); i >= 0 && !strings.HasSuffix(simple, ".jar") {
		simple = simple[i+1:]
	}
	return simple == arg || filepath.Base(main) == arg
}

// dialAgent connects to the JVM's agent, if it has one.
func dialAgent(ctx context.Context, t *attach.Target) (*control.Client, error) {
	agents := control.AgentsOfPID(control.SocketBase, t.PID)
	var errs []string
	for _, a := range agents {
		c, err := control.DialAgent(ctx, a, "")
		if err == nil {
			return c, nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			// Nobody listens: a socket left by an earlier JVM of the
			// same pid (killed), which the agent replaces as it loads.
			continue
		}
		if errors.Is(err, control.ErrOtherJVM) {
			// Another JVM's agent holds the name (one of its PID in a
			// PID namespace sharing /tmp): an agent loaded here would
			// find it taken and could not be reached; refused before
			// anything is loaded.
			return nil, fmt.Errorf("pid %d: the name of its agent's control socket, %s, is taken by another JVM's agent (%v); "+
				"an agent loaded into pid %d could not be reached: give each JVM its own /tmp", t.PID, a.Path, err, t.PID)
		}
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("pid %d: its agent does not answer: %s", t.PID, strings.Join(errs, "; "))
	}
	return nil, nil
}

// agentFiles finds libjprof.so (and the jar beside it).
func agentFiles(lib string) ([]string, error) {
	var cands []string
	switch {
	case lib != "":
		cands = []string{lib}
	case os.Getenv("JPROF_AGENT") != "":
		cands = []string{os.Getenv("JPROF_AGENT")}
	default:
		if exe, err := os.Executable(); err == nil {
			dir := filepath.Dir(exe)
			cands = []string{filepath.Join(dir, "libjprof.so"), filepath.Join(dir, "..", "libjprof.so"),
				filepath.Join(dir, "..", "lib", "libjprof.so")}
		}
	}
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil {
			files := []string{c}
			jar := filepath.Join(filepath.Dir(c), "jprof-bci.jar")
			if _, err := os.Stat(jar); err == nil {
				files = append(files, jar)
			}
			return files, nil
		}
	}
	return nil, fmt.Errorf("libjprof.so not found (looked at %s): give it with -lib or $JPROF_AGENT", strings.Join(cands, ", "))
}

// connect finds the JVM's agent, loading libjprof into the JVM first if
// it has none (lt.loaded). It says what it does on stderr.
func connect(ctx context.Context, arg string, lf liveFlags, load bool, stderr io.Writer) (*liveTarget, error) {
	t, err := findTarget(arg)
	if err != nil {
		return nil, err
	}
	lt := &liveTarget{t: t}
	if lt.client, err = dialAgent(ctx, t); err != nil {
		return nil, err
	}
	if lt.client == nil {
		// Without load, noChannel always says why there is nothing
		// to drive.
		if err := noChannel(t, load); err != nil {
			return nil, err
		}
	}
	if lt.client != nil {
		if lf.opts != nil && *lf.opts != "" {
			if name, value, _ := strings.Cut(strings.TrimSpace(*lf.opts), "="); strings.EqualFold(name, "ROOTS") && value == "" {
				lt.close()
				return nil, usagef("-opts ROOTS= needs root methods (Class.method+...), or all for every method")
			}
			if roots, ok := onlyRoots(*lf.opts); ok {
				// The one option a running agent changes (applyRoots).
				lt.roots = roots
				rememberNamespace(t)
				return lt, nil
			}
			fmt.Fprintf(stderr, "jprof: warning: -opts %s not used: pid %d has its agent already, with the options it was loaded with (only ROOTS= changes, given alone)\n", *lf.opts, t.PID)
		}
		rememberNamespace(t)
		return lt, nil
	}
	ev := lookupEvent(*lf.event)
	// Before anything is staged or said: the load would be refused.
	if err := t.CheckAttachable(); err != nil {
		return nil, err
	}
	// Where the agent's control socket will go, checked before anything
	// is loaded, as outputDir checks where its files go: a directory
	// another user made there would leave the agent unreachable.
	if err := socketDir(t); err != nil {
		return nil, err
	}
	files, err := agentFiles(*lf.lib)
	if err != nil {
		return nil, err
	}
	dir, err := t.Stage(files...)
	if err != nil {
		return nil, fmt.Errorf("pid %d: making libjprof reachable by the JVM: %w", t.PID, err)
	}
	logs, err := outputDir(t)
	if err != nil {
		return nil, err
	}
	base := ev.opts
	if *lf.opts != "" && sourceopts.Named(*lf.opts) {
		// An event source in -opts replaces the event's, as one in
		// JPROFOPTS replaces the -agentpath options'; said, since -e
		// then does nothing.
		// Said when it replaces a source -e named, not a default, nor
		// the same source given a value -e leaves at its default (-e
		// alloc -opts ALLOC=64k); -e cpu -opts SAMPLE=wall is another.
		if src := sourceopts.Only(base); src != "" && lf.eventSet && !refines(src, sourceopts.Only(*lf.opts)) {
			fmt.Fprintf(stderr, "jprof: -opts %s names an event source: it replaces -e %s's (%s)\n", *lf.opts, *lf.event, src)
		}
		base = sourceopts.Without(base)
	}
	var parts []string
	// QUIET: the agent's lines are not the program's to log; jprof
	// prints those of the load (loaderLines), the rest comes in replies
	// and report headers.
	for _, p := range []string{base, "LOGPATH=" + logs, "QUIET", *lf.opts} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	opts := strings.Join(parts, ",")
	fmt.Fprintf(stderr, "jprof: loading libjprof into pid %d (%s): %s\n", t.PID, t.MainClass, opts)
	// What an earlier load left (one by jcmd, say) is not this one's.
	loaderFile(t, "attach-msg")
	loaderFile(t, "attach-error")
	// Whether an agent may be there already (noChannel let the load go
	// on for one without a socket): what tells, with an agent that does
	// not count its loads, whether this load made the agent.
	mappedBefore := agentMapped(t.PID)
	t0 := time.Now()
	// A signal during the load: the wait for the JVM's attach listener
	// is given up at once, with nothing loaded; the load request, once
	// sent, is not (the JVM would go on loading the agent unseen): the
	// command waits for its reply, then detaches the agent if this load
	// made it (connected below; one that was there is left as it was)
	// and gives up.
	lctx, lcancel := lf.intr.context(ctx)
	err = t.Listening(lctx)
	lcancel()
	if s := lf.intr.seen(); s != nil {
		return nil, &interruptedError{sig: s, pid: t.PID, when: "before libjprof was loaded", after: "nothing was loaded"}
	}
	if err != nil {
		return nil, err
	}
	err = t.LoadAgent(ctx, filepath.Join(dir, "libjprof.so"), opts)
	said := loaderFile(t, "attach-msg")
	if said != "" {
		fmt.Fprintln(stderr, said)
	}
	lt.saidPMU = strings.Contains(said, "not countable here")
	if err != nil {
		if why := loaderFile(t, "attach-error"); why != "" {
			return nil, fmt.Errorf("%w: %s", err, why)
		}
		return nil, err
	}
	if lt.client, err = dialAgent(ctx, t); err != nil || lt.client == nil {
		if err == nil {
			err = errors.New("no control socket after the load")
		}
		return nil, fmt.Errorf("pid %d: libjprof loaded but does not answer: %w", t.PID, err)
	}
	// The load made the agent, or reached one that was there without
	// a socket (an -agentpath agent collecting since the JVM started,
	// say), which it only made open one: that one is not this
	// command's, to detach when it gives up, nor to switch -e for.
	lt.loaded = !mappedBefore
	if st, err := lt.do(ctx, "status"); err == nil {
		if n := statusField(st, "loads"); n != "" {
			lt.loaded = n == "1"
		}
	}
	if lt.loaded {
		fmt.Fprintf(stderr, "jprof: libjprof loaded in %v\n", time.Since(t0).Round(time.Millisecond))
	} else {
		lt.reached = true
		fmt.Fprintf(stderr, "jprof: the agent already in pid %d answers now (this load reached it, in %v)\n", t.PID, time.Since(t0).Round(time.Millisecond))
	}
	rememberNamespace(t)
	if s := lf.intr.seen(); s != nil {
		err := lt.abandon(s, "during the load of libjprof", *lf.timeout)
		lt.close()
		return nil, err
	}
	return lt, nil
}

// noChannel says, as an error, why a JVM whose agent has no control
// socket cannot be driven, or nil when a load may go on (load) and can
// help: the JVM has no agent yet, or an agent a load reaches again that
// tries to open its socket once more (its first load could not: see
// attachAgain). The library mapped into the JVM tells an agent from
// none; an attach that failed leaves it mapped too, with no agent, which
// a load makes.
func noChannel(t *attach.Target, load bool) error {
	if m, ok := shutDown(t); ok {
		// Loading it again would reach that agent, which refuses.
		return fmt.Errorf("pid %d (%s) has libjprof loaded, but rtdriver shut it down at %s: it collects no more and its control channel is closed for good, so neither jprof nor rtdriver can reach it; restart the JVM to profile it again",
			t.PID, t.MainClass, m.At.Local().Format("2006-01-02 15:04:05"))
	}
	if !agentMapped(t.PID) {
		if load {
			return nil
		}
		return fmt.Errorf("pid %d (%s) has no libjprof agent: jprof start or jprof profile loads one", t.PID, t.MainClass)
	}
	if startedWithAgent(t) && optionGiven(t, "NORTDRIVER") {
		// Loading it again reaches the agent already there, which has
		// no socket to be driven through either.
		return fmt.Errorf("pid %d (%s) has libjprof loaded without a control socket (NORTDRIVER): neither jprof nor rtdriver can reach it; restart the program without NORTDRIVER, or without the agent", t.PID, t.MainClass)
	}
	if load {
		return nil
	}
	return fmt.Errorf("pid %d (%s) has libjprof loaded but no control socket to reach it by (its socket could not be made, or a load failed: its log-msg says): jprof start or jprof profile loads it again, which tries to open one", t.PID, t.MainClass)
}

// shutDown reads the marker an agent shut down by rtdriver left where its
// socket was (control.ShutdownMarker), if it is this process's.
func shutDown(t *attach.Target) (control.ShutdownMarker, bool) {
	m, ok := control.ReadShutdownMarker(t.Path(control.ShutdownMarkerPath(control.SocketBase, t.UID, t.NSPid)))
	return m, ok && m.Start == t.StartTicks()
}

// optionGiven says whether the JVM's command line gives libjprof the
// option name (-agentpath:…libjprof…=…,NAME,…), or its environment's
// JPROFOPTS does, as far as this user may read it.
func optionGiven(t *attach.Target, name string) bool {
	var lists []string
	for _, a := range t.Cmdline {
		if strings.HasPrefix(a, "-agentpath:") && strings.Contains(a, "libjprof") {
			if _, opts, ok := strings.Cut(a, "="); ok {
				lists = append(lists, opts)
			}
		}
	}
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", t.PID)); err == nil {
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "JPROFOPTS="); ok {
				lists = append(lists, v)
			}
		}
	}
	for _, l := range lists {
		for _, o := range strings.Split(l, ",") {
			if strings.EqualFold(strings.TrimSpace(o), name) {
				return true
			}
		}
	}
	return false
}

// socketDir checks, before a load, the directory the agent's control
// socket goes in (/tmp/.libjprof-<uid>/ as the JVM sees it), and makes it
// when there is none, as the agent would: private to the JVM's user. One
// that another user made (anyone may make a directory in /tmp, under any
// name) or that others may enter is refused, as the agent refuses it:
// loaded, the agent would run without a socket, unreachable.
func socketDir(t *attach.Target) error {
	dir := control.SocketDir(control.SocketBase, t.UID)
	host := t.Path(dir)
	made := false
	if err := os.Mkdir(host, 0o700); err == nil {
		made = true
	} else if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pid %d: making %s, where its agent's control socket goes: %w", t.PID, host, err)
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return fmt.Errorf("pid %d: %w", t.PID, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("pid %d: %s, where its agent's control socket goes, is not a directory (%v): not used; an agent loaded now could not be reached (remove it)",
			t.PID, host, fi.Mode().Type())
	}
	if int(st.Uid) != t.UID {
		if !made || os.Geteuid() != 0 {
			return fmt.Errorf("pid %d: %s, where its agent's control socket goes, belongs to uid %d, not to the JVM's user %d: not used; an agent loaded now could not be reached (another user made it: it must be removed, by root or by uid %d)",
				t.PID, host, st.Uid, t.UID, st.Uid)
		}
		// Made just now by root for the JVM's user.
		if err := os.Lchown(host, t.UID, t.GID); err != nil {
			return fmt.Errorf("pid %d: %w", t.PID, err)
		}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("pid %d: %s, where its agent's control socket goes, has mode %v: others may enter it; not used (chmod 700 it)", t.PID, host, fi.Mode().Perm())
	}
	return nil
}

func lookupEvent(name string) *struct{ name, opts, source, kind, about string } {
	for i := range events {
		if events[i].name == name {
			return &events[i]
		}
	}
	return nil
}

// onlyRoots says whether opts is a ROOTS= option alone, and its value.
func onlyRoots(opts string) (string, bool) {
	name, value, ok := strings.Cut(strings.TrimSpace(opts), "=")
	if !ok || !strings.EqualFold(name, "ROOTS") || value == "" || strings.Contains(value, ",") {
		return "", false
	}
	return value, true
}

// startedWithAgent says whether the JVM's command line loads libjprof
// (-agentpath:…libjprof…), so that the agent is there from its start.
func startedWithAgent(t *attach.Target) bool {
	for _, a := range t.Cmdline {
		if strings.HasPrefix(a, "-agentpath:") && strings.Contains(a, "libjprof") {
			return true
		}
	}
	return false
}

// do sends one command and returns its detail, or its refusal as an
// error.
func (lt *liveTarget) do(ctx context.Context, cmd string) (string, error) {
	rs, err := lt.client.Do(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("pid %d: %s: %w", lt.t.PID, cmd, err)
	}
	if len(rs) != 1 {
		return "", fmt.Errorf("pid %d: %s: %d replies", lt.t.PID, cmd, len(rs))
	}
	if !rs[0].OK {
		return "", fmt.Errorf("pid %d: %s refused: %s", lt.t.PID, cmd, rs[0].Detail)
	}
	return rs[0].Detail, nil
}

// statusField reads one key=value of a status line.
func statusField(status, key string) string {
	for _, f := range strings.Fields(status) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// checkEvent: the agent already in the JVM profiles what it was loaded
// for, and nothing else. Without -e, that is what it profiles (*ev
// becomes its event).
func checkEvent(ctx context.Context, lt *liveTarget, lf liveFlags) (string, error) {
	ev := *lf.event
	st, err := lt.do(ctx, "status")
	if err != nil {
		return "", err
	}
	has := func(x *struct{ name, opts, source, kind, about string }) bool {
		k, v, _ := strings.Cut(x.kind, "=")
		// An agent with the lock monitor is jlm's, not calls'.
		if (x.name == "jlm") != (statusField(st, "jlm") == "on") {
			return false
		}
		return statusField(st, "source") == x.source && strings.HasPrefix(statusField(st, k), v)
	}
	e := lookupEvent(ev)
	if e == nil || has(e) {
		return st, nil
	}
	for i := range events {
		if has(&events[i]) {
			// -opts may have named another source for the load.
			if !lf.eventSet || lt.loaded {
				*lf.event = events[i].name
				return st, nil
			}
			return "", fmt.Errorf("pid %d's agent, loaded earlier, profiles what -e %s does (%s, %s): it cannot change to -e %s; use -e %s, or restart the program",
				lt.t.PID, events[i].name, events[i].source, events[i].kind, ev, events[i].name)
		}
	}
	return "", fmt.Errorf("pid %d's agent, loaded earlier with other options (source=%s mode=%s), cannot profile -e %s; restart the program",
		lt.t.PID, statusField(st, "source"), statusField(st, "mode"), ev)
}

// openLive parses a live command's flags (extra adds its own and
// returns their check) and its one PID|MAIN, checks -e and -o before
// anything is done to the JVM, and connects to the JVM's agent, loading
// it first when load is set.
func openLive(name string, args []string, withEvent, withOut, load bool,
	extra func(*flag.FlagSet) func() error) (*liveTarget, liveFlags, error) {
	return openLiveWatched(name, args, withEvent, withOut, load, nil, extra)
}

// openLiveWatched is openLive for a command that watches for Ctrl-C and
// SIGTERM (intr): one that comes during the load gives the command up.
func openLiveWatched(name string, args []string, withEvent, withOut, load bool, intr *interrupts,
	extra func(*flag.FlagSet) func() error) (*liveTarget, liveFlags, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	check := func() error { return nil }
	if extra != nil {
		check = extra(fs)
	}
	lf := addLiveFlags(fs, withEvent, withOut)
	lf.intr = intr
	pos, err := parse(fs, args)
	if err != nil {
		return nil, lf, err
	}
	fs.Visit(func(f *flag.Flag) { lf.eventSet = lf.eventSet || f.Name == "e" })
	if len(pos) > 1 {
		return nil, lf, usagef("%s: extra argument %q: it takes one pid or main class name", name, pos[1])
	}
	if len(pos) != 1 {
		return nil, lf, usagef("%s needs one pid or main class name", name)
	}
	if withEvent && lookupEvent(*lf.event) == nil {
		return nil, lf, usagef("-e %s: want one of %s", *lf.event, eventNames())
	}
	if err := check(); err != nil {
		return nil, lf, err
	}
	if withOut {
		if err := checkOut(*lf.out); err != nil {
			return nil, lf, err
		}
	}
	lf.arg = pos[0]
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	lt, err := connect(ctx, pos[0], lf, load, warnings)
	return lt, lf, err
}

// refines says whether the event source option by (-opts') is the one
// ev (-e's) chooses, with a value ev leaves at its default, or of the
// same kind.
func refines(ev, by string) bool {
	en, ev2, _ := strings.Cut(strings.Split(ev, ",")[0], "=")
	bn, bv, _ := strings.Cut(strings.Split(by, ",")[0], "=")
	kind, _, _ := strings.Cut(bv, ":") // SAMPLE=cpu:500us is -e cpu's kind with a period
	return strings.EqualFold(strings.TrimSpace(en), strings.TrimSpace(bn)) && (ev2 == "" || strings.EqualFold(ev2, kind))
}
