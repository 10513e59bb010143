package attach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustOpen(t *testing.T, pid int) *Target {
	t.Helper()
	tg, err := Open(pid)
	if err != nil {
		t.Fatalf("Open(%d): %v", pid, err)
	}
	return tg
}

// noTriggerLeft fails if an .attach_pid file for tg is left behind.
func noTriggerLeft(t *testing.T, tg *Target) {
	t.Helper()
	name := fmt.Sprintf(".attach_pid%d", tg.NSPid)
	for _, p := range []string{procPath(tg.PID, "cwd") + "/" + name, tg.Path("/tmp/" + name)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("trigger file %s left behind", p)
		}
	}
}

// TestOpenList: Open and List describe a JVM; Open refuses a process
// that is not a JVM and a pid that does not exist.
func TestOpenList(t *testing.T) {
	forEachJDK(t, func(t *testing.T, j jdk) {
		dir := jvmDir(t, j)
		cmd := exec.Command(jvmArgs(j)[0], jvmArgs(j)[1:]...)
		cmd.Dir = dir
		pid := runJVM(t, cmd)
		tg := mustOpen(t, pid)
		if tg.PID != pid || tg.NSPid != pid || tg.UID != os.Geteuid() || tg.GID != os.Getegid() ||
			!tg.SameMountNS || tg.MainClass != "Sleeper" || tg.Cmdline[0] != j.java() || tg.NoAttach {
			t.Errorf("Open(%d) = %+v", pid, tg)
		}
		// Its hsperfdata is read, and says it may be attached to.
		if caps, ok := tg.readCapabilities(); !ok || !strings.HasPrefix(caps, "1") {
			t.Errorf("sun.rt.jvmCapabilities of %s: %q, %v (%+v)", tg, caps, ok, tg.perf)
		}
		if p := tg.Path("/tmp/x"); p != "/tmp/x" {
			t.Errorf("Path(/tmp/x) = %s in the same mount namespace", p)
		}
		list, err := List()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for i, l := range list {
			if i > 0 && list[i-1].PID >= l.PID {
				t.Errorf("List not sorted: %d before %d", list[i-1].PID, l.PID)
			}
			if l.PID == pid {
				found = true
				if l.MainClass != "Sleeper" {
					t.Errorf("List: pid %d has main class %q", pid, l.MainClass)
				}
			}
			if l.PID == os.Getpid() {
				t.Errorf("List holds the test process")
			}
		}
		if !found {
			t.Errorf("List() has no pid %d: %+v", pid, list)
		}
	})
}

func TestOpenNotJVM(t *testing.T) {
	sleep := exec.Command("sleep", "100")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleep.Process.Kill(); sleep.Wait() })
	_, err := Open(sleep.Process.Pid)
	want := fmt.Sprintf("pid %d (sleep) is not a HotSpot JVM: no libjvm.so in /proc/%d/maps", sleep.Process.Pid, sleep.Process.Pid)
	if !errors.Is(err, ErrNotJVM) || err.Error() != want {
		t.Errorf("Open(sleep) = %v, want %q", err, want)
	}

	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dead.Process.Pid)
	want = fmt.Sprintf("pid %d does not exist", dead.Process.Pid)
	if !errors.Is(err, ErrNoProcess) || err.Error() != want {
		t.Errorf("Open(dead pid) = %v, want %q", err, want)
	}
	if _, err := Open(0); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Open(0) = %v", err)
	}
}

