package jvmtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libjprof/libjprof/reports"
)

// Root is the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

var (
	buildOnce sync.Once
	buildErr  error
)

// Build runs make for the agent and the Java workloads, once per process.
func Build(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("make", "-s", "-C", Root(), "agent", "java", "cmds")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("make agent java cmds: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
}

// Agent is the path of the built libjprof.so.
func Agent() string { return filepath.Join(Root(), "build", "libjprof.so") }

// Run describes one JVM run.
type Run struct {
	Class   string   // main class in build/java
	Args    []string // program arguments
	Options string   // agent options; LOGPATH is added unless it is set here. "-" runs without the agent.
	Env     []string // extra environment, KEY=VALUE
	JVMArgs []string // extra JVM arguments before the class
	// ClassPath holds extra class path entries, before build/java
	// (OnlyClassPath: instead of it).
	ClassPath     []string
	OnlyClassPath bool
	// Prefix runs java through another command (e.g. setpriv to drop
	// capabilities): Prefix[0] is the program, the rest its arguments.
	Prefix []string
	// Java is the java to run; Java() if empty.
	Java    string
	Timeout time.Duration
}

// Result is what a run left behind.
type Result struct {
	Dir      string // LOGPATH
	Stdout   string
	Stderr   string
	ExitCode int
	PID      int
}

// Dir is the run's LOGPATH.
func (p *Proc) Dir() string { return p.res.Dir }

// Proc is a JVM running in the background.
type Proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	cancel context.CancelFunc
	ctx    context.Context
	stdin  io.WriteCloser
	lines  chan string // the program's stdout, line by line
	stdout strings.Builder
	stderr bytes.Buffer
	res    *Result
	mu     sync.Mutex
}

// Launch starts r in the background; the JVM is killed when the test ends
// if it has not been waited for.
func Launch(t testing.TB, r Run) *Proc {
	t.Helper()
	Build(t)
	// Not t.TempDir(): subtest names may hold commas, and a comma in
	// LOGPATH would split the agent's option string.
	dir, err := os.MkdirTemp("", "jprof-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	args := []string{}
	if r.Options != "-" {
		opts := r.Options
		if !strings.Contains(strings.ToUpper(opts), "LOGPATH=") {
			if opts != "" {
				opts += ","
			}
			opts += "LOGPATH=" + dir
		}
		args = append(args, "-agentpath:"+Agent()+"="+opts)
	}
	args = append(args, "-Djava.library.path="+filepath.Join(Root(), "build", "native"))
	args = append(args, r.JVMArgs...)
	cp := append([]string(nil), r.ClassPath...)
	if !r.OnlyClassPath {
		cp = append(cp, filepath.Join(Root(), "build", "java"))
	}
	args = append(args, "-cp", strings.Join(cp, string(os.PathListSeparator)), r.Class)
	args = append(args, r.Args...)
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	p := &Proc{t: t, lines: make(chan string, 1024), res: &Result{Dir: dir}}
	p.ctx, p.cancel = context.WithTimeout(context.Background(), timeout)
	prog := r.Java
	if prog == "" {
		prog = Java()
	}
	if len(r.Prefix) > 0 {
		prog, args = r.Prefix[0], append(append(append([]string(nil), r.Prefix[1:]...), prog), args...)
	}
	p.cmd = exec.CommandContext(p.ctx, prog, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), r.Env...)
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now().Add(-time.Second) // file times are coarser than the clock
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("java %s: %v", r.Class, err)
	}
	p.res.PID = p.cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		p.cancel()
		_ = p.cmd.Wait()
		// What an attach by jprof wrote for this JVM in its directory
		// (log-msg, log-rt the test did not convert) and its control
		// socket's directory: one run's files would otherwise stay
		// there, hundreds after a make test. Only files written since
		// it started: the pid may be an earlier process's too.
		left, _ := filepath.Glob(fmt.Sprintf("/tmp/jprof-%d/*_%d", os.Geteuid(), p.res.PID))
		ctl, _ := filepath.Glob(fmt.Sprintf("/tmp/.libjprof-%d/%d.*", os.Geteuid(), p.res.PID))
		// The JVM's attach socket, which a killed JVM leaves: a later
		// process of the same pid (pids wrap in a make test) would find
		// it, another user's JVM refused for it.
		ctl = append(ctl, fmt.Sprintf("/tmp/.java_pid%d", p.res.PID))
		for _, f := range append(left, ctl...) {
			if fi, err := os.Lstat(f); err == nil && !fi.ModTime().Before(started) {
				os.Remove(f)
			}
		}
	})
	return p
}

