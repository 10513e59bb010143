package attach

// Helpers that run real JVMs for the tests.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type jdk struct{ name, home string }

var allJDKs = []jdk{
	{"jdk17", "/usr/lib/jvm/java-17-openjdk-amd64"},
	{"jdk25", "/usr/lib/jvm/temurin-25-jdk-amd64"},
}

func (j jdk) java() string { return filepath.Join(j.home, "bin", "java") }

// major is the feature version, "17" or "25".
func (j jdk) major() string { return strings.TrimPrefix(j.name, "jdk") }

// shared is a 0755 directory under /tmp for what the tests build once:
// compiled classes, the test agent (in the 0700 private/) and a copy of
// the test binary. TestMain removes it.
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "attachtest-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// forEachJDK runs f as a parallel subtest for each installed JDK.
func forEachJDK(t *testing.T, f func(t *testing.T, j jdk)) {
	for _, j := range allJDKs {
		t.Run(j.name, func(t *testing.T) {
			if _, err := os.Stat(j.java()); err != nil {
				t.Skipf("%s is not installed (%v)", j.name, err)
			}
			t.Parallel()
			f(t, j)
		})
	}
}

// firstJDK returns an installed JDK or skips.
func firstJDK(t *testing.T) jdk {
	for _, j := range allJDKs {
		if _, err := os.Stat(j.java()); err == nil {
			return j
		}
	}
	t.Skip("no JDK installed (looked for 17 and 25 under /usr/lib/jvm)")
	return jdk{}
}

var (
	buildMu   sync.Mutex
	built     = map[string]string{}
	builtErrs = map[string]error{}
)

// once runs build once per key for the test binary and returns its
// result.
func once(t *testing.T, key string, build func() (string, error)) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, ok := built[key]; !ok {
		built[key], builtErrs[key] = build()
	}
	if builtErrs[key] != nil {
		t.Fatal(builtErrs[key])
	}
	return built[key]
}

// sleeperClass compiles testdata/Sleeper.java (and PerfMapper.java) with
// j's javac and returns Sleeper's class file.
func sleeperClass(t *testing.T, j jdk) string {
	return once(t, "class-"+j.name, func() (string, error) {
		dir := filepath.Join(shared, "classes-"+j.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		out, err := exec.Command(filepath.Join(j.home, "bin", "javac"), "-d", dir, "testdata/Sleeper.java", "testdata/PerfMapper.java").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("javac: %v\n%s", err, out)
		}
		return filepath.Join(dir, "Sleeper.class"), nil
	})
}

// testAgent builds testdata/agent.c into a directory only root can read.
func testAgent(t *testing.T) string {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed: cannot build the test agent")
	}
	return once(t, "agent", func() (string, error) {
		dir := filepath.Join(shared, "private")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		so := filepath.Join(dir, "agent.so")
		out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-o", so, "testdata/agent.c").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("gcc: %v\n%s", err, out)
		}
		return so, nil
	})
}

// jvmDir makes a fresh 0755 directory holding Sleeper.class (and
// PerfMapper.class), to be the JVM's working directory and class path.
func jvmDir(t *testing.T, j jdk) string {
	class := sleeperClass(t, j)
	dir, err := os.MkdirTemp(shared, "jvm-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Sleeper.class", "PerfMapper.class"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(class), name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jvmArgs are the java arguments that run Sleeper from the working
// directory, made to start fast.
func jvmArgs(j jdk, extra ...string) []string {
	args := []string{j.java(), "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	args = append(args, extra...)
	return append(args, "-cp", ".", "Sleeper")
}

// lockedBuffer collects a JVM's output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runJVM starts cmd (java, or a wrapper that ends up running java),
// waits for Sleeper's "ready" and returns the java process's pid. The
// JVM and its wrappers are killed when the test ends.
func runJVM(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var output lockedBuffer
	cmd.Stderr = &output
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	javaPid := 0
	t.Cleanup(func() {
		// SIGTERM first, so that the JVM removes its attach socket.
		if javaPid > 0 && syscall.Kill(javaPid, syscall.SIGTERM) == nil {
			for i := 0; i < 100 && syscall.Kill(javaPid, 0) == nil && !zombie(javaPid); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			syscall.Kill(javaPid, syscall.SIGKILL)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			output.Write(append(sc.Bytes(), '\n'))
			if sc.Text() == "ready" {
				close(ready)
				break
			}
		}
		io.Copy(&output, stdout) // thread dumps (SIGQUIT) go here
	}()
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("%v exited before \"ready\"; output:\n%s", cmd.Args, output.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: no \"ready\" in 30 s; output:\n%s", cmd.Args, output.String())
	}
	javaPid = findJava(cmd.Process.Pid)
	if javaPid == 0 {
		t.Fatalf("%v: no java process under pid %d", cmd.Args, cmd.Process.Pid)
	}
	// An earlier JVM of this pid that was killed left its attach socket
	// (make test starts so many threads that pids wrap): one of another
	// user's is refused, as it must be (TestOtherUser). Not this JVM's:
	// it opens its socket only when an attach asks.
	os.Remove(fmt.Sprintf("/tmp/.java_pid%d", javaPid))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("JVM %d output:\n%s", javaPid, output.String())
		}
	})
	return javaPid
}

// findJava returns the process at or below root whose executable is
// java.
func findJava(root int) int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(exe) == "java" {
			return pid
		}
		queue = append(queue, children[pid]...)
	}
	return 0
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || bytes.HasPrefix(b[i+1:], []byte(" Z"))
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}
