package control

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/libjprof/libjprof/internal/ownedfile"
)

// An agent whose control channel was shut down (rtdriver shutdown) stays
// loaded for the life of its JVM, with no socket: to a client it looks
// like a JVM without an agent, or like one whose load failed. It leaves a
// marker beside where its socket was, <pid>.shutdown in the user's private
// socket directory, so that jprof can say what happened instead of "no
// agent", or loading the library again for nothing. The marker holds the
// time of the shutdown and the process's start time (field 22 of
// /proc/<pid>/stat): a marker of an earlier process of the same pid, one
// killed before its agent could remove it, is not taken for this one's.

const shutdownSuffix = ".shutdown"

// ShutdownMarkerPath is the marker of the agent in the JVM of pid, run by
// uid.
func ShutdownMarkerPath(base string, uid, pid int) string {
	return filepath.Join(SocketDir(base, uid), strconv.Itoa(pid)+shutdownSuffix)
}

// ShutdownMarker is what the marker says.
type ShutdownMarker struct {
	At    time.Time // when the channel was shut down
	Start uint64    // the process's start time, in clock ticks since boot
}

// Write writes the marker's text.
func (m ShutdownMarker) Write(w io.Writer) error {
	_, err := fmt.Fprintf(w, "shutdown %s start=%d\n", m.At.Format(time.RFC3339Nano), m.Start)
	return err
}

// ReadShutdownMarker reads a marker; false if there is none, or what is
// there is not one an agent wrote: a regular file owned by the user its
// private directory is named by (CheckPrivateDir). jprof reads it as
// root, in a directory that user owns: the check is of the file opened,
// not of its name before the open (a link swapped in between would be
// followed), and a link is not opened at all (ownedfile).
func ReadShutdownMarker(path string) (ShutdownMarker, bool) {
	var m ShutdownMarker
	dir := filepath.Dir(path)
	uid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), socketDirPrefix))
	if err != nil || CheckPrivateDir(dir, uid) != nil {
		return m, false
	}
	b, err := ownedfile.ReadFile(path, uid)
	if err != nil {
		return m, false
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || f[0] != "shutdown" || !strings.HasPrefix(f[2], "start=") {
		return m, false
	}
	if m.At, err = time.Parse(time.RFC3339Nano, f[1]); err != nil {
		return m, false
	}
	if m.Start, err = strconv.ParseUint(strings.TrimPrefix(f[2], "start="), 10, 64); err != nil {
		return m, false
	}
	return m, true
}

// ProcStart is the start time (clock ticks since boot) in the stat file
// statPath (/proc/self/stat, /proc/<pid>/stat); 0 if it cannot be read.
func ProcStart(statPath string) uint64 {
	b, err := os.ReadFile(statPath)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}