// TestAttach: operations and agent loading on a JVM of the caller's own
// mount namespace.
func TestAttach(t *testing.T) {
	agent := testAgent(t)
	forEachJDK(t, func(t *testing.T, j jdk) {
		dir := jvmDir(t, j)
		cmd := exec.Command(jvmArgs(j)[0], jvmArgs(j)[1:]...)
		cmd.Dir = dir
		tg := mustOpen(t, runJVM(t, cmd))
		ctx := ctxFor(t, 20*time.Second)
		sock := fmt.Sprintf("/tmp/.java_pid%d", tg.PID)
		if _, err := os.Lstat(sock); err == nil {
			t.Fatalf("%s exists before the first attach", sock)
		}

		// First attach: starts the listener.
		props, err := tg.Execute(ctx, "properties")
		if err != nil {
			t.Fatalf("properties: %v", err)
		}
		if !strings.Contains(props, "java.version="+j.major()) {
			t.Errorf("properties has no java.version=%s...:\n%.500s", j.major(), props)
		}
		noTriggerLeft(t, tg)
		if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
			t.Errorf("after the first attach: %v, %v", fi, err)
		}

		// Second attach: the socket is there.
		version, err := tg.Execute(ctx, "jcmd", "VM.version")
		if err != nil {
			t.Fatalf("jcmd VM.version: %v", err)
		}
		if !strings.Contains(version, "JDK "+j.major()) {
			t.Errorf("VM.version says:\n%s", version)
		}

		_, err = tg.Execute(ctx, "nosuchop")
		var re *ReplyError
		if !errors.As(err, &re) || re.Status == 0 || !strings.Contains(err.Error(), "Operation nosuchop not recognized") {
			t.Errorf("nosuchop: %v", err)
		}

		// Agents. The JVM runs as root, so Stage leaves the agent
		// where it is.
		stageDir, err := tg.Stage(agent)
		if err != nil || stageDir != filepath.Dir(agent) {
			t.Fatalf("Stage(%s) = %s, %v; want its own directory", agent, stageDir, err)
		}
		marker := filepath.Join(t.TempDir(), "marker")
		if err := tg.LoadAgent(ctx, filepath.Join(stageDir, "agent.so"), "0:"+marker); err != nil {
			t.Errorf("LoadAgent: %v", err)
		} else if b, err := os.ReadFile(marker); err != nil || string(b) != "attached\n" {
			t.Errorf("Agent_OnAttach left %q, %v", b, err)
		}

		err = tg.LoadAgent(ctx, agent, "1")
		if err == nil || !strings.Contains(err.Error(), "Agent_OnAttach failed with return code 1") {
			t.Errorf("LoadAgent returning 1: %v", err)
		}

		missing := filepath.Join(dir, "no-such-agent.so")
		err = tg.LoadAgent(ctx, missing, "")
		if err == nil || !strings.Contains(err.Error(), "could not load "+missing) ||
			!strings.Contains(err.Error(), "No such file or directory") {
			t.Errorf("LoadAgent of a missing file: %v", err)
		}

		if libm := "/lib/x86_64-linux-gnu/libm.so.6"; fileExists(libm) {
			err = tg.LoadAgent(ctx, libm, "")
			if err == nil || !strings.Contains(err.Error(), "no Agent_OnAttach function") {
				t.Errorf("LoadAgent of libm: %v", err)
			}
		}
		if err := tg.LoadAgent(ctx, "agent.so", ""); err == nil {
			t.Errorf("LoadAgent of a relative path succeeded")
		}
		t.Logf("errors on %s:\n%v\n%v", j.name, tg.LoadAgent(ctx, agent, "7"), tg.LoadAgent(ctx, missing, ""))
	})
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestPerfDataOfAnotherJVM: a JVM that maps another JVM's hsperfdata,
// as monitoring tools do (VisualVM, jconsole, anything that calls
// VirtualMachine.list()), is judged by its own file, the one named by its
// PID: one that maps the file of a JVM started with
// -XX:+DisableAttachMechanism is not refused, and is attached to; one
// without hsperfdata of its own (-XX:-UsePerfData) cannot be told, as
// any such JVM.
func TestPerfDataOfAnotherJVM(t *testing.T) {
	j := firstJDK(t)
	args := jvmArgs(j, "-XX:+DisableAttachMechanism")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = jvmDir(t, j)
	monitored := mustOpen(t, runJVM(t, cmd))
	if !monitored.NoAttach || monitored.perf.path == "" {
		t.Fatalf("the JVM with -XX:+DisableAttachMechanism: %+v", monitored)
	}
	file := monitored.Path(monitored.perf.path)
	for name, extra := range map[string][]string{"with its own": nil, "without its own": {"-XX:-UsePerfData"}} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{j.java(), "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, extra...)
			args = append(args, "-cp", ".", "PerfMapper", file)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = jvmDir(t, j)
			tg := mustOpen(t, runJVM(t, cmd))
			maps, err := os.ReadFile(procPath(tg.PID, "maps"))
			if err != nil || !strings.Contains(string(maps), file) {
				t.Fatalf("PerfMapper has not mapped %s: %v", file, err)
			}
			if tg.NoAttach {
				t.Errorf("Open: NoAttach for a JVM that only maps another's hsperfdata (%+v)", tg.perf)
			}
			if want := strconv.Itoa(tg.NSPid); extra == nil && filepath.Base(tg.perf.path) != want {
				t.Errorf("its hsperfdata: %+v, want the file named %s", tg.perf, want)
			}
			if err := tg.CheckAttachable(); err != nil {
				t.Errorf("CheckAttachable: %v", err)
			}
			if _, err := tg.Execute(ctxFor(t, 20*time.Second), "properties"); err != nil {
				t.Errorf("properties: %v", err)
			}
		})
	}
}

