package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

const leafClass = "HeapHold$Leaf"

func readHist(t *testing.T, path string) *reports.Histogram {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := reports.ReadHistogram(f)
	require.NoError(t, err, path)
	return h
}

func instancesOf(h *reports.Histogram, class string) uint64 {
	for _, c := range h.Classes {
		if c.Class == class {
			return c.Instances
		}
	}
	return 0
}

// TestHeapHistogramAndDiff: the histogram counts the program's objects
// exactly, and heapdiff names what grew between two.
func TestHeapHistogramAndDiff(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{"12345"}, Options: "-", Java: jdk.Java})
			p.Expect("held 12345")
			pid := strconv.Itoa(p.Result().PID)
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
			code, _, stderr := jprofBin(t, "heap", "-o", a, pid)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, uint64(12345), instancesOf(readHist(t, a), leafClass))
			p.Send("grow 7655")
			p.Expect("held 20000")
			code, _, stderr = jprofBin(t, "heap", "-o", b, "HeapHold")
			require.Equal(t, 0, code, stderr)
			hb := readHist(t, b)
			assert.Equal(t, uint64(20000), instancesOf(hb, leafClass))
			code, out, stderr := jprofBin(t, "heapdiff", a, b)
			require.Equal(t, 0, code, stderr)
			assert.Regexp(t, `(?m)^ +\+[0-9]+ +\+7655 +[0-9]+ +20000  HeapHold\$Leaf$`, out)
			assert.Regexp(t, `(?m)^ +\+[0-9]+ +\+[0-9]+ +[0-9]+ +[0-9]+  \[B$`, out)
		})
	}
}

// TestHeapDump: the HPROF file is whole and well formed, record by record
// and in its heap dump's sub-records, and holds exactly the program's
// objects.
func TestHeapDump(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{"4321"}, Options: "-"})
	p.Expect("held 4321")
	out := filepath.Join(t.TempDir(), "x.hprof")
	code, stdout, stderr := jprofBin(t, "heapdump", "-o", out, strconv.Itoa(p.Result().PID))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "wrote "+out)
	assert.Equal(t, 4321, hprofInstances(t, out, leafClass))
	// Only its owner reads it (umask 022 would give others read access).
	fi, err := os.Stat(out)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the dump holds every value the program had")
	// Nothing is left in the JVM's /tmp.
	left, _ := filepath.Glob(fmt.Sprintf("/tmp/jprof-%d/heap-%d-*.hprof", os.Geteuid(), p.Result().PID))
	assert.Empty(t, left)
}

// TestRTDriverHeap: the agent writes both on rtdriver's command.
func TestRTDriverHeap(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{"777"}, Options: "BCI"})
	p.Expect("held 777")
	pid := strconv.Itoa(p.Result().PID)
	rt := func(cmd string) string {
		out, err := exec.Command(jvmtest.Tool("rtdriver"), "-pid", pid, "-c", cmd).CombinedOutput()
		require.NoError(t, err, "%s", out)
		path, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "OK "+cmd+": ")
		require.True(t, ok, "%s", out)
		return path
	}
	hist := rt("heap")
	assert.Equal(t, filepath.Join(p.Dir(), "log-heap.1_"+pid), hist)
	assert.Equal(t, uint64(777), instancesOf(readHist(t, hist), leafClass))
	dump := rt("heapdump")
	assert.Equal(t, filepath.Join(p.Dir(), "log-hprof.1_"+pid+".hprof"), dump)
	assert.Equal(t, 777, hprofInstances(t, dump, leafClass))
}

// hprofInstances walks an HPROF file (every record, every heap dump
// sub-record, as a heap analyser reads them) and counts the instances of
// class (named as Java names it, dots for the package).
func hprofInstances(t *testing.T, path, class string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	magic, err := r.ReadString(0)
	require.NoError(t, err)
	require.Equal(t, "JAVA PROFILE 1.0.2\x00", magic)
	var idSize uint32
	require.NoError(t, binary.Read(r, binary.BigEndian, &idSize))
	require.Contains(t, []uint32{4, 8}, idSize)
	_, err = r.Discard(8) // timestamp
	require.NoError(t, err)
	id := func(b []byte) uint64 {
		if idSize == 4 {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return binary.BigEndian.Uint64(b)
	}
	strs := map[uint64]string{}
	classNames := map[uint64]uint64{} // class object id -> name string id
	counts := map[uint64]int{}        // class object id -> instances
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			break
		} else {
			require.NoError(t, err, "record header")
		}
		n := binary.BigEndian.Uint32(hdr[5:])
		body := make([]byte, n)
		_, err := io.ReadFull(r, body)
		require.NoError(t, err, "record of tag %#x, %d bytes", hdr[0], n)
		switch hdr[0] {
		case 0x01: // UTF8
			strs[id(body)] = string(body[idSize:])
		case 0x02: // LOAD CLASS: serial, class id, stack serial, name id
			classNames[id(body[4:])] = id(body[8+idSize:])
		case 0x0C, 0x1C: // HEAP DUMP, HEAP DUMP SEGMENT
			hprofSubRecords(t, body, int(idSize), id, counts)
		}
	}
	for cid, nid := range classNames {
		if strings.ReplaceAll(strs[nid], "/", ".") == class {
			return counts[cid]
		}
	}
	t.Fatalf("class %s not in the dump", class)
	return 0
}

