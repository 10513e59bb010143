package control

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The agent's UNIX socket lives where the JDK keeps its attach sockets,
// under /tmp and not $TMPDIR: rtdriver must find it whatever either
// process's environment says. Each user has a directory of their own,
// mode 0700, so that nobody else can reach, remove or replace a socket in
// it, and the socket is named by the PID the JVM sees (its PID namespace's,
// inside a container): /tmp/.libjprof-<uid>/<pid>.sock.
const SocketBase = "/tmp"

const (
	socketDirPrefix = ".libjprof-"
	socketSuffix    = ".sock"
	// probeTimeout bounds the check that a socket file left behind has no
	// agent behind it any more.
	probeTimeout = time.Second
)

// SocketDir is the directory of uid's sockets under base.
func SocketDir(base string, uid int) string {
	return filepath.Join(base, socketDirPrefix+strconv.Itoa(uid))
}

// SocketPath is the socket of the agent in the JVM of pid, run by uid.
func SocketPath(base string, uid, pid int) string {
	return filepath.Join(SocketDir(base, uid), strconv.Itoa(pid)+socketSuffix)
}

// listenUnix opens the control socket at path for a JVM run by owner: it
// makes the private directory, removes a socket a dead agent of the same
// PID left behind, and leaves the new one readable by owner only.
func listenUnix(path string, owner int) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("rtdriver socket directory: %w", err)
	}
	if err := CheckPrivateDir(dir, owner); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		c, err := net.DialTimeout("unix", path, probeTimeout)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("rtdriver socket %s: another agent listens on it (a JVM of the same PID in another PID namespace sharing %s?)", path, filepath.Dir(dir))
		}
		// Stale: its JVM died without removing it (SIGKILL, crash).
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rtdriver socket %s left by a dead JVM: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("rtdriver listen: %w", err)
	}
	// The directory already keeps others out; the mode says so again to
	// whoever looks, and keeps them out should the directory be opened.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("rtdriver socket %s: %w", path, err)
	}
	return ln, nil
}

// CheckPrivateDir refuses a socket directory that another user could have
// made (to read or replace the sockets in it) or that others may enter.
func CheckPrivateDir(dir string, owner int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("rtdriver socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("rtdriver socket directory %s is not a directory (%v)", dir, fi.Mode().Type())
	case !ok:
		return fmt.Errorf("rtdriver socket directory %s: no owner", dir)
	case int(st.Uid) != owner:
		return fmt.Errorf("rtdriver socket directory %s belongs to uid %d, not to this JVM's uid %d: remove it", dir, st.Uid, owner)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("rtdriver socket directory %s has mode %v: others may enter it; chmod 700 it", dir, fi.Mode().Perm())
	}
	return nil
}

// Agent is a control socket found on the local host.
type Agent struct {
	PID  int    // the PID the JVM sees (in its PID namespace)
	UID  int    // the user the JVM runs as, who owns the socket
	Path string // the socket
	// HostPID is the JVM's PID as the caller sees it when the caller
	// asked for a PID (AgentsOfPID), 0 when it only listed the sockets.
	// JVMs of the same PID in two PID namespaces that share /tmp name
	// one socket: the one that made it is another JVM than the other's
	// caller asked for, which DialAgent tells by the listener's PID.
	HostPID int
}

// FindAgents lists the control sockets under base that uid may use: its
// own, or every user's when uid is 0 (root). Sockets are not probed: a JVM
// killed outright leaves its socket behind, and dialing it is refused
// (ECONNREFUSED). A socket whose owner does not match its directory was
// not made by an agent and is skipped.
func FindAgents(base string, uid int) ([]Agent, error) {
	dirs := []string{SocketDir(base, uid)}
	if uid == 0 {
		var err error
		if dirs, err = filepath.Glob(filepath.Join(base, socketDirPrefix+"*")); err != nil {
			return nil, err
		}
	}
	var found []Agent
	for _, dir := range dirs {
		if _, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), socketDirPrefix)); err != nil {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), socketSuffix))
			if err != nil || !strings.HasSuffix(e.Name(), socketSuffix) || e.Type()&fs.ModeSocket == 0 {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if owner, ok := agentSocket(dir, path); ok {
				found = append(found, Agent{PID: pid, UID: owner, Path: path})
			}
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].PID != found[j].PID {
			return found[i].PID < found[j].PID
		}
		return found[i].Path < found[j].Path
	})
	return found, nil
}

// AgentsOfPID lists the control sockets of the JVM of pid, as this process
// sees its PIDs: under base, and, for a JVM in a container (another PID or
// mount namespace), under base as that JVM sees it, named by its PID there.
func AgentsOfPID(base string, pid int) []Agent {
	var found []Agent
	host := pid
	seen := map[string]bool{}
	// Where this process sees the JVM, only a socket of the user the JVM
	// runs as can be its agent's: another user may make a directory of
	// their own and a socket named by any PID in it.
	want := -1
	if owner, ok := ProcOwner(pid); ok {
		want = owner
	}
	look := func(base string, pid int) {
		// Not a glob of the file: the directories of other users may be
		// searched (to be told no) but not read.
		dirs, _ := filepath.Glob(filepath.Join(base, socketDirPrefix+"*"))
		for _, d := range dirs {
			p := filepath.Join(d, strconv.Itoa(pid)+socketSuffix)
			if owner, ok := agentSocket(d, p); ok && !seen[p] && (want < 0 || owner == want) && !stale(p) {
				seen[p] = true
				found = append(found, Agent{PID: pid, UID: owner, Path: p, HostPID: host})
			}
		}
	}
	// In another PID namespace the agent named its socket by its PID
	// there: a socket here named by pid is another process's (a dead
	// JVM's whose PID came back), never its.
	if nspid := namespacePID(pid); nspid > 0 && nspid != pid {
		look(filepath.Join("/proc", strconv.Itoa(pid), "root", base), nspid)
		return found
	}
	look(base, pid)
	return found
}

// agentSocket says whether path, in the socket directory dir, can be an
// agent's socket, and whose: the directory is a real directory named by
// its owner's uid, and the socket belongs to that user. Anything else was
// not made by an agent (a user cannot make a file owned by another).
func agentSocket(dir, path string) (int, bool) {
	dirUID, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), socketDirPrefix))
	if err != nil {
		return 0, false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return 0, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != dirUID {
		return 0, false
	}
	owner, ok := fileOwner(path)
	return owner, ok && owner == dirUID
}

// stale says a socket has nothing listening: left by a JVM killed
// before its agent could remove it, whose PID another process now has
// (PIDs come back, within seconds on a busy machine with 32,768 of them).
func stale(path string) bool {
	c, err := net.DialTimeout("unix", path, 300*time.Millisecond)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return false
}

// ProcOwner is the user the process pid runs as, as /proc shows it.
func ProcOwner(pid int) (int, bool) {
	fi, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// namespacePID is the PID the process pid has in its own (innermost) PID
// namespace, from the NSpid line of /proc/<pid>/status; 0 when unknown.
func namespacePID(pid int) int {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

func fileOwner(path string) (int, bool) {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