// TestRefusingJVMs: a JVM without an attach mechanism is refused at
// once, before any SIGQUIT (which would only make it print thread dumps),
// as its hsperfdata says (jcmd refuses it the same way); one without
// hsperfdata (-XX:-UsePerfData) makes Execute give up at the context's
// deadline, saying why; neither is harmed. A JDK 25 JVM that refuses
// dynamic agents makes LoadAgent say so.
func TestRefusingJVMs(t *testing.T) {
	forEachJDK(t, func(t *testing.T, j jdk) {
		args := jvmArgs(j, "-XX:+DisableAttachMechanism")
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = jvmDir(t, j)
		tg := mustOpen(t, runJVM(t, cmd))
		if !tg.NoAttach {
			t.Errorf("Open: NoAttach is false for a JVM with -XX:+DisableAttachMechanism")
		}
		start := time.Now()
		_, err := tg.Execute(ctxFor(t, 10*time.Second), "properties")
		if took := time.Since(start); took > time.Second {
			t.Errorf("Execute on a JVM without attach took %v: it waited instead of refusing at once", took)
		}
		if !errors.Is(err, ErrNoAttach) || !strings.Contains(err.Error(), "does not support the attach mechanism") ||
			!strings.Contains(err.Error(), "-XX:+DisableAttachMechanism") {
			t.Errorf("Execute on a JVM without attach: %v", err)
		}
		noTriggerLeft(t, tg)
		if !tg.alive() {
			t.Errorf("the JVM died of the attempt")
		}

		// Without hsperfdata nothing says so: the attach is tried.
		args = jvmArgs(j, "-XX:+DisableAttachMechanism", "-XX:-UsePerfData")
		cmd = exec.Command(args[0], args[1:]...)
		cmd.Dir = jvmDir(t, j)
		tg = mustOpen(t, runJVM(t, cmd))
		if tg.NoAttach {
			t.Errorf("Open: NoAttach is true for a JVM without hsperfdata")
		}
		start = time.Now()
		_, err = tg.Execute(ctxFor(t, 1500*time.Millisecond), "properties")
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "did not open its attach socket") ||
			!strings.Contains(err.Error(), "DisableAttachMechanism") {
			t.Errorf("Execute on a JVM without attach nor hsperfdata: %v", err)
		}
		if took < 1400*time.Millisecond || took > 3*time.Second {
			t.Errorf("Execute gave up after %v, want about 1.5 s", took)
		}
		noTriggerLeft(t, tg)
		if !tg.alive() {
			t.Errorf("the JVM died of the attempt")
		}
		if j.major() != "25" {
			return
		}
		agent := testAgent(t)
		cmd = exec.Command(jvmArgs(j, "-XX:-EnableDynamicAgentLoading")[0], jvmArgs(j, "-XX:-EnableDynamicAgentLoading")[1:]...)
		cmd.Dir = jvmDir(t, j)
		tg = mustOpen(t, runJVM(t, cmd))
		err = tg.LoadAgent(ctxFor(t, 20*time.Second), agent, "0")
		if err == nil || !strings.Contains(err.Error(), "-XX:-EnableDynamicAgentLoading") {
			t.Errorf("LoadAgent into a JVM that refuses agents: %v", err)
		}
	})
}

