package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
)

// jprof, run by root, reads and writes files in directories a JVM's user
// owns (/tmp/jprof-<uid>/, /tmp/.libjprof-<uid>/), who may put anything
// there at any moment. These tests play that user.

// usersDir is a directory of uid's, closed to others, as outputDir makes
// /tmp/jprof-<uid>; and a file only root may read, for links to name.
func usersDir(t *testing.T, uid int) (string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the directory is another user's")
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("jprof-%d", uid))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, uid, uid))
	victim := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(victim, []byte("root:$6$secret:19000::::::\n"), 0o600))
	return dir, victim
}

// A log-rt the JVM's user swapped for a link to a file only root may read
// is not read: root's jprof would copy it into the output (-o DIR/, made
// readable to all) or convert it, for that user to read.
func TestConvertNotThroughLink(t *testing.T) {
	const uid = 4251
	dir, victim := usersDir(t, uid)
	path := filepath.Join(dir, "log-rt.1_4242")
	require.NoError(t, os.Symlink(victim, path))
	require.NoError(t, os.Lchown(path, uid, uid))
	lt := &liveTarget{t: attach.Exited(4242, uid, uid)}
	out := filepath.Join(t.TempDir(), "out") + "/"
	err := writeOutput(lt, path, out, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not the agent's file (not a regular file of the JVM's user, uid 4251): not read")
	assert.NoFileExists(t, filepath.Join(out, "log-rt.1_4242"), "the link's target was copied into the output")
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root:$6$secret:19000::::::\n", string(b))
}

// The files jprof reads by name in the user's directories (a log-msg, a
// namespaced JVM's record, an rtdriver shutdown marker) are checked as
// they are once open, not before: a regular file swapped for a FIFO
// between a check of the name (Lstat) and its open made root's jprof
// wait on the FIFO for ever. The user swaps the two as fast as it can
// while jprof reads.
func TestReadsNotRacedIntoFIFO(t *testing.T) {
	const uid = 4252
	dir, _ := usersDir(t, uid)
	sockDir := control.SocketDir(filepath.Dir(dir), uid)
	require.NoError(t, os.Mkdir(sockDir, 0o700))
	require.NoError(t, os.Chown(sockDir, uid, uid))
	marker := filepath.Join(sockDir, "4242.shutdown")
	death := fmt.Sprintf("%s\tinfo\tlibjprof loaded\n%s\tinfo\tVM death\n",
		time.Now().Add(-time.Minute).Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano))
	reads := map[string]struct {
		path, text string
		read       func() bool // true when it read the file's text
	}{
		"log-msg": {filepath.Join(dir, "log-msg_4242"), death,
			func() bool { return readDeath(filepath.Join(dir, "log-msg_4242"), uid) != nil }},
		"nspid": {filepath.Join(dir, "nspid_4242"), "nspid=1 start=7 seen=" + time.Now().Format(time.RFC3339Nano) + "\n",
			func() bool { _, ok := readNSRecord(dir, uid, 4242); return ok }},
		"shutdown marker": {marker, "shutdown " + time.Now().Format(time.RFC3339Nano) + " start=7\n",
			func() bool { _, ok := control.ReadShutdownMarker(marker); return ok }},
	}
	for name, r := range reads {
		t.Run(name, func(t *testing.T) {
			var stop atomic.Bool
			swapped := make(chan struct{})
			go func() {
				defer close(swapped)
				regular, fifo := r.path+".r", r.path+".f"
				for i := 0; !stop.Load(); i++ {
					if i%2 == 0 {
						os.WriteFile(regular, []byte(r.text), 0o600)
						os.Chown(regular, uid, uid)
						os.Rename(regular, r.path)
					} else {
						unix.Mkfifo(fifo, 0o600)
						os.Chown(fifo, uid, uid)
						os.Rename(fifo, r.path)
					}
				}
			}()
			defer func() { stop.Store(true); <-swapped }()
			read := 0
			for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); {
				done := make(chan bool, 1)
				go func() { done <- r.read() }()
				select {
				case ok := <-done:
					if ok {
						read++
					}
				case <-time.After(5 * time.Second):
					// Let the hung open go: a writer opens the FIFO.
					if f, err := os.OpenFile(r.path, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
					t.Fatalf("reading %s hung: it opened a FIFO swapped in after its check", r.path)
				}
			}
			assert.Positive(t, read, "the file was never read whole")
		})
	}
}

// jprof's record of a namespaced JVM is written by root in the JVM
// user's directory through what is there only as a name to replace: a
// link there, at its name or at the temporary name the record was once
// written under, is not written through.
func TestNSRecordNotThroughLinks(t *testing.T) {
	hostPID, nspid, uid := namespacedServiceAs(t, 4253, 20)
	dir := uidDir(uid)
	victim := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(victim, []byte("root:$6$secret:19000::::::\n"), 0o600))
	victim2 := victim + "2"
	require.NoError(t, os.WriteFile(victim2, []byte("root:$6$other:19000::::::\n"), 0o600))
	rec := filepath.Join(dir, fmt.Sprintf("nspid_%d", hostPID))
	for link, target := range map[string]string{rec + ".tmp": victim, rec: victim2} {
		require.NoError(t, os.Symlink(target, link))
		require.NoError(t, os.Lchown(link, uid, uid))
	}
	pid := fmt.Sprint(hostPID)
	code, _, stderr := jprofBin(t, "start", "-e", "cpu", pid)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, status(t, hostPID), "state=collecting")
	for _, v := range []string{victim, victim2} {
		b, err := os.ReadFile(v)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(b), "root:$6$"), "%s, a link's target, was written: %q", v, b)
	}
	fi, err := os.Lstat(rec)
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "%s: %v", rec, fi.Mode())
	st, _ := statOf(fi, nil)
	assert.Equal(t, uint32(uid), st.Uid)
	r, ok := readNSRecord(dir, uid, hostPID)
	assert.True(t, ok)
	assert.Equal(t, nspid, r.nspid)
	code, _, stderr = jprofBin(t, "stop", "-o", filepath.Join(t.TempDir(), "p.collapsed"), pid)
	require.Equal(t, 0, code, stderr)
}
