package main

// The files jprof keeps for a JVM in its per-user directory of the JVM's
// /tmp (/tmp/jprof-<uid>/): the agent's output directory, old log-msg
// files pruned, the record of a namespaced JVM's pid there, the loader's
// files. Read and written through ownedfile: the directory is the JVM
// user's, and jprof may run as root.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
	"github.com/libjprof/libjprof/internal/ownedfile"
)

// outputDir is the directory the agent writes into, made private to the
// JVM's user in the JVM's /tmp: /tmp/jprof-<uid>/.
func outputDir(t *attach.Target) (string, error) {
	dir := jprofDir(t)
	host := t.Path(dir)
	if err := os.Mkdir(host, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("pid %d: making %s: %w", t.PID, host, err)
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return "", fmt.Errorf("%s is not a directory", host)
	}
	if int(st.Uid) != t.UID {
		if os.Geteuid() != 0 || st.Uid != 0 {
			return "", fmt.Errorf("%s belongs to uid %d, not to the JVM's user %d: not used", host, st.Uid, t.UID)
		}
		// Made just now by root for the JVM's user.
		if err := os.Lchown(host, t.UID, t.GID); err != nil {
			return "", err
		}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %v: others may enter it; not used", host, fi.Mode().Perm())
	}
	pruneLogMsg(t, host, time.Now().Add(-logMsgKept))
	return dir, nil
}

// logMsgKept is how long jprof's directory keeps the log-msg of a JVM
// without an agent: every load writes one, and nothing else removes them.
const logMsgKept = 7 * 24 * time.Hour

// pruneLogMsg removes from host (jprof's directory in the target's /tmp)
// the log-msg files last written before cutoff whose JVM is gone: no
// process of that pid in the target's namespace, nor an agent socket.
// Profiles (log-rt and the rest) are the user's: kept.
func pruneLogMsg(t *attach.Target, host string, cutoff time.Time) {
	// Through the directory opened and checked once: its name swapped
	// for a link to another directory meanwhile (its owner may) must not
	// make root remove files there.
	d, err := ownedfile.OpenDir(host, t.UID)
	if err != nil {
		return
	}
	defer d.Close()
	old := func(n string) bool {
		st, err := d.Lstat(n)
		return err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG &&
			!time.Unix(st.Mtim.Unix()).After(cutoff)
	}
	// Records of namespaced JVMs (rememberNamespace): by host pid.
	recs, _ := d.Names(nsRecordPrefix)
	for _, r := range recs {
		pid := strings.TrimPrefix(r, nsRecordPrefix)
		if _, err := strconv.Atoi(pid); err != nil || !old(r) {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue
		}
		d.Remove(r)
	}
	msgs, _ := d.Names("")
	sockDir := t.Path(control.SocketDir(control.SocketBase, t.UID))
	for _, m := range msgs {
		if !strings.Contains(m, "-msg_") {
			continue
		}
		pid := m[strings.LastIndexByte(m, '_')+1:]
		if _, err := strconv.Atoi(pid); err != nil || !old(m) {
			continue
		}
		if _, err := os.Stat(filepath.Join(sockDir, pid+".sock")); err == nil {
			continue
		}
		if _, err := os.Stat(t.Path("/proc/" + pid)); err == nil {
			continue
		}
		d.Remove(m)
	}
}

// A JVM in a PID namespace of its own that shares the host's /tmp
// (unshare -fp --mount-proc) names its agent's files by its PID there
// (log-msg_1, log-rt.N_1), which no command given its host pid can find
// once it has exited (jprof stop <host pid> after it ended). So jprof
// keeps, while it reaches such a JVM's agent, a record in jprof's
// directory of which PID there its host pid had: nspid_<host pid>, with
// the JVM's start time and when jprof last saw its agent (nsRecord).
// vmDeath reads it.
const nsRecordPrefix = "nspid_"

// nsRecord is what a record says.
type nsRecord struct {
	nspid int
	start uint64    // the JVM's start time (clock ticks since boot)
	seen  time.Time // when jprof last reached its agent
}

// rememberNamespace writes (or refreshes) the record of t, a JVM whose
// agent this command reached, if it is in a PID namespace sharing /tmp
// and jprof's directory there is the JVM user's own (outputDir). That
// user may put anything in it, a symbolic link to /etc/shadow at the
// record's name included, while this runs as root: the record is written
// through the directory opened and checked once, as a new file made here
// and renamed onto its name (ownedfile), never through what is there.
func rememberNamespace(t *attach.Target) {
	if t.NSPid == t.PID || !t.TmpShared() {
		return
	}
	d, err := ownedfile.OpenDir(uidDir(t.UID), t.UID)
	if err != nil {
		return
	}
	defer d.Close()
	text := fmt.Sprintf("nspid=%d start=%d seen=%s\n", t.NSPid, t.StartTicks(), time.Now().Format(time.RFC3339Nano))
	_ = d.WriteFile(fmt.Sprintf("%s%d", nsRecordPrefix, t.PID), []byte(text), 0o600, t.GID)
}

// readNSRecord reads the record of host pid pid in dir, jprof's
// directory of uid: a regular file of that user's, as checked once open
// (a link there is not followed).
func readNSRecord(dir string, uid, pid int) (nsRecord, bool) {
	var r nsRecord
	b, err := ownedfile.ReadFile(filepath.Join(dir, fmt.Sprintf("%s%d", nsRecordPrefix, pid)), uid)
	if err != nil {
		return r, false
	}
	var seen string
	if n, _ := fmt.Sscanf(strings.TrimSpace(string(b)), "nspid=%d start=%d seen=%s", &r.nspid, &r.start, &seen); n != 3 || r.nspid <= 0 {
		return r, false
	}
	if r.seen, err = time.Parse(time.RFC3339Nano, seen); err != nil {
		return r, false
	}
	return r, true
}

// jprofDir is jprof's directory in the JVM's /tmp, as the JVM sees it.
func jprofDir(t *attach.Target) string { return uidDir(t.UID) }

// uidDir is jprof's directory for the JVMs of uid.
func uidDir(uid int) string { return fmt.Sprintf("/tmp/jprof-%d", uid) }

// loaderFile is what Agent_OnAttach left for its caller (the JVM's
// stderr is not the caller's), removed once read: attach-error, why the
// load failed, and attach-msg, what the agent said while loading.
func loaderFile(t *attach.Target, kind string) string {
	p := t.Path(filepath.Join(control.SocketDir(control.SocketBase, t.UID), strconv.Itoa(t.NSPid)+"."+kind))
	// The JVM's user owns the directory: what is there is read only if
	// it is a regular file of theirs once open (not through a link, not
	// a FIFO that would hang the read).
	// Whatever it was, it goes (unlink removes a link, not its target):
	// it would be in the way of the next load's.
	b, _ := ownedfile.ReadFile(p, t.UID)
	os.Remove(p)
	return strings.TrimSpace(string(b))
}