// TestOtherUser: root attaches to a JVM that runs as nobody, from a
// directory nobody cannot write, and loads an agent that nobody could
// not read where it was built.
func TestOtherUser(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("runuser is not installed")
	}
	agent := testAgent(t)
	t.Cleanup(func() {
		dirs, _ := filepath.Glob("/tmp/" + stagePrefix + "65534-*")
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	})
	forEachJDK(t, func(t *testing.T, j jdk) {
		dir := jvmDir(t, j)
		args := append([]string{"-u", "nobody", "--"}, jvmArgs(j)...)
		cmd := exec.Command("runuser", args...)
		cmd.Dir = dir
		tg := mustOpen(t, runJVM(t, cmd))
		if tg.UID != 65534 || tg.MainClass != "Sleeper" {
			t.Fatalf("Open = %+v", tg)
		}
		ctx := ctxFor(t, 20*time.Second)
		props, err := tg.Execute(ctx, "properties")
		if err != nil {
			t.Fatalf("properties: %v", err)
		}
		if !strings.Contains(props, "user.name=nobody") {
			t.Errorf("properties has no user.name=nobody")
		}
		noTriggerLeft(t, tg)

		stageDir, err := tg.Stage(agent)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stageDir, "/tmp/"+stagePrefix+"65534-") {
			t.Fatalf("Stage = %s", stageDir)
		}
		for p, mode := range map[string]os.FileMode{stageDir: os.ModeDir | 0o755, stageDir + "/agent.so": 0o644} {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != mode || fi.Sys().(*syscall.Stat_t).Uid != 65534 {
				t.Errorf("%s: mode %v uid %d", p, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
			}
		}
		if again, err := tg.Stage(agent); err != nil || again != stageDir {
			t.Errorf("Stage again = %s, %v; want %s", again, err, stageDir)
		}
		out, err := os.MkdirTemp(shared, "out-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(out, 0o777)
		marker := filepath.Join(out, "marker")
		if err := tg.LoadAgent(ctx, stageDir+"/agent.so", "0:"+marker); err != nil {
			t.Fatalf("LoadAgent: %v", err)
		}
		fi, err := os.Stat(marker)
		if err != nil {
			t.Fatalf("no marker: %v", err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
			t.Errorf("the marker belongs to uid %d, not nobody", uid)
		}
	})
}

// unshareWorks says why the PID and mount namespace tests cannot run,
// or "".
func unshareWorks() string {
	if os.Geteuid() != 0 {
		return "needs root"
	}
	out, err := exec.Command("unshare", "--pid", "--mount", "--fork", "--mount-proc",
		"sh", "-c", "mount -t tmpfs tmpfs /tmp").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("unshare --pid --mount is not permitted here: %v: %s", err, out)
	}
	return ""
}

// inNewTmp is a shell script that runs its arguments with a fresh tmpfs
// on /tmp, in a working directory that is the script's own (a directory
// under the host's /tmp, bound onto /mnt before the tmpfs hides it).
const inNewTmp = `mount --bind "$PWD" /mnt && mount -t tmpfs tmpfs /tmp && cd /mnt && exec "$@"`

// TestNamespaceSharedTmp: a JVM in its own PID and mount namespace that
// kept this /tmp (unshare -fp --mount-proc): its paths under /tmp are
// this process's own, reachable after it exits (its final files), the
// rest through /proc/<pid>/root; it is attached through its socket
// there, named by its pid in its namespace.
func TestNamespaceSharedTmp(t *testing.T) {
	if why := unshareWorks(); why != "" {
		t.Skip(why)
	}
	j := firstJDK(t)
	args := append([]string{"--pid", "--fork", "--mount-proc"}, jvmArgs(j)...)
	cmd := exec.Command("unshare", args...)
	cmd.Dir = jvmDir(t, j)
	pid := runJVM(t, cmd)
	tg := mustOpen(t, pid)
	if tg.NSPid != 1 || tg.SameMountNS || !tg.TmpShared() {
		t.Fatalf("Open(%d) = %+v, TmpShared %v", pid, tg, tg.TmpShared())
	}
	for p, want := range map[string]string{
		"/tmp": "/tmp", "/tmp/jprof-0/log-rt.1_1": "/tmp/jprof-0/log-rt.1_1",
		"/tmpx": fmt.Sprintf("/proc/%d/root/tmpx", pid), "/etc/passwd": fmt.Sprintf("/proc/%d/root/etc/passwd", pid),
	} {
		if got := tg.Path(p); got != want {
			t.Errorf("Path(%s) = %s, want %s", p, got, want)
		}
	}
	if _, err := tg.Execute(ctxFor(t, 20*time.Second), "properties"); err != nil {
		t.Fatalf("properties: %v", err)
	}
	noTriggerLeft(t, tg)
}