// hprofSubRecords walks one heap dump segment, counting instance dumps
// by class.
func hprofSubRecords(t *testing.T, b []byte, idSize int, id func([]byte) uint64, counts map[uint64]int) {
	t.Helper()
	typeSize := func(ty byte) int {
		switch ty {
		case 2:
			return idSize
		case 4, 8:
			return 1
		case 5, 9:
			return 2
		case 6, 10:
			return 4
		case 7, 11:
			return 8
		}
		t.Fatalf("bad basic type %d", ty)
		return 0
	}
	u4 := func(at int) int { return int(binary.BigEndian.Uint32(b[at:])) }
	u2 := func(at int) int { return int(binary.BigEndian.Uint16(b[at:])) }
	for i := 0; i < len(b); {
		tag := b[i]
		i++
		switch tag {
		case 0xFF, 0x05, 0x07: // root unknown, sticky class, monitor used
			i += idSize
		case 0x01: // JNI global
			i += 2 * idSize
		case 0x02, 0x03, 0x08: // JNI local, Java frame, thread object
			i += idSize + 8
		case 0x04, 0x06: // native stack, thread block
			i += idSize + 4
		case 0x20: // class dump
			i += 7*idSize + 4 + 4 // class, stack serial, super, loader, signers, domain, 2 reserved, size
			n := u2(i)
			i += 2
			for k := 0; k < n; k++ { // constant pool: index, type, value
				i += 3 + typeSize(b[i+2])
			}
			n = u2(i)
			i += 2
			for k := 0; k < n; k++ { // statics
				ty := b[i+idSize]
				i += idSize + 1 + typeSize(ty)
			}
			n = u2(i)
			i += 2 + n*(idSize+1) // instance fields
		case 0x21: // instance dump
			counts[id(b[i+idSize+4:])]++
			i += 2*idSize + 4
			i += 4 + u4(i)
		case 0x22: // object array
			n := u4(i + idSize + 4)
			i += 2*idSize + 8 + n*idSize
		case 0x23: // primitive array
			n := u4(i + idSize + 4)
			i += idSize + 9 + n*typeSize(b[i+idSize+8])
		default:
			t.Fatalf("unknown heap dump sub-record %#x at %d of %d", tag, i-1, len(b))
		}
		require.LessOrEqual(t, i, len(b), "sub-record %#x runs past its segment", tag)
	}
}

// TestHeapOutputChecked: an -o that cannot be written is refused before
// the JVM is asked anything (a full GC, a dump that may take minutes):
// the JVM never even opens its attach socket.
func TestHeapOutputChecked(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{"10"}, Options: "-"})
	p.Expect("held 10")
	pid := strconv.Itoa(p.Result().PID)
	dir := t.TempDir()
	for _, c := range []struct{ cmd, out, want string }{
		{"heap", "/nonexist/x.txt", "-o /nonexist/x.txt: no directory /nonexist to write it in"},
		{"heapdump", "/nonexist/x.hprof", "-o /nonexist/x.hprof: no directory /nonexist to write it in"},
		{"heap", dir, "is a directory"},
		{"heapdump", dir, "is a directory"},
		{"heapdump", filepath.Join(dir, "new") + "/", "names a directory"},
	} {
		code, stdout, stderr := jprofBin(t, c.cmd, "-o", c.out, pid)
		assert.Equal(t, 2, code, "%s -o %s: %s", c.cmd, c.out, stderr)
		assert.Contains(t, stderr, c.want, "%s -o %s", c.cmd, c.out)
		assert.NotContains(t, stderr, "dumping the heap")
		assert.Empty(t, stdout)
	}
	assert.NoFileExists(t, "/tmp/.java_pid"+pid, "the JVM was asked for its heap")
}

