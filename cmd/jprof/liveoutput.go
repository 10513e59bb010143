package main

// What the live commands write: a profile's log-rt, converted where jprof
// runs into the output -o names; and what they do when the JVM exits
// in the middle of a profile.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/internal/attach"
	"github.com/libjprof/libjprof/internal/ownedfile"
	"github.com/libjprof/libjprof/reports"
)

// checkOut refuses an -o whose kind is not known, before anything is
// done to the JVM.
func checkOut(out string) error {
	// Found before the profile runs, not after.
	if out == "" {
		// The default, jprof-<pid>.html here.
		if !writable(".") {
			return usagef("the current directory is not writable: name an output with -o")
		}
		return nil
	}
	if isDirOut(out) {
		// One that exists must be writable; one that does not is made.
		if fi, err := os.Stat(out); err == nil && fi.IsDir() && !writable(out) {
			return usagef("-o %s: directory not writable", out)
		}
		return nil
	}
	for _, ext := range []string{".html", ".pb.gz", ".pprof", ".collapsed", ".txt"} {
		if strings.HasSuffix(out, ext) {
			return checkOutPath(out)
		}
	}
	return usagef("-o %s: want a name ending in .html (flame graph), .pb.gz (pprof), .collapsed or .txt (collapsed stacks), or a directory (an existing one, or a name ending in /)", out)
}

// checkOutPath refuses a file output that could not be written where out
// names it: a directory (one that exists, or a name ending in /), or a
// name in a directory that does not exist or that this user may not
// write in. The live commands call it before they ask the JVM anything,
// so that a typo costs neither a profile nor a full GC and a dump. A
// device or pipe (/dev/null) is written in place (atomicfile): its own
// permission counts, not its directory's.
func checkOutPath(out string) error {
	if err := checkOutFile(out); err != nil {
		return err
	}
	if strings.HasSuffix(out, "/") {
		return usagef("-o %s names a directory: give a file name for the output", out)
	}
	if fi, err := os.Stat(out); err == nil && !fi.Mode().IsRegular() {
		if unix.Access(out, unix.W_OK) != nil {
			return usagef("-o %s is not writable", out)
		}
		return nil
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("-o %s: no directory %s to write it in", out, dir)
	}
	if !writable(dir) {
		return usagef("-o %s: directory %s is not writable", out, dir)
	}
	return nil
}

// writable says whether this user may create files in dir.
func writable(dir string) bool {
	return unix.Access(dir, unix.W_OK) == nil
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
	if err == nil {
		err = writeJLMOutput(host, lt.t.UID, out, stdout)
	}
	if err != nil {
		return fmt.Errorf("%w (the profile itself is kept: %s)", err, host)
	}
	if filepath.Dir(path) == jprofDir(lt.t) {
		os.Remove(host)
		os.Remove(jlmPath(host))
	}
	return nil
}

// jlmPath is the log-jlm written beside a log-rt (JLM).
func jlmPath(logrt string) string {
	dir, base := filepath.Split(logrt)
	return filepath.Join(dir, strings.Replace(base, "log-rt.", "log-jlm.", 1))
}

// writeJLMOutput writes the lock monitor's report beside out
// (jprof-1234.html: jprof-1234.jlm.txt) when the agent wrote a log-jlm
// with the log-rt; a directory gets the log-jlm itself. Read as the
// log-rt is (openLogFile).
func writeJLMOutput(logrt string, uid int, out string, stdout io.Writer) error {
	src := jlmPath(logrt)
	f, err := openLogFile(src, uid)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if isDirOut(out) {
		dst := filepath.Join(out, filepath.Base(src))
		if err := copyFile(f, dst); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "jprof: wrote %s\n", dst)
		return nil
	}
	base := out
	for _, ext := range []string{".pb.gz", ".pprof", ".html", ".collapsed", ".txt"} {
		if b, ok := strings.CutSuffix(base, ext); ok {
			base = b
			break
		}
	}
	dst := base + ".jlm.txt"
	if err := reportJLMFile(f, "gets", dst, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "jprof: wrote %s (the lock monitor, from %s)\n", dst, src)
	return nil
}

