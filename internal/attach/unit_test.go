package attach

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestMainClass(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    string
	}{
		{"java Main", "Main"},
		{"java -cp a.jar:b.jar -Xmx1g -Dx=y com.example.Main arg -cp x", "com.example.Main"},
		{"java -classpath lib/* --class-path x Main", "Main"},
		{"java -Xms1g -jar app.jar --server.port=8080", "app.jar"},
		{"java -p mods -m com.example/com.example.Main", "com.example/com.example.Main"},
		{"java --module-path mods --module com.example", "com.example"},
		{"java --module=com.example/com.example.Main x", "com.example/com.example.Main"},
		{"java --add-opens java.base/java.lang=ALL-UNNAMED --add-exports a/b=c --add-modules m --add-reads a=b Main", "Main"},
		{"java --add-opens=java.base/java.lang=ALL-UNNAMED -XX:+UseG1GC Main", "Main"},
		{"java --enable-native-access ALL-UNNAMED --source 21 Prog.java", "Prog.java"},
		{"java @argfile -ea Main", "Main"},
		{"java testdata/Sleeper.java", "testdata/Sleeper.java"},
		{"java -version", ""},
		{"java -jar", ""},
		{"java", ""},
		{"/usr/lib/jvm/java-17/bin/java -cp x Main", "Main"},
		// A JDK tool's launcher: its arguments are the tool's.
		{"/usr/lib/jvm/java-17/bin/javac --release 11 -d out A.java", "javac"},
	} {
		if got := MainClass(strings.Fields(c.cmdline)); got != c.want {
			t.Errorf("MainClass(%q) = %q, want %q", c.cmdline, got, c.want)
		}
	}
}

func TestEncodeRequest(t *testing.T) {
	b, err := encodeRequest("properties", nil)
	if err != nil || string(b) != "1\x00properties\x00\x00\x00\x00" {
		t.Errorf("properties: %q, %v", b, err)
	}
	b, err = encodeRequest("load", []string{"/a/lib.so", "true", "opt=1"})
	if err != nil || string(b) != "1\x00load\x00/a/lib.so\x00true\x00opt=1\x00" {
		t.Errorf("load: %q, %v", b, err)
	}
	for _, bad := range [][]string{
		{"", "a"},
		{"seventeen-letters"},
		{"load", "a", "b", "c", "d"},
		{"load", strings.Repeat("x", 1025)},
		{"load", "a\x00b"},
	} {
		if _, err := encodeRequest(bad[0], bad[1:]); err == nil {
			t.Errorf("encodeRequest(%q) succeeded", bad)
		}
	}
}

// TestLoadResult: the replies to "load" of JDK 17, JDK 21 and later, and
// earlier JDKs.
func TestLoadResult(t *testing.T) {
	tg := &Target{PID: 42, MainClass: "Main"}
	const lib = "/x/libjprof.so"
	for _, c := range []struct {
		status int
		text   string
		want   string // "" for success
	}{
		{0, "return code: 0\n", ""},
		{0, "0\n", ""},
		{0, "return code: 1\n", "JVM pid 42 (Main) loaded /x/libjprof.so but its Agent_OnAttach failed with return code 1"},
		{0, "-1\n", "failed with return code -1"},
		{-1, "/x/libjprof.so was not loaded.\n/x/libjprof.so: cannot open shared object file: No such file or directory\n",
			"JVM pid 42 (Main) could not load /x/libjprof.so: /x/libjprof.so was not loaded. /x/libjprof.so: cannot open shared object file: No such file or directory"},
		{0, "/x/libjprof.so was not loaded.\n/x/libjprof.so: wrong ELF class: ELFCLASS32\n", "wrong ELF class"},
		{-1, "Agent_OnAttach is not available in /x/libjprof.so\n", "the library has no Agent_OnAttach function"},
		{0, "Agent_OnAttach is not available in /x/libjprof.so\n", "the library has no Agent_OnAttach function"},
		{0, "Dynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.\n", "-XX:-EnableDynamicAgentLoading"},
		{-1, "", "did not say whether it loaded /x/libjprof.so (status -1, no text)"},
		{0, "something else\n", "did not load /x/libjprof.so (status 0): something else"},
	} {
		err := loadResult(tg, lib, c.status, c.text)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("loadResult(%d, %q) = %v", c.status, c.text, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("loadResult(%d, %q) = %v, want %q", c.status, c.text, err, c.want)
		}
	}
}

