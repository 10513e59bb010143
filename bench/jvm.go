package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// jvmRun is one java invocation.
type jvmRun struct {
	Agent   string   // agent library; "" runs without one
	Options string   // agent options (libjprof: LOGPATH is added here)
	JVMArgs []string // before the main class
	Main    []string // main class or -m module/class, then program arguments
	Dir     string   // working directory, and libjprof's LOGPATH
	Env     []string // added to the environment, KEY=VALUE
	// Sample, if set, is called about every sampleEvery while the JVM
	// runs, with its pid.
	Sample func(pid int)
}

const sampleEvery = 100 * time.Millisecond

// gnuTime measures a child's peak RSS (see runJVM).
const gnuTime = "/usr/bin/time"

// jvmResult is what a run left behind.
type jvmResult struct {
	Stdout, Stderr string
	Wall           time.Duration
	// MaxRSS is the JVM's peak resident set in bytes, from GNU time (see
	// runJVM) or else ru_maxrss from
	// wait4, which the kernel keeps as a high-water mark, so it is exact
	// where sampling /proc/<pid>/status could miss a short peak.
	MaxRSS int64
	CPU    time.Duration // user + system time of the whole JVM
	PID    int
	Dir    string
}

// runJVM runs r to completion. A JVM that exits non-zero is an error
// carrying the end of its stderr: the caller decides whether that means
// "skip this configuration" or "fail".
func runJVM(ctx context.Context, java string, r jvmRun, timeout time.Duration) (*jvmResult, error) {
	var args []string
	if r.Agent != "" {
		a := "-agentpath:" + r.Agent
		if r.Options != "" {
			a += "=" + r.Options
		}
		args = append(args, a)
	}
	args = append(args, r.JVMArgs...)
	args = append(args, r.Main...)

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Linux keeps a process's peak RSS across exec, and a child started
	// by this (large) Go process starts from this process's peak: wait4's
	// ru_maxrss of the JVM would be at least the harness's own. GNU time
	// forks from a small process and reports its child's real peak.
	prog := java
	var rssFile string
	before := map[string]bool{}
	if r.Dir != "" {
		old, _ := filepath.Glob(filepath.Join(r.Dir, "log-msg_*"))
		for _, f := range old {
			before[f] = true
		}
	}
	if _, err := os.Stat(gnuTime); err == nil && r.Dir != "" {
		rssFile = filepath.Join(r.Dir, ".maxrss")
		prog, args = gnuTime, append([]string{"-f", "%M", "-o", rssFile, java}, args...)
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = r.Dir
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Start()
	if err == nil {
		err = wait(cmd, r.Sample)
	}
	res := &jvmResult{Stdout: stdout.String(), Stderr: stderr.String(), Wall: time.Since(t0), Dir: r.Dir}
	if cmd.ProcessState != nil {
		res.PID = cmd.ProcessState.Pid()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSS = ru.Maxrss * 1024 // KiB on Linux
			res.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	if rssFile != "" {
		// The JVM is time's child: its pid names libjprof's files.
		res.PID = 0
		m, _ := filepath.Glob(filepath.Join(r.Dir, "log-msg_*"))
		for _, f := range m {
			if !before[f] {
				res.PID, _ = strconv.Atoi(f[strings.LastIndex(f, "_")+1:])
			}
		}
		if b, err := os.ReadFile(rssFile); err == nil {
			if kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				res.MaxRSS = kb * 1024
			}
		}
		os.Remove(rssFile)
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("java %s: timed out after %v", short(r.Main), timeout)
	}
	if err != nil {
		// The JVM reports a bad -agentpath on stdout.
		why := tail(res.Stderr, 3)
		if why == "" {
			why = tail(res.Stdout, 3)
		}
		return res, fmt.Errorf("java %s: %w: %s", short(r.Main), err, why)
	}
	return res, nil
}

// wait waits for cmd, calling sample with its pid meanwhile.
func wait(cmd *exec.Cmd, sample func(pid int)) error {
	if sample == nil {
		return cmd.Wait()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			sample(jvmPID(cmd.Process.Pid))
		}
	}
}

// jvmPID is the JVM's pid when pid is GNU time running it (its only
// child), else pid.
func jvmPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return pid
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		if c, err := strconv.Atoi(f[0]); err == nil {
			return c
		}
	}
	return pid
}

// vmRSS is the resident set of process pid now, in bytes (0 if it is gone).
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// short abbreviates a command line for an error message.
func short(args []string) string {
	if len(args) > 4 {
		return strings.Join(args[:4], " ") + " …"
	}
	return strings.Join(args, " ")
}

// tail returns the last n non-empty lines of s, joined by " | ".
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// file is the path of one of libjprof's files in the run's LOGPATH.
func (r *jvmResult) file(kind string) string {
	return filepath.Join(r.Dir, fmt.Sprintf("log-%s_%d", kind, r.PID))
}

var backendRE = regexp.MustCompile(`PTT ready.*"backend": "(\w+)"`)

// backend is the PTT backend libjprof's log-msg says it chose.
func (r *jvmResult) backend() (string, error) {
	b, err := os.ReadFile(r.file("msg"))
	if err != nil {
		return "", fmt.Errorf("log-msg: %w", err)
	}
	m := backendRE.FindSubmatch(b)
	if m == nil {
		return "", errors.New("log-msg names no PTT backend")
	}
	return string(m[1]), nil
}

// warmBCICache runs a configuration with BCICache once, untimed, so that
// the part's timed runs read their classes from the cache it fills (in
// tmp, where the runs' own directories are made).
func warmBCICache(ctx context.Context, o *Options, java, tmp string, c Config, main ...string) error {
	if !c.BCICache {
		return nil
	}
	dir, err := os.MkdirTemp(tmp, c.Key+"-warm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := runJVM(ctx, java, c.run(o, dir, main...), o.Timeout); err != nil {
		return fmt.Errorf("filling its BCICACHE: %w", err)
	}
	return nil
}