// Send writes a line to the program's stdin.
func (p *Proc) Send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("send %q: %v", line, err)
	}
}

// Expect waits for the next stdout line and checks it.
func (p *Proc) Expect(want string) {
	p.t.Helper()
	select {
	case got, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("program ended while waiting for %q\nstderr:\n%s", want, p.stderr.String())
		}
		if got != want {
			p.t.Fatalf("program said %q, want %q", got, want)
		}
	case <-time.After(time.Minute):
		p.t.Fatalf("timed out waiting for %q", want)
	}
}

// Line returns the program's next stdout line, or false if it ended or
// none came within d.
func (p *Proc) Line(d time.Duration) (string, bool) {
	select {
	case l, ok := <-p.lines:
		return l, ok
	case <-time.After(d):
		return "", false
	}
}

// Fresh drops the stdout lines already printed and returns the next one
// printed from now on (false if none within d).
func (p *Proc) Fresh(d time.Duration) (string, bool) {
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return "", false
			}
			_ = l
			continue
		default:
		}
		return p.Line(d)
	}
}

// lockedWriter lets Stderr read what the JVM wrote so far.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Stderr is what the running JVM has written on its stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Wait closes stdin, waits for the JVM to exit and returns its result.
func (p *Proc) Wait() *Result {
	p.t.Helper()
	p.stdin.Close()
	for range p.lines {
	}
	err := p.cmd.Wait()
	if p.ctx.Err() != nil {
		p.t.Fatalf("java timed out\nstderr:\n%s", p.stderr.String())
	}
	if err != nil && p.cmd.ProcessState == nil {
		p.t.Fatal(err)
	}
	p.res.ExitCode = p.cmd.ProcessState.ExitCode()
	p.mu.Lock()
	p.res.Stdout = p.stdout.String()
	p.res.Stderr = p.stderr.String()
	p.mu.Unlock()
	return p.res
}

// Result is the run's result so far (files can be read while it runs).
func (p *Proc) Result() *Result { return p.res }

// Start runs r to completion and returns its result; it fails the test
// only if the JVM could not be started or timed out.
func Start(t testing.TB, r Run) *Result {
	t.Helper()
	return Launch(t, r).Wait()
}

// File is the path of one of the agent's files, e.g. File("rt.1").
func (r *Result) File(kind string) string {
	return filepath.Join(r.Dir, fmt.Sprintf("log-%s_%d", kind, r.PID))
}

// ReadFile returns the content of one of the agent's files.
func (r *Result) ReadFile(t testing.TB, kind string) string {
	t.Helper()
	b, err := os.ReadFile(r.File(kind))
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, r.Stderr)
	}
	return string(b)
}

// LogRT parses log-rt.<seq>_<pid>.
func (r *Result) LogRT(t testing.TB, seq int) *reports.Profile {
	t.Helper()
	return ParseLogRT(t, r.File(fmt.Sprintf("rt.%d", seq)))
}