// TestHeapDiffTwoJVMs: histograms of two JVMs (a restarted service) are
// diffed, with a warning naming both; one JVM's two are not warned of.
func TestHeapDiffTwoJVMs(t *testing.T) {
	dir := t.TempDir()
	hist := func(name, pid, main, time string, leaves int) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(" libjprof heap histogram\n Process_Number_ID=%s\n Main=%s\n Time=%s\n\n"+
			" num     #instances         #bytes  class name (module)\n-------------------------------------------------------\n"+
			"   1:         %d         %d  HeapHold$Leaf\nTotal         %d         %d\n", pid, main, time, leaves, 24*leaves, leaves, 24*leaves)), 0o644))
		return p
	}
	a := hist("a.txt", "100", "Svc", "2026-01-01T10:00:00Z", 10)
	b := hist("b.txt", "200", "Svc", "2026-01-01T11:00:00Z", 30)
	c := hist("c.txt", "100", "Other", "2026-01-01T11:00:00Z", 30)
	d := hist("d.txt", "100", "Svc", "2026-01-01T11:00:00Z", 30)
	for _, tc := range []struct{ b, warn string }{
		{b, a + " is of pid 100 (Svc), " + b + " of pid 200 (Svc): two JVMs; diffed all the same"},
		{c, a + " is of pid 100 (Svc), " + c + " of pid 100 (Other): two JVMs"},
		{d, ""},
	} {
		code, stdout, stderr := jprof("heapdiff", a, tc.b)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "+20  ", "diffed: %s", stdout)
		if tc.warn == "" {
			assert.Empty(t, stderr)
		} else {
			assert.Contains(t, stderr, "jprof: warning: "+tc.warn)
		}
	}
}

// TestHeapTargetKilled: a JVM killed while jprof waits for its histogram
// or dump is said to have exited during it, not to have refused this
// process (whose uid is the JVM's). The JVM is stopped while the request
// reaches it, then killed: the connection closes unanswered.
func TestHeapTargetKilled(t *testing.T) {
	for _, c := range []struct{ cmd, op string }{{"heap", "GC.class_histogram"}, {"heapdump", "GC.heap_dump"}} {
		t.Run(c.cmd, func(t *testing.T) {
			p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{"10"}, Options: "-"})
			p.Expect("held 10")
			pid := p.Result().PID
			dir := t.TempDir()
			// Its attach listener up first, so that the request below
			// is what the JVM is killed with.
			code, _, stderr := jprofBin(t, "heap", "-o", filepath.Join(dir, "first.txt"), strconv.Itoa(pid))
			require.Equal(t, 0, code, stderr)
			require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
			cmd := exec.Command(jvmtest.Tool("jprof"), c.cmd, "-o", filepath.Join(dir, "out"), strconv.Itoa(pid))
			var errOut strings.Builder
			cmd.Stderr = &errOut
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool {
				fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", cmd.Process.Pid))
				for _, fd := range fds {
					if l, _ := os.Readlink(fd); strings.HasPrefix(l, "socket:") {
						return true
					}
				}
				return false
			}, 30*time.Second, 20*time.Millisecond, "jprof never connected")
			time.Sleep(300 * time.Millisecond) // its request written
			require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
			err := cmd.Wait()
			require.Error(t, err, errOut.String())
			assert.Contains(t, errOut.String(), fmt.Sprintf("JVM pid %d (HeapHold) exited during jcmd %s", pid, c.op))
			assert.NotContains(t, errOut.String(), "neither root nor")
			assert.NoFileExists(t, filepath.Join(dir, "out"))
		})
	}
}

// Two JVMs of PID 1 in PID namespaces that share /tmp have one attach
// socket, /tmp/.java_pid1, the first one's: jprof heap of the second
// must refuse, not take the first one's histogram (or heap dump) under
// the second's name.
func TestHeapTwoJVMsSharingTmp(t *testing.T) {
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "true").Run(); err != nil {
		t.Skipf("cannot make a PID namespace here (unshare: %v)", err)
	}
	hostPID := func(p *jvmtest.Proc) string {
		// unshare forks the JVM: the JVM is its only child.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.Result().PID, p.Result().PID))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	launch := func(n string) *jvmtest.Proc {
		p := jvmtest.Launch(t, jvmtest.Run{Class: "HeapHold", Args: []string{n}, Options: "-",
			JVMArgs: []string{"-XX:-UsePerfData"}, // hsperfdata_<user>/1 is one file too
			Prefix:  []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}})
		p.Expect("held " + n)
		return p
	}
	a, b := launch("12345"), launch("777")
	pa, pb := hostPID(a), hostPID(b)
	dir := t.TempDir()
	code, _, stderr := jprofBin(t, "heap", "-o", filepath.Join(dir, "a.txt"), pa)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, uint64(12345), instancesOf(readHist(t, filepath.Join(dir, "a.txt")), leafClass))
	code, _, stderr = jprofBin(t, "heap", "-o", filepath.Join(dir, "b.txt"), pb)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "is pid "+pa+"'s attach socket, not pid "+pb+"'s")
	assert.NoFileExists(t, filepath.Join(dir, "b.txt"))
	// Nor is the agent loaded into the first for a profile of the second.
	code, _, stderr = jprofBin(t, "profile", "-d", "1s", "-o", filepath.Join(dir, "b.html"), pb)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "is pid "+pa+"'s attach socket, not pid "+pb+"'s")
	code, list, stderr := jprofBin(t, "list")
	require.Equal(t, 0, code, stderr)
	assert.NotRegexp(t, `(?m)^ *`+pa+` .*libjprof`, list)
}