// TestNamespaces: a JVM in its own PID and mount namespace, with a /tmp
// of its own, found by its host pid.
func TestNamespaces(t *testing.T) {
	if why := unshareWorks(); why != "" {
		t.Skip(why)
	}
	agent := testAgent(t)
	forEachJDK(t, func(t *testing.T, j jdk) {
		args := append([]string{"--pid", "--mount", "--fork", "--mount-proc",
			"sh", "-c", inNewTmp, "sh"}, jvmArgs(j)...)
		cmd := exec.Command("unshare", args...)
		cmd.Dir = jvmDir(t, j)
		pid := runJVM(t, cmd)
		tg := mustOpen(t, pid)
		if tg.NSPid == pid || tg.NSPid != 1 || tg.SameMountNS || tg.MainClass != "Sleeper" {
			t.Fatalf("Open(%d) = %+v", pid, tg)
		}
		if p, want := tg.Path("/tmp"), fmt.Sprintf("/proc/%d/root/tmp", pid); p != want {
			t.Errorf("Path(/tmp) = %s, want %s", p, want)
		}
		if tg.TmpShared() {
			t.Errorf("TmpShared for a JVM with a tmpfs /tmp of its own")
		}
		ctx := ctxFor(t, 20*time.Second)
		if _, err := tg.Execute(ctx, "properties"); err != nil {
			t.Fatalf("properties: %v", err)
		}
		if !fileExists(tg.Path("/tmp/.java_pid1")) {
			t.Errorf("no socket in the JVM's /tmp")
		}
		noTriggerLeft(t, tg)
		if _, err := tg.Execute(ctx, "jcmd", "VM.version"); err != nil {
			t.Fatalf("second attach: %v", err)
		}

		stageDir, err := tg.Stage(agent)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stageDir, "/tmp/"+stagePrefix+"0-") || !fileExists(tg.Path(stageDir+"/agent.so")) {
			t.Fatalf("Stage = %s", stageDir)
		}
		if fileExists(stageDir) {
			t.Errorf("Stage wrote %s into the host's /tmp", stageDir)
		}
		if err := tg.LoadAgent(ctx, stageDir+"/agent.so", "0:/tmp/marker"); err != nil {
			t.Fatalf("LoadAgent: %v", err)
		}
		if !fileExists(tg.Path("/tmp/marker")) {
			t.Errorf("no marker in the JVM's /tmp")
		}
	})
}

// TestUserNamespace: a JVM in a user namespace too, as a container
// runs it: root inside is uid 100000 outside. HotSpot sees the host's
// root as the overflow uid, so root must connect with the JVM's ids.
func TestUserNamespace(t *testing.T) {
	if why := unshareWorks(); why != "" {
		t.Skip(why)
	}
	agent := testAgent(t)
	const base = 100000
	container := func() *syscall.SysProcAttr {
		return &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: 65536}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: base, Size: 65536}},
			// The caller's uid 0 is not mapped: become the
			// namespace's root.
			Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
		}
	}
	probe := exec.Command("/bin/sh", "-c", "mount -t tmpfs tmpfs /tmp")
	probe.SysProcAttr = container()
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot run a process in a user namespace with a tmpfs here: %v: %s", err, out)
	}
	forEachJDK(t, func(t *testing.T, j jdk) {
		dir := jvmDir(t, j)
		cmd := exec.Command("/bin/sh", append([]string{"-c", inNewTmp, "sh"}, jvmArgs(j)...)...)
		cmd.Dir = dir
		cmd.SysProcAttr = container()
		pid := runJVM(t, cmd)
		tg := mustOpen(t, pid)
		if tg.UID != base || tg.GID != base || tg.sameUserNS || tg.NSPid != 1 {
			t.Fatalf("Open(%d) = %+v", pid, tg)
		}
		ctx := ctxFor(t, 20*time.Second)

		// The working directory belongs to the host's root, so the
		// JVM's uid cannot write it: the trigger goes to the JVM's
		// /tmp, created by the JVM's uid.
		props, err := tg.Execute(ctx, "properties")
		if err != nil {
			t.Fatalf("properties: %v", err)
		}
		if !strings.Contains(props, "user.name=root") {
			t.Errorf("properties has no user.name=root")
		}
		noTriggerLeft(t, tg)

		// The rule itself: the host's root, connecting as root, is
		// turned away.
		tg.noSwitch = true
		_, err = tg.Execute(ctx, "properties")
		tg.noSwitch = false
		if err == nil || !strings.Contains(err.Error(), "without a reply") {
			t.Errorf("connecting as the host's root: %v", err)
		} else {
			t.Logf("as the host's root: %v", err)
		}
		if d, err := unixDumpable(); err != nil || d != 1 {
			t.Errorf("the test process is no longer dumpable: %d, %v", d, err)
		}
		stageDir, err := tg.Stage(agent)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stageDir, "/tmp/"+stagePrefix+strconv.Itoa(base)+"-") {
			t.Fatalf("Stage = %s", stageDir)
		}
		if err := tg.LoadAgent(ctx, stageDir+"/agent.so", "0:/tmp/marker"); err != nil {
			t.Fatalf("LoadAgent: %v", err)
		}
		fi, err := os.Stat(tg.Path("/tmp/marker"))
		if err != nil {
			t.Fatalf("no marker: %v", err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != base {
			t.Errorf("the marker belongs to uid %d, not %d", uid, base)
		}
	})
}