func writeRandom(t *testing.T, p string, mode os.FileMode) {
	b := make([]byte, 4096)
	rand.Read(b)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func inode(t *testing.T, p string) uint64 {
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestStage: Stage leaves files that the JVM's user can read where they
// are, and otherwise copies them into /tmp, reuses a good copy and
// replaces a bad one. The target is a made-up JVM of uid nobody in the
// test's own namespaces.
func TestStage(t *testing.T) {
	needRoot(t)
	tg := &Target{PID: os.Getpid(), NSPid: os.Getpid(), UID: 65534, GID: 65534,
		SameMountNS: true, sameRoot: true, sameUserNS: true, groups: []int{65534}}

	private := t.TempDir() // 0700
	lib, jar := filepath.Join(private, "libjprof.so"), filepath.Join(private, "jprof-bci.jar")
	writeRandom(t, lib, 0o644)
	writeRandom(t, jar, 0o644)
	dir, err := tg.Stage(lib, jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if filepath.Dir(dir) != "/tmp" || !strings.HasPrefix(filepath.Base(dir), stagePrefix+"65534-") {
		t.Fatalf("Stage = %s", dir)
	}
	for _, f := range []string{lib, jar} {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s not copied whole: %v", f, err)
		}
	}
	if leftovers, _ := filepath.Glob(dir + ".tmp-*"); len(leftovers) > 0 {
		t.Errorf("left behind: %v", leftovers)
	}

	ino := inode(t, dir)
	if again, err := tg.Stage(lib, jar); err != nil || again != dir || inode(t, dir) != ino {
		t.Errorf("Stage of the same files = %s, %v; want %s reused", again, err, dir)
	}

	// Bad copies are replaced.
	for name, spoil := range map[string]func(){
		"changed content": func() { os.WriteFile(filepath.Join(dir, "libjprof.so"), []byte("x"), 0o644) },
		"missing file":    func() { os.Remove(filepath.Join(dir, "jprof-bci.jar")) },
		"writable dir":    func() { os.Chmod(dir, 0o777) },
		"wrong owner":     func() { os.Chown(filepath.Join(dir, "libjprof.so"), 0, 0) },
		"symlink":         func() { os.RemoveAll(dir); os.Symlink(private, dir) },
	} {
		spoil()
		again, err := tg.Stage(lib, jar)
		if err != nil || again != dir || !tg.staged(dir, []string{lib, jar}, [][]byte{mustRead(t, lib), mustRead(t, jar)}) {
			t.Errorf("after %s: Stage = %s, %v, and the copy is not good", name, again, err)
		}
	}

	// A bad directory that the caller cannot remove (here: made
	// immutable) leaves the fresh copy under its temporary name.
	os.WriteFile(filepath.Join(dir, "libjprof.so"), []byte("x"), 0o644)
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Logf("chattr +i: %v %s; not testing an unremovable directory", err, out)
	} else {
		other, err := tg.Stage(lib, jar)
		exec.Command("chattr", "-i", dir).Run()
		if err != nil || !strings.HasPrefix(other, dir+".tmp-") ||
			!tg.staged(other, []string{lib, jar}, [][]byte{mustRead(t, lib), mustRead(t, jar)}) {
			t.Errorf("Stage beside an unremovable bad copy = %s, %v", other, err)
		}
		os.RemoveAll(other)
	}

	// Files that nobody can read in place stay where they are.
	open, err := os.MkdirTemp(shared, "open-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	a, b := filepath.Join(open, "a.so"), filepath.Join(open, "b.jar")
	writeRandom(t, a, 0o644)
	writeRandom(t, b, 0o644)
	if got, err := tg.Stage(a, b); err != nil || got != open {
		t.Errorf("Stage of readable files = %s, %v; want %s", got, err, open)
	}
	// ... unless one is not readable, or they are not side by side.
	os.Chmod(b, 0o600)
	got, err := tg.Stage(a, b)
	if err != nil || got == open {
		t.Errorf("Stage with an unreadable file = %s, %v; want a copy", got, err)
	}
	os.RemoveAll(got)
	os.Chmod(b, 0o644)
	got, err = tg.Stage(a, jar)
	if err != nil || filepath.Dir(got) != "/tmp" {
		t.Errorf("Stage of files in two directories = %s, %v; want a copy", got, err)
	}
	os.RemoveAll(got)

	writeRandom(t, filepath.Join(private, "a.so"), 0o644)
	if _, err := tg.Stage(a, filepath.Join(private, "a.so")); err == nil || !strings.Contains(err.Error(), "two files named a.so") {
		t.Errorf("Stage of two a.so: %v", err)
	}
	if _, err := tg.Stage(filepath.Join(open, "missing")); err == nil {
		t.Errorf("Stage of a missing file succeeded")
	}
	if _, err := tg.Stage(open); err == nil {
		t.Errorf("Stage of a directory succeeded")
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClosedWithoutReply: a connection closed unanswered is blamed on
// permissions only when this process's ids may be refused; a JVM that is
// gone afterwards (killed during a heap dump) exited during the request.
// A listener of this test stands in for the JVM's.
func TestClosedWithoutReply(t *testing.T) {
	fakeNSPid := 4000000 + os.Getpid()
	sock := fmt.Sprintf("/tmp/.java_pid%d", fakeNSPid)
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 100))
			c.Close()
		}
	}()
	target := func(pid int) *Target {
		st, err := startTime(pid)
		require.NoError(t, err)
		return &Target{PID: pid, NSPid: fakeNSPid, UID: os.Geteuid(), GID: os.Getegid(), MainClass: "Fake",
			start: st, sameRoot: true, sameUserNS: true, SameMountNS: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Alive, and of this process's ids: not a refusal.
	_, err = target(os.Getpid()).Execute(ctx, "jcmd", "GC.heap_dump /tmp/x.hprof")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "neither root nor of its effective uid")
	assert.Contains(t, err.Error(), "closed the attach connection without a reply (end of file) to jcmd GC.heap_dump: not a refusal")

	// Gone (a zombie not yet reaped, then reaped): exited during it.
	child := exec.Command("sleep", "60")
	require.NoError(t, child.Start())
	tg := target(child.Process.Pid)
	require.NoError(t, child.Process.Kill())
	for _, reaped := range []bool{false, true} {
		if reaped {
			_ = child.Wait()
		}
		_, err = tg.Execute(ctx, "jcmd", "GC.heap_dump /tmp/x.hprof")
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrNoProcess)
		// The listener here is this process, not the child: seen as
		// another's socket, and the child as gone.
		assert.Contains(t, err.Error(), fmt.Sprintf("JVM pid %d (Fake) exited before jcmd GC.heap_dump was sent", tg.PID))
		assert.NotContains(t, err.Error(), "neither root")
	}
}

