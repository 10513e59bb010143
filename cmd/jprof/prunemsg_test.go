package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
)

// A load prunes old log-msg files of JVMs that are gone (no process, no
// agent socket), and nothing else.
func TestPruneLogMsg(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: jprof's directory is another user's")
	}
	host := t.TempDir()
	tgt := &attach.Target{PID: os.Getpid(), UID: 1<<30 + os.Getpid()}
	// As outputDir leaves it: the JVM user's, closed to others (pruning
	// goes through it opened and checked).
	require.NoError(t, os.Chown(host, tgt.UID, tgt.UID))
	require.NoError(t, os.Chmod(host, 0o700))
	sockDir := tgt.Path(control.SocketDir(control.SocketBase, tgt.UID))
	require.NoError(t, os.MkdirAll(sockDir, 0o700))
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	require.NoError(t, os.WriteFile(filepath.Join(sockDir, "9000002.sock"), nil, 0o600))
	live := "log-msg_" + strconv.Itoa(os.Getpid())

	old := time.Now().Add(-8 * 24 * time.Hour)
	// Pids past any pid_max (2^22): no such process.
	files := map[string]bool{ // name: kept
		"log-msg_9000001":  false, // old, its JVM gone
		"log-msg_9000002":  true,  // old, but its agent answers
		live:               true,  // old, but its process runs
		"log-msg_9000003":  true,  // recent
		"log-rt.1_9000001": true,  // a profile
		"mine-msg_9000004": false, // another LOGPREFIX
		"log-msg_notes":    true,  // not a JVM's
	}
	for name := range files {
		p := filepath.Join(host, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		if name != "log-msg_9000003" {
			require.NoError(t, os.Chtimes(p, old, old))
		}
	}
	pruneLogMsg(tgt, host, time.Now().Add(-logMsgKept))
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(host, name))
		assert.Equal(t, kept, err == nil, name)
	}
}