// unixDumpable reads the process's dumpable flag when no switched run
// (of a parallel test) has it cleared.
func unixDumpable() (int, error) {
	switchMu.Lock()
	defer switchMu.Unlock()
	return unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
}

const helperEnv = "ATTACH_TEST_REFUSED_PID"

// TestRefusedNonRoot: a caller that is not root cannot Open root's JVM,
// and nothing reaches the JVM. It runs TestHelperProcessRefused as
// nobody.
func TestRefusedNonRoot(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("runuser is not installed")
	}
	j := firstJDK(t)
	dir := jvmDir(t, j)
	cmd := exec.Command(jvmArgs(j)[0], jvmArgs(j)[1:]...)
	cmd.Dir = dir
	pid := runJVM(t, cmd)

	bin := filepath.Join(shared, "attach.test")
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("runuser", "-u", "nobody", "--", "env", helperEnv+"="+strconv.Itoa(pid),
		bin, "-test.run", "^TestHelperProcessRefused$", "-test.v", "-test.count=1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHelperProcessRefused") {
		t.Errorf("helper as nobody: %v\n%s", err, out)
	}
	tg := mustOpen(t, pid)
	noTriggerLeft(t, tg)
	if fileExists(fmt.Sprintf("/tmp/.java_pid%d", pid)) {
		t.Errorf("the JVM's attach listener started")
	}
}

// TestHelperProcessRefused is TestRefusedNonRoot's other half, run as
// nobody.
func TestHelperProcessRefused(t *testing.T) {
	env := os.Getenv(helperEnv)
	if env == "" {
		t.Skip("run by TestRefusedNonRoot")
	}
	pid, _ := strconv.Atoi(env)
	_, err := Open(pid)
	want := fmt.Sprintf("pid %d runs as uid 0 (root); only that user or root can profile it", pid)
	if !errors.Is(err, ErrPermission) || err.Error() != want {
		t.Errorf("Open(%d) as uid %d = %v, want %q", pid, os.Geteuid(), err, want)
	}
	list, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.PID == pid {
			t.Errorf("List() as uid %d holds root's JVM %d", os.Geteuid(), pid)
		}
	}
}

// TestStaleSocket: an attach socket left by an earlier process of the
// same pid (a JVM killed before it removed it; pids come back), on which
// nobody listens, is replaced by the JVM's own: Execute works.
func TestStaleSocket(t *testing.T) {
	forEachJDK(t, func(t *testing.T, j jdk) {
		cmd := exec.Command(jvmArgs(j)[0], jvmArgs(j)[1:]...)
		cmd.Dir = jvmDir(t, j)
		tg := mustOpen(t, runJVM(t, cmd))
		sock := fmt.Sprintf("/tmp/.java_pid%d", tg.NSPid)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		out, err := tg.Execute(ctxFor(t, 10*time.Second), "properties")
		if err != nil || !strings.Contains(out, "java.vm.name") {
			t.Errorf("Execute with a stale socket: err %v, reply %.80q", err, out)
		}
		noTriggerLeft(t, tg)
	})
}
