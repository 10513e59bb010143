package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// A LOGPATH that fills while log-gen is written (a real tmpfs, too small
// for the run's events) keeps the log-gen: it appears, holds whole
// frames or lines of the first events, ends with the truncation line,
// stderr says so in one line, and jprof reads it and warns.
func TestFullDiskKeepsLogGen(t *testing.T) {
	for _, format := range []string{"binary", "text"} {
		t.Run(format, func(t *testing.T) {
			dir := jvmtest.SmallFS(t, 512<<10)
			r := jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"25"},
				Options: "METHODEVENTS,CALLTREE,GENERIC,GENFORMAT=" + format + ",START,NORTDRIVER,LOGPATH=" + dir})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Contains(t, r.Stdout, "fib(25)=75025")
			gen := filepath.Join(dir, fmt.Sprintf("log-gen_%d", r.PID))
			b, err := os.ReadFile(gen)
			require.NoError(t, err, r.Stderr)
			at := strings.LastIndex(string(b), " *** libjprof: write error")
			require.Greater(t, at, 0, "no truncation line")
			last := strings.TrimSuffix(string(b[at:]), "\n")
			require.Regexp(t, `^ \*\*\* libjprof: write error after \d+ bytes: no space left on device; \d+ events not written$`, last)
			assert.True(t, strings.HasSuffix(string(b), "\n") && !strings.Contains(last, "\n"), "one line, at the end")
			assert.Contains(t, last, fmt.Sprintf("after %d bytes:", at), "the byte count is what precedes the line")
			// One line on stderr names the file and the loss.
			cut := regexp.MustCompile(`(?m)^libjprof: warning: log-gen_\d+ cut short by a write error after \d+ bytes \(no space left on device\): (\d+) of (\d+) events not written.*$`)
			m := cut.FindAllStringSubmatch(r.Stderr, -1)
			require.Len(t, m, 1, r.Stderr)
			assert.Contains(t, last, "; "+m[0][1]+" events not written")
			// fib(25) is 242785 calls, two events each, with the JDK's
			// own calls from VM start.
			total, _ := strconv.Atoi(m[0][2])
			assert.Greater(t, total, 2*242785)

			// What precedes the line is valid: the reader rebuilds the
			// first calls and says the file is truncated.
			f, err := os.Open(gen)
			require.NoError(t, err)
			defer f.Close()
			p, err := reports.BuildProfile(f)
			require.NoError(t, err)
			assert.Equal(t, strings.TrimPrefix(last, " *** "), p.Truncated)
			main := jvmtest.Threads(p, "")
			var calls uint64
			for _, th := range main {
				calls += fibCalls(th)
			}
			assert.Greater(t, calls, uint64(100), "the kept part holds calls of fib")
			assert.Less(t, calls, uint64(242785), "but not all of them")

			out, stderr := jprofRun(t, "report", "xtree", gen)
			assert.Contains(t, out, "is truncated", "the report's header says so")
			assert.Contains(t, stderr, "jprof: warning: "+gen+" is truncated: libjprof: write error after")

			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range ents {
				assert.False(t, strings.HasPrefix(e.Name(), "."), "temporary file left: %s", e.Name())
			}
		})
	}
}

func fibCalls(n *reports.Node) uint64 {
	var c uint64
	if strings.Contains(n.Name, "Fib.fib(I)I") {
		c = n.Calls
	}
	for _, ch := range n.Children {
		c += fibCalls(ch)
	}
	return c
}

// jprofRun runs jprof and returns its stdout and stderr, failing on a
// non-zero exit.
func jprofRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(jvmtest.Tool("jprof"), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	return stdout.String(), stderr.String()
}

// A log-rt that does not fit its LOGPATH is cut after its last whole row
// and closed by the truncation line; the parser reads it and says so.
func TestFullDiskKeepsLogRT(t *testing.T) {
	dir := jvmtest.SmallFS(t, 160<<10)
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,RTARCF,START,NORTDRIVER,LOGPATH=" + dir})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	path := filepath.Join(dir, fmt.Sprintf("log-rt.1_%d", r.PID))
	b, err := os.ReadFile(path)
	require.NoError(t, err, r.Stderr)
	at := strings.LastIndex(string(b), "\n *** libjprof: write error") + 1
	require.Greater(t, at, 0, "no truncation line")
	assert.Regexp(t, `^ \*\*\* libjprof: write error after \d+ bytes: no space left on device; \d+ rows not written\n$`, string(b[at:]))
	assert.Contains(t, string(b[at:]), fmt.Sprintf("after %d bytes:", at))
	assert.Regexp(t, `(?m)^libjprof: warning: log-rt.1_\d+ cut short by a write error after \d+ bytes \(no space left on device\): \d+ of \d+ rows not written`, r.Stderr)
	p := jvmtest.ParseLogRT(t, path)
	assert.NotEmpty(t, p.Truncated)
	require.NotEmpty(t, p.Threads)
	assert.Greater(t, len(p.Threads[0].Children), 0, "rows before the cut are read")
	out, stderr := jprofRun(t, "report", "xprof", path)
	assert.Contains(t, stderr, "is truncated")
	assert.Contains(t, out, "is truncated")
	// The log-msg on the same file system says so too, if it had room.
	if msg, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("log-msg_%d", r.PID))); err == nil && strings.Contains(string(msg), "VM death") {
		assert.Contains(t, string(msg), "cut short by a write error")
	}
}

// log-jita2n on a file system that fills: cut after a whole record.
func TestFullDiskKeepsJitA2N(t *testing.T) {
	dir := jvmtest.SmallFS(t, 48<<10)
	r := jvmtest.Start(t, jvmtest.Run{Class: "Fib", Args: []string{"25"}, Options: "METHODEVENTS,JITA2N,CALLTREE,NORTDRIVER,LOGPATH=" + dir})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("log-jita2n_%d", r.PID)))
	require.NoError(t, err, r.Stderr)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := lines[len(lines)-1]
	assert.Regexp(t, `^ \*\*\* libjprof: write error after \d+ bytes: no space left on device; \d+ records not written$`, last)
	assert.Contains(t, last, fmt.Sprintf("after %d bytes:", len(b)-len(last)-1))
	assert.Equal(t, " JitA2N", lines[0])
	record := regexp.MustCompile(`^([0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{16} [0-9a-f]{8} (LOAD|UNLOAD|DYNAMIC) .+|  INLINED .+)$`)
	n := 0
	for _, l := range lines[5 : len(lines)-1] {
		assert.Regexp(t, record, l)
		n++
	}
	assert.Greater(t, n, 100, "the records before the cut are kept")
	assert.Regexp(t, `(?m)^libjprof: warning: log-jita2n_\d+ cut short by a write error after \d+ bytes \(no space left on device\): \d+ of \d+ records not written`, r.Stderr)
}
