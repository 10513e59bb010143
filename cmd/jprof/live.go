package main

// The commands that profile a running JVM: list, profile, start, stop,
// status, flush. They reach the JVM's agent through its control socket
// (the one rtdriver uses), loading libjprof into the JVM first through
// the JDK's attach protocol (package attach) when it has no agent yet.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
	"github.com/libjprof/libjprof/reports"
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
	{"lock", "LOCK", "lock-events", "mode=LOCK", "time threads wait entering contended monitors (synchronized) and in Object.wait,\n       per calling context, the monitor's class as the leaf"},
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
	event   *string
	out     *string
	lib     *string
	opts    *string
	timeout *time.Duration
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

// liveTarget is a JVM found from the command line, with its agent's
// control connection once there is one.
type liveTarget struct {
	t      *attach.Target
	client *control.Client
	logs   string // the agent's LOGPATH as the JVM sees it ("" until known)
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
// it has none. It says what it does on stderr.
func connect(ctx context.Context, arg string, lf liveFlags, load bool, stderr io.Writer) (*liveTarget, bool, error) {
	t, err := findTarget(arg)
	if err != nil {
		return nil, false, err
	}
	lt := &liveTarget{t: t}
	if lt.client, err = dialAgent(ctx, t); err != nil {
		return nil, false, err
	}
	if lt.client != nil || !load {
		if lt.client == nil {
			return nil, false, fmt.Errorf("pid %d (%s) has no libjprof agent: jprof start or jprof profile loads one", t.PID, t.MainClass)
		}
		if lf.opts != nil && *lf.opts != "" {
			fmt.Fprintf(stderr, "jprof: warning: -opts %s not used: pid %d has its agent already, with the options it was loaded with\n", *lf.opts, t.PID)
		}
		return lt, false, nil
	}
	ev := lookupEvent(*lf.event)
	files, err := agentFiles(*lf.lib)
	if err != nil {
		return nil, false, err
	}
	dir, err := t.Stage(files...)
	if err != nil {
		return nil, false, fmt.Errorf("pid %d: making libjprof reachable by the JVM: %w", t.PID, err)
	}
	logs, err := outputDir(t)
	if err != nil {
		return nil, false, err
	}
	opts := ev.opts + ",LOGPATH=" + logs
	if *lf.opts != "" {
		opts += "," + *lf.opts
	}
	fmt.Fprintf(stderr, "jprof: loading libjprof into pid %d (%s): %s\n", t.PID, t.MainClass, opts)
	t0 := time.Now()
	if err := t.LoadAgent(ctx, filepath.Join(dir, "libjprof.so"), opts); err != nil {
		if why := attachError(t); why != "" {
			return nil, false, fmt.Errorf("%w: %s", err, why)
		}
		return nil, false, err
	}
	if lt.client, err = dialAgent(ctx, t); err != nil || lt.client == nil {
		if err == nil {
			err = errors.New("no control socket after the load")
		}
		return nil, false, fmt.Errorf("pid %d: libjprof loaded but does not answer: %w", t.PID, err)
	}
	fmt.Fprintf(stderr, "jprof: libjprof loaded in %v\n", time.Since(t0).Round(time.Millisecond))
	return lt, true, nil
}

func lookupEvent(name string) *struct{ name, opts, source, kind, about string } {
	for i := range events {
		if events[i].name == name {
			return &events[i]
		}
	}
	return nil
}

// outputDir is the directory the agent writes into, made private to the
// JVM's user in the JVM's /tmp: /tmp/jprof-<uid>/.
func outputDir(t *attach.Target) (string, error) {
	dir := jprofDir(t)
	host := t.Path(dir)
	if err := os.Mkdir(host, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("pid %d: making %s: %w", t.PID, host, err)
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return "", fmt.Errorf("%s is not a directory", host)
	}
	if int(st.Uid) != t.UID {
		if os.Geteuid() != 0 || st.Uid != 0 {
			return "", fmt.Errorf("%s belongs to uid %d, not to the JVM's user %d: not used", host, st.Uid, t.UID)
		}
		// Made just now by root for the JVM's user.
		if err := os.Lchown(host, t.UID, t.GID); err != nil {
			return "", err
		}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %v: others may enter it; not used", host, fi.Mode().Perm())
	}
	return dir, nil
}

// jprofDir is jprof's directory in the JVM's /tmp, as the JVM sees it.
func jprofDir(t *attach.Target) string { return fmt.Sprintf("/tmp/jprof-%d", t.UID) }

// attachError is what a failed Agent_OnAttach wrote for the caller (the
// JVM's stderr is not the caller's), removed once read.
func attachError(t *attach.Target) string {
	p := t.Path(filepath.Join(control.SocketDir(control.SocketBase, t.UID), strconv.Itoa(t.NSPid)+".attach-error"))
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	os.Remove(p)
	return strings.TrimSpace(string(b))
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

// checkOut refuses an -o whose kind is not known, before anything is
// done to the JVM.
func checkOut(out string) error {
	if out == "" || isDirOut(out) {
		return nil
	}
	for _, ext := range []string{".html", ".pb.gz", ".pprof", ".collapsed", ".txt"} {
		if strings.HasSuffix(out, ext) {
			return nil
		}
	}
	return usagef("-o %s: want a name ending in .html (flame graph), .pb.gz (pprof), .collapsed or .txt (collapsed stacks), or a directory (an existing one, or a name ending in /)", out)
}

func isDirOut(out string) bool {
	fi, err := os.Stat(out)
	return (err == nil && fi.IsDir()) || strings.HasSuffix(out, "/")
}

// writeOutput converts the log-rt at path (as the JVM sees it) into out.
// A log-rt in jprof's own directory is removed once converted: it would
// pile up there, one per profile.
func writeOutput(lt *liveTarget, path, out string, stdout, stderr io.Writer) error {
	host := lt.t.Path(path)
	if out == "" {
		out = fmt.Sprintf("jprof-%d.html", lt.t.PID)
	}
	err := convert(lt, path, host, out, stdout, stderr)
	if err == nil && filepath.Dir(path) == jprofDir(lt.t) {
		os.Remove(host)
	}
	return err
}

func convert(lt *liveTarget, path, host, out string, stdout, stderr io.Writer) error {
	if isDirOut(out) {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		dst := filepath.Join(out, filepath.Base(path))
		if err := copyFile(host, dst); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "jprof: wrote %s\n", dst)
		return nil
	}
	p, _, err := load(host)
	if err != nil {
		return err
	}
	var write func(io.Writer) error
	switch {
	case strings.HasSuffix(out, ".html"):
		o := reports.FlameOptions{Title: fmt.Sprintf("pid %d %s (%s)", lt.t.PID, lt.t.MainClass, filepath.Base(path))}
		write = func(w io.Writer) error { return reports.WriteFlame(w, p, o) }
	case strings.HasSuffix(out, ".pb.gz") || strings.HasSuffix(out, ".pprof"):
		pp, err := reports.ToPprof(p, reports.JavaNames)
		if err != nil {
			return err
		}
		write = pp.Write
	case strings.HasSuffix(out, ".collapsed") || strings.HasSuffix(out, ".txt"):
		write = func(w io.Writer) error { return reports.WriteCollapsed(w, p, reports.CollapsedOptions{}) }
	default:
		return usagef("-o %s: want .html, .pb.gz, .collapsed, .txt or a directory", out)
	}
	if err := output(out, stdout, write); err != nil {
		return err
	}
	for _, n := range p.Notes {
		if strings.HasPrefix(n, "Warning") {
			fmt.Fprintf(stderr, "jprof: %s\n", n)
		}
	}
	fmt.Fprintf(stdout, "jprof: wrote %s (from %s)\n", out, host)
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return output(dst, nil, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// checkEvent: the agent already in the JVM profiles what it was loaded
// for, and nothing else.
func checkEvent(ctx context.Context, lt *liveTarget, ev string) (string, error) {
	st, err := lt.do(ctx, "status")
	if err != nil {
		return "", err
	}
	has := func(x *struct{ name, opts, source, kind, about string }) bool {
		k, v, _ := strings.Cut(x.kind, "=")
		return statusField(st, "source") == x.source && strings.HasPrefix(statusField(st, k), v)
	}
	e := lookupEvent(ev)
	if e == nil || has(e) {
		return st, nil
	}
	for i := range events {
		if has(&events[i]) {
			return "", fmt.Errorf("pid %d's agent, loaded earlier, profiles what -e %s does (%s, %s): it cannot change to -e %s; use -e %s, or restart the program",
				lt.t.PID, events[i].name, events[i].source, events[i].kind, ev, events[i].name)
		}
	}
	return "", fmt.Errorf("pid %d's agent, loaded earlier with other options (source=%s mode=%s), cannot profile -e %s; restart the program",
		lt.t.PID, statusField(st, "source"), statusField(st, "mode"), ev)
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
	fmt.Fprintf(stdout, "%8s %6s  %-8s %s\n", "PID", "UID", "AGENT", "MAIN")
	for _, t := range all {
		agent := "-"
		if len(control.AgentsOfPID(control.SocketBase, t.PID)) > 0 {
			agent = "libjprof"
		}
		main := t.MainClass
		if !t.SameMountNS {
			main += fmt.Sprintf(" (container, pid %d there)", t.NSPid)
		}
		fmt.Fprintf(stdout, "%8d %6d  %-8s %s\n", t.PID, t.UID, agent, main)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(stdout, "(your JVMs only: other users' are not shown, and only root may profile them)\n")
	}
	return nil
}

// openLive parses a live command's flags (extra adds its own and
// returns their check) and its one PID|MAIN, checks -e and -o before
// anything is done to the JVM, and connects to the JVM's agent, loading
// it first when load is set.
func openLive(name string, args []string, withEvent, withOut, load bool,
	extra func(*flag.FlagSet) func() error) (*liveTarget, liveFlags, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	check := func() error { return nil }
	if extra != nil {
		check = extra(fs)
	}
	lf := addLiveFlags(fs, withEvent, withOut)
	pos, err := parse(fs, args)
	if err != nil {
		return nil, lf, err
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
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	lt, _, err := connect(ctx, pos[0], lf, load, warnings)
	return lt, lf, err
}

func liveProfile(args []string, stdout io.Writer) error {
	var d *time.Duration
	lt, lf, err := openLive("profile", args, true, true, true, func(fs *flag.FlagSet) func() error {
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
	st, err := checkEvent(ctx, lt, *lf.event)
	cancel()
	if err != nil {
		return err
	}
	if statusField(st, "state") == "collecting" {
		return fmt.Errorf("pid %d's agent is collecting already (started by START or another command): jprof flush writes what it has, jprof stop ends it", lt.t.PID)
	}
	// Ctrl-C and SIGTERM end the wait; the profile is still written.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	lt.logs = statusField(st, "logpath")
	started := time.Now()
	ctx, cancel = cmdCtx()
	_, err = lt.do(ctx, "start")
	cancel()
	if err != nil {
		return err
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
	case s := <-sigs:
		fmt.Fprintf(stderr, "jprof: %v: stopping\n", s)
	case <-gone:
		return targetGone(lt, started, *lf.out, stdout, stderr)
	}
	return stopAndWrite(lt, started, *lf.out, *lf.timeout, stdout, stderr)
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
	if err != nil {
		fmt.Fprintf(stderr, "jprof: warning: %v\n", err)
	} else {
		fmt.Fprintf(stderr, "jprof: detached: %s\n", detail)
	}
	if endErr != nil {
		return endErr
	}
	if !strings.HasPrefix(path, "/") {
		// A Noop: nothing collected.
		return fmt.Errorf("pid %d: %s", lt.t.PID, path)
	}
	return writeOutput(lt, path, out, stdout, stderr)
}

// targetGone is the JVM's exit in the middle of a profile: its agent
// wrote a final log-rt at VM death if the JVM shut down normally, which
// is still there unless it was in a container's /tmp that went with it.
func targetGone(lt *liveTarget, since time.Time, out string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "jprof: pid %d exited during the profile\n", lt.t.PID)
	if path := finalLogRT(lt, since); path != "" {
		fmt.Fprintf(stderr, "jprof: its agent wrote a final log-rt at VM death: %s\n", path)
		if err := writeOutput(lt, path, out, stdout, stderr); err != nil {
			return err
		}
		return fmt.Errorf("pid %d exited before the profile ended: the profile covers its run until then", lt.t.PID)
	}
	return fmt.Errorf("pid %d exited before the profile ended, and its agent left no final log-rt (killed, or its /tmp went with it): nothing written", lt.t.PID)
}

// finalLogRT is the newest log-rt the JVM's agent wrote since then, as
// the JVM saw its path; "" if none.
func finalLogRT(lt *liveTarget, since time.Time) string {
	if lt.logs == "" {
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(lt.t.Path(lt.logs), fmt.Sprintf("log-rt.*_%d", lt.t.NSPid)))
	var best string
	var at time.Time
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(since) && fi.ModTime().After(at) {
			best, at = m, fi.ModTime()
		}
	}
	if best == "" {
		return ""
	}
	return filepath.Join(lt.logs, filepath.Base(best))
}

// watchExit closes its channel when the process is gone.
func watchExit(pid int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		for processAlive(pid) {
			time.Sleep(200 * time.Millisecond)
		}
		close(c)
	}()
	return c
}

// processAlive: the process exists and has not exited (a zombie, whose
// parent has not reaped it yet, has).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

func liveStart(args []string, stdout io.Writer) error {
	lt, lf, err := openLive("start", args, true, false, true, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	defer lt.close()
	if _, err := checkEvent(ctx, lt, *lf.event); err != nil {
		return err
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
		return err
	}
	defer lt.close()
	return stopAndWrite(lt, time.Now(), *lf.out, *lf.timeout, stdout, warnings)
}

func liveFlush(args []string, stdout io.Writer) error {
	lt, lf, err := openLive("flush", args, false, true, false, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *lf.timeout)
	defer cancel()
	defer lt.close()
	path, err := lt.do(ctx, "flush")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("pid %d: %s", lt.t.PID, path)
	}
	return writeOutput(lt, path, *lf.out, stdout, warnings)
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