// openLogFile opens a file the JVM's agent wrote (a log-rt, a log-jlm),
// in a directory its user owns, if it is still a regular file of uid's,
// the JVM's user, once open: that user may have swapped it for a link
// to a file only root may read (root's jprof would copy it into its
// output, for the user to read) or for a FIFO (the read would hang).
func openLogFile(path string, uid int) (*os.File, error) {
	f, err := ownedfile.Open(path, uid)
	if errors.Is(err, ownedfile.ErrNotOwned) || errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is not the agent's file (not a regular file of the JVM's user, uid %d): not read", path, uid)
	}
	return f, err
}

func convert(lt *liveTarget, path, host, out string, stdout, stderr io.Writer) error {
	f, err := openLogFile(host, lt.t.UID)
	if err != nil {
		return err
	}
	defer f.Close()
	if isDirOut(out) {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		dst := filepath.Join(out, filepath.Base(path))
		if err := copyFile(f, dst); err != nil {
			return err
		}
		// Kept as it is: its header's warnings, read without the rows.
		if f, err := os.Open(dst); err == nil {
			if h, err := reports.ParseLogRTHeader(f); err == nil {
				lt.sayWarnings(stderr, h.Notes)
			}
			f.Close()
		}
		fmt.Fprintf(stdout, "jprof: wrote %s\n", dst)
		return nil
	}
	p, _, err := loadFile(f)
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
	lt.sayWarnings(stderr, p.Notes)
	from := host
	if filepath.Dir(path) == jprofDir(lt.t) { // writeOutput removes it
		from += ", removed now"
	}
	fmt.Fprintf(stdout, "jprof: wrote %s (from %s)\n", out, from)
	return nil
}

// sayWarnings repeats a report header's warnings where a user looks, but
// the PMU fallback's when this command printed the agent's own line on it
// at the load.
func (lt *liveTarget) sayWarnings(stderr io.Writer, notes []string) {
	for _, n := range notes {
		if strings.HasPrefix(n, "Warning") && !(lt.saidPMU && strings.Contains(n, "cannot be counted here")) {
			fmt.Fprintf(stderr, "jprof: %s\n", n)
		}
	}
}

func copyFile(src *os.File, dst string) error {
	b, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	return output(dst, nil, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// targetGone is the JVM's exit in the middle of a profile: its agent
// wrote a final log-rt at VM death if the JVM shut down normally, which
// is still there unless it was in a container's /tmp that went with it.
// (A JVM in a PID namespace of its own that kept the host's /tmp wrote it
// where jprof finds it by name: see attach.Target.Path.)
func targetGone(lt *liveTarget, since time.Time, out string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "jprof: pid %d exited during the profile\n", lt.t.PID)
	if path := finalLogRT(lt, since); path != "" {
		fmt.Fprintf(stderr, "jprof: its agent wrote a final log-rt at VM death: %s (converted below)\n", path)
		if err := writeOutput(lt, path, out, stdout, stderr); err != nil {
			return err
		}
		return fmt.Errorf("pid %d exited before the profile ended: the profile covers its run until then", lt.t.PID)
	}
	if why := nothingCollected(lt, since); why != "" {
		return fmt.Errorf("pid %d exited before the profile ended, and its agent wrote no final log-rt: %s", lt.t.PID, why)
	}
	if !lt.t.SameMountNS && !lt.t.TmpShared() {
		return fmt.Errorf("pid %d exited before the profile ended, and its agent's final log-rt, if it wrote one, went with its container's /tmp: nothing written", lt.t.PID)
	}
	return fmt.Errorf("pid %d exited before the profile ended, and its agent left no final log-rt (killed, or its /tmp went with it): nothing written", lt.t.PID)
}

// nothingCollected is why the agent wrote no log-rt at VM death, as its
// log-msg says ("nothing collected: ..."), or "": its last JVM's VM death
// (readDeath), if after since, the profile's start: a log-msg named by a
// PID that JVMs in PID namespaces sharing /tmp have in common may hold
// another's.
func nothingCollected(lt *liveTarget, since time.Time) string {
	if lt.logs == "" {
		return ""
	}
	d := readDeath(lt.t.Path(filepath.Join(lt.logs, fmt.Sprintf("log-msg_%d", lt.t.NSPid))), lt.t.UID)
	if d == nil || d.at.Before(since) {
		return ""
	}
	return d.nothing
}

// finalLogRT is the newest log-rt the JVM's agent wrote since then, as
// the JVM saw its path; "" if none. Files are named by the PID the JVM
// has in its own namespace. A file of that name written since is this
// JVM's, but for one in a PID namespace of its own sharing /tmp: JVMs of
// other PID namespaces there have its PID too (1, as a rule) and name
// theirs alike. For that one only, a file whose interval begins before
// the agent's own next interval did when this profile started collecting
// (lt.from) is another's, or an earlier run's. That start is where the
// agent's counts began (its last reset, or a start with nothing collected
// since), not this profile's start: an earlier collection stopped without
// an end (rtdriver stop), or ended with nothing to write (which resets
// nothing), leaves it earlier, and a final log-rt whose interval began
// there is still this JVM's.
func finalLogRT(lt *liveTarget, since time.Time) string {
	if lt.logs == "" {
		return ""
	}
	var from time.Time
	if lt.t.NSPid != lt.t.PID && lt.t.TmpShared() && lt.from != "" {
		from, _ = time.Parse("2006-01-02T15:04:05Z07:00", lt.from)
	}
	matches, _ := filepath.Glob(filepath.Join(lt.t.Path(lt.logs), fmt.Sprintf("log-rt.*_%d", lt.t.NSPid)))
	type cand struct {
		path string
		at   time.Time
	}
	var cands []cand
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && fi.ModTime().After(since) {
			cands = append(cands, cand{m, fi.ModTime()})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].at.After(cands[j].at) })
	for _, c := range cands {
		if !from.IsZero() && !intervalFrom(c.path, lt.t.UID, from) {
			continue
		}
		return filepath.Join(lt.logs, filepath.Base(c.path))
	}
	return ""
}