// ParseLogRT parses the log-rt file at path, failing the test if it cannot.
func ParseLogRT(t testing.TB, path string) *reports.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := reports.ParseLogRT(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// Threads finds the roots of all threads whose name starts with prefix.
func Threads(p *reports.Profile, prefix string) []*reports.Node {
	var out []*reports.Node
	for _, th := range p.Threads {
		if strings.HasPrefix(reports.ThreadName(th.Name), prefix) {
			out = append(out, th)
		}
	}
	return out
}

// Tool is the path of a built command, e.g. Tool("jprof").
func Tool(name string) string { return filepath.Join(Root(), "build", "bin", name) }

// cLib is a shared library the tests build from C once per process.
type cLib struct {
	what, src, name string          // what it is (for errors), source under internal/jvmtest, file name
	flags           func() []string // gcc flags before -o, or nil
	libs            []string        // after the source
	once            sync.Once
	path            string
	err             error
}

func (l *cLib) build(t testing.TB) string {
	t.Helper()
	l.once.Do(func() {
		dir, err := os.MkdirTemp("", "jprof-"+strings.TrimSuffix(l.name, ".so")+"-")
		if err != nil {
			l.err = err
			return
		}
		l.path = filepath.Join(dir, l.name)
		args := []string{"-O2", "-shared", "-fPIC"}
		if l.flags != nil {
			args = append(args, l.flags()...)
		}
		args = append(args, "-o", l.path,
			filepath.Join(Root(), "internal", "jvmtest", l.src))
		out, err := exec.Command("gcc", append(args, l.libs...)...).CombinedOutput()
		if err != nil {
			l.err = fmt.Errorf("building the %s: %v\n%s", l.what, err, out)
		}
	})
	if l.err != nil {
		t.Fatal(l.err)
	}
	return l.path
}

var (
	countAgent = &cLib{what: "counting agent", src: "countagent/count.c", name: "count.so", libs: []string{"-lpthread"},
		flags: func() []string { // the JDK's jni.h and jvmti.h
			jh := filepath.Dir(filepath.Dir(Java()))
			return []string{"-I" + filepath.Join(jh, "include"), "-I" + filepath.Join(jh, "include", "linux")}
		}}
	faultShim = &cLib{what: "fault shim", src: "faultshim/faults.c", name: "faults.so", libs: []string{"-ldl"}}
)

// CountAgent builds the independent counting agent (countagent/count.c)
// once per process and returns its path: "-agentpath:<path>=<out file>"
// writes "<calls> <method>" lines at VM death.
func CountAgent(t testing.TB) string { return countAgent.build(t) }

// FaultShim builds the test-only LD_PRELOAD shim (faultshim/faults.c)
// once per process and returns its path: run a JVM with
// LD_PRELOAD=<path> and the environment variables the shim documents
// make rare conditions of libjprof.so happen (a delayed trylock, a
// refused perf_event_open).
func FaultShim(t testing.TB) string { return faultShim.build(t) }

// Java is the java the tests run: $JAVA_HOME/bin/java when JAVA_HOME is
// set, else the java on PATH, resolved to its real path.
func Java() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if p := filepath.Join(h, "bin", "java"); isExec(p) {
			return realPath(p)
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "/usr/lib/jvm/default-java/bin/java"
	}
	return realPath(p)
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// JDK is one Java installation the tests can run on.
type JDK struct {
	Name string // the directory's name, e.g. temurin-25-jdk-amd64
	Home string // for JAVA_HOME
	Java string // its bin/java
}

// jvmDir is where Debian and the Temurin packages install JDKs.
const jvmDir = "/usr/lib/jvm"

// JDKs is every JDK the tests run their key JVM tests on: the one Java()
// names first, then each other JDK in /usr/lib/jvm (symlinked aliases
// counted once). The build's classes target Java 17, the oldest.
func JDKs() []JDK {
	seen := map[string]bool{}
	var out []JDK
	add := func(java string) {
		java = realPath(java)
		if seen[java] || !isExec(java) {
			return
		}
		seen[java] = true
		home := filepath.Dir(filepath.Dir(java))
		out = append(out, JDK{Name: filepath.Base(home), Home: home, Java: java})
	}
	add(Java())
	entries, _ := os.ReadDir(jvmDir)
	for _, e := range entries {
		add(filepath.Join(jvmDir, e.Name(), "bin", "java"))
	}
	return out
}

// OnOtherJDKs runs each test again on every JDK but the first of JDKs
// (which every test runs on), as subtests with JAVA_HOME set to it.
func OnOtherJDKs(t *testing.T, tests map[string]func(*testing.T)) {
	jdks := JDKs()
	if len(jdks) < 2 {
		t.Skipf("no JDK besides %s", Java())
	}
	names := make([]string, 0, len(tests))
	for n := range tests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, jdk := range jdks[1:] {
		t.Run(jdk.Name, func(t *testing.T) {
			t.Setenv("JAVA_HOME", jdk.Home)
			for _, n := range names {
				t.Run(n, tests[n])
			}
		})
	}
}

// Counts reads the counting agent's output: calls per method name.
func Counts(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		n, name, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		var c uint64
		fmt.Sscan(n, &c)
		out[name] += c
	}
	return out
}