// The JVM's own hsperfdata file is the one named by its PID in its
// namespace; another JVM's it maps (a monitoring tool's) is not, wherever
// it comes in the maps.
func TestPerfMappingOf(t *testing.T) {
	for _, c := range []struct {
		line string
		ok   bool
		want perfMapping
	}{
		{"7f1c2c000000-7f1c2c008000 rw-s 00000000 00:1f 123 /tmp/hsperfdata_root/4242", true,
			perfMapping{path: "/tmp/hsperfdata_root/4242", dev: unix.Mkdev(0, 0x1f), ino: 123}},
		{"7f1c2c000000-7f1c2c008000 r--s 00000000 fe:01 9 /tmp/hsperfdata_app/4242", true,
			perfMapping{path: "/tmp/hsperfdata_app/4242", dev: unix.Mkdev(0xfe, 1), ino: 9}},
		{"7f1c2c000000-7f1c2c008000 rw-s 00000000 103:0a 77 /proc/9/root/tmp/hsperfdata_root/4242", true,
			perfMapping{path: "/proc/9/root/tmp/hsperfdata_root/4242", dev: unix.Mkdev(0x103, 0x0a), ino: 77}},
		// Another JVM's file, mapped by a monitoring tool.
		{"7f1c2c000000-7f1c2c008000 r--s 00000000 00:1f 124 /tmp/hsperfdata_root/4243", false, perfMapping{}},
		{"7f1c2c000000-7f1c2c008000 rw-s 00000000 00:1f 123 /tmp/hsperfdata_root/4242 (deleted)", false, perfMapping{}},
		{"7f1c2c000000-7f1c2c008000 rw-s 00000000 00:1f 123 /tmp/other/4242", false, perfMapping{}},
		{"7f1c2c000000-7f1c2c008000 rw-s 00000000 00:1f 0 /tmp/hsperfdata_root/4242", false, perfMapping{}},
		{"7f1c2c000000-7f1c2c008000 rw-p 00000000 00:00 0 ", false, perfMapping{}},
	} {
		got, ok := perfMappingOf([]byte(c.line), 4242)
		assert.Equal(t, c.ok, ok, c.line)
		assert.Equal(t, c.want, got, c.line)
	}
}