// intervalFrom says whether the log-rt at path covers counts from start
// on (its header's Interval_Start, to the second, is not before start);
// true for a file without an interval (an older agent's). Read only if
// it is a regular file of uid's, the JVM's user, once open.
func intervalFrom(path string, uid int, start time.Time) bool {
	f, err := ownedfile.Open(path, uid)
	if err != nil {
		return false
	}
	defer f.Close()
	h, err := reports.ParseLogRTHeader(f)
	if err != nil {
		return false
	}
	return h.Interval == nil || !h.Interval.Start.Truncate(time.Second).Before(start)
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

// afterExit is a stop or flush (which: "" or "flush") of a pid that has
// exited: its agent, if jprof loaded it, wrote a final log-rt at VM death
// into /tmp/jprof-<uid>/ when it was collecting, as jprof profile finds
// when the JVM exits during it. That log-rt is converted into the output
// (its default name as the command's), and said; without one, why not.
// Any other failure to reach the JVM, openErr, is returned as it was.
func afterExit(lf liveFlags, which string, openErr error, stdout, stderr io.Writer) error {
	pid, err := strconv.Atoi(lf.arg)
	if err != nil || pid <= 0 || processAlive(pid) {
		return openErr
	}
	d := vmDeath(pid)
	if d == nil {
		return openErr
	}
	lt := &liveTarget{t: attach.Exited(pid, d.uid, d.gid), logs: d.dir}
	at := d.at.Local().Format("2006-01-02 15:04:05")
	if d.logRT == "" {
		if d.nothing != "" {
			return fmt.Errorf("pid %d exited (VM death at %s), and its agent wrote no final log-rt: %s", pid, at, d.nothing)
		}
		return fmt.Errorf("pid %d exited (VM death at %s), and its agent wrote no final log-rt (it was not collecting then); "+
			"a log-rt it wrote earlier was converted by the command that took it", pid, at)
	}
	if _, err := os.Lstat(d.logRT); err != nil {
		return fmt.Errorf("pid %d exited (VM death at %s); its agent's final log-rt %s is gone: converted by an earlier jprof stop or flush, or removed", pid, at, d.logRT)
	}
	fmt.Fprintf(stderr, "jprof: pid %d exited (VM death at %s); its agent wrote a final log-rt then: %s (converted below)\n", pid, at, d.logRT)
	out := *lf.out
	if out == "" && which == "flush" {
		out = flushOut(pid, d.logRT)
	}
	if err := writeOutput(lt, d.logRT, out, stdout, stderr); err != nil {
		return err
	}
	if which == "flush" {
		fmt.Fprintf(stderr, "jprof: the profile ended with the JVM: it covers its run until VM death; no jprof stop needed\n")
	}
	return nil
}

// deathRecord is what a log-msg says of its JVM's end.
type deathRecord struct {
	dir      string    // jprof's directory it is in, /tmp/jprof-<uid>
	uid, gid int       // the directory's owner: the JVM's user
	at       time.Time // VM death
	loaded   time.Time // when its agent loaded (zero if the log-msg does not say)
	logRT    string    // the final log-rt its agent wrote then, "" if none
	nothing  string    // why it wrote none ("nothing collected: ..."), if it said
}

// vmDeath finds the end of pid's JVM in the log-msg jprof's load left in
// /tmp/jprof-<uid>/: for root any user's, for others their own only
// (only the JVM's user and root read what it held), in a directory that
// is its owner's alone, as outputDir makes it. Of several (a pid used
// again by another user's JVM), the latest VM death. nil if none says
// its JVM died.
func vmDeath(pid int) *deathRecord {
	dirs := []string{uidDir(os.Geteuid())}
	if os.Geteuid() == 0 {
		dirs, _ = filepath.Glob("/tmp/jprof-[0-9]*")
	}
	var best *deathRecord
	for _, dir := range dirs {
		uid, err := strconv.Atoi(strings.TrimPrefix(dir, "/tmp/jprof-"))
		if err != nil {
			continue
		}
		fi, err := os.Lstat(dir)
		st, ok := statOf(fi, err)
		if !ok || !fi.IsDir() || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
			continue
		}
		d := readDeath(filepath.Join(dir, fmt.Sprintf("log-msg_%d", pid)), uid)
		if r, ok := readNSRecord(dir, uid, pid); ok {
			// A JVM in a PID namespace sharing /tmp, whose files
			// are named by its PID there (rememberNamespace). The
			// log-msg of that name is its own if the agent that
			// wrote it loaded before jprof last reached this
			// JVM's agent, and its VM came to its end after: a
			// later JVM of that PID there, loaded since, writes
			// its own over it.
			if nd := readDeath(filepath.Join(dir, fmt.Sprintf("log-msg_%d", r.nspid)), uid); nd != nil &&
				!nd.loaded.After(r.seen) && !nd.at.Before(r.seen) && (d == nil || nd.at.After(d.at)) {
				d = nd
			}
		}
		if d == nil || (best != nil && !d.at.After(best.at)) {
			continue
		}
		d.dir, d.uid, d.gid = dir, uid, int(st.Gid)
		if d.logRT != "" && filepath.Dir(d.logRT) != dir {
			d.logRT = "" // written elsewhere (-opts LOGPATH=): not looked for
		}
		best = d
	}
	return best
}

