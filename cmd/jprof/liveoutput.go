package main

// What the live commands write: a profile's log-rt, converted where jprof
// runs into the output -o names; and what they do when the JVM exits
// in the middle of a profile.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
		err = writeJLMOutput(host, out, stdout)
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
// with the log-rt; a directory gets the log-jlm itself.
func writeJLMOutput(logrt, out string, stdout io.Writer) error {
	src := jlmPath(logrt)
	if _, err := os.Stat(src); err != nil {
		return nil
	}
	if isDirOut(out) {
		dst := filepath.Join(out, filepath.Base(src))
		if err := copyFile(src, dst); err != nil {
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
	if err := reportJLM(src, "gets", dst, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "jprof: wrote %s (the lock monitor, from %s)\n", dst, src)
	return nil
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

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return output(dst, nil, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// targetGone is the JVM's exit in the middle of a profile: its agent
// wrote a final log-rt at VM death if the JVM shut down normally, which
// is still there unless it was in a container's /tmp that went with it.
func targetGone(lt *liveTarget, since time.Time, out string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stderr, "jprof: pid %d exited during the profile\n", lt.t.PID)
	if path := finalLogRT(lt, since); path != "" {
		fmt.Fprintf(stderr, "jprof: its agent wrote a final log-rt at VM death: %s (converted below)\n", path)
		if err := writeOutput(lt, path, out, stdout, stderr); err != nil {
			return err
		}
		return fmt.Errorf("pid %d exited before the profile ended: the profile covers its run until then", lt.t.PID)
	}
	if why := nothingCollected(lt); why != "" {
		return fmt.Errorf("pid %d exited before the profile ended, and its agent wrote no final log-rt: %s", lt.t.PID, why)
	}
	return fmt.Errorf("pid %d exited before the profile ended, and its agent left no final log-rt (killed, or its /tmp went with it): nothing written", lt.t.PID)
}

// nothingCollected is why the agent wrote no log-rt at VM death, as its
// log-msg says ("nothing collected: ..."), or "".
func nothingCollected(lt *liveTarget) string {
	if lt.logs == "" {
		return ""
	}
	b, err := os.ReadFile(lt.t.Path(filepath.Join(lt.logs, fmt.Sprintf("log-msg_%d", lt.t.NSPid))))
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		// time, level, message, fields: tab-separated.
		if j := strings.Index(lines[i], "nothing collected"); j >= 0 {
			msg, _, _ := strings.Cut(lines[i][j:], "\t")
			return msg
		}
	}
	return ""
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