func statOf(fi os.FileInfo, err error) (*syscall.Stat_t, bool) {
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// readDeath reads a log-msg (lines of time, level, message and fields,
// tab-separated; one file for every JVM of the pid that jprof loaded the
// agent into) for its last JVM's VM death, and what the agent wrote or
// said then. It is read only if it is a regular file of uid's once open:
// uid owns the directory, and may have put a link or a FIFO there.
func readDeath(path string, uid int) *deathRecord {
	b, err := ownedfile.ReadFile(path, uid)
	if err != nil {
		return nil
	}
	var d *deathRecord
	var logRT, nothing string
	var loaded time.Time
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) < 3 {
			continue
		}
		msg := f[2]
		if len(f) == 4 && (msg == "rtdriver" || msg == "attach") {
			// A named logger's field comes before the message.
			msg, f[3], _ = strings.Cut(f[3], "\t")
		}
		switch {
		case msg == "libjprof loaded":
			// A later JVM of the pid: what came before was another's.
			d, logRT, nothing = nil, "", ""
			loaded, _ = time.Parse(time.RFC3339Nano, f[0])
		case msg == "final log-rt written" && len(f) == 4:
			if m := fileField.FindStringSubmatch(f[3]); m != nil {
				logRT = m[1]
			}
		case strings.HasPrefix(msg, "nothing collected"):
			nothing = msg
		case msg == "VM death":
			at, err := time.Parse(time.RFC3339Nano, f[0])
			if err == nil {
				d = &deathRecord{at: at, loaded: loaded, logRT: logRT, nothing: nothing}
			}
		}
	}
	return d
}

var fileField = regexp.MustCompile(`"file": "([^"]+)"`)
