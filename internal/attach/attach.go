package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/internal/peercred"
)

// DefaultTimeout bounds Execute and LoadAgent when their context has no
// deadline.
const DefaultTimeout = 10 * time.Second

// maxReply bounds what one reply may hold (a thread dump of a big JVM is
// a few MiB).
const maxReply = 64 << 20

// Limits of a protocol version 1 request (HotSpot's AttachOperation).
const (
	maxNameLen = 16
	maxArgLen  = 1024
	maxArgs    = 3
)

// statusBadVersion is the status of a request whose version the JVM
// refuses.
const statusBadVersion = 101

// ReplyError is a reply whose status is not 0.
type ReplyError struct {
	Target *Target
	Cmd    string
	Status int
	Text   string // what the JVM wrote after the status line
}

func (e *ReplyError) Error() string {
	if e.Status == statusBadVersion {
		return fmt.Sprintf("JVM %s refused attach protocol version 1 (status %d)", e.Target, e.Status)
	}
	text := strings.TrimSpace(e.Text)
	if text == "" {
		text = "no message"
	}
	return fmt.Sprintf("JVM %s: %s failed (status %d): %s", e.Target, e.Cmd, e.Status, text)
}

// Execute runs one attach operation, cmd with up to three arguments, and
// returns the text of the reply (without its status line). A status
// other than 0 is a *ReplyError holding the JVM's text. When the JVM's
// attach listener is not running yet, Execute starts it (the trigger
// file and SIGQUIT). ctx bounds every step; without a deadline,
// DefaultTimeout does.
func (t *Target) Execute(ctx context.Context, cmd string, args ...string) (string, error) {
	status, text, err := t.request(ctx, cmd, args...)
	if err != nil {
		return "", err
	}
	if status != 0 {
		return text, &ReplyError{Target: t, Cmd: cmd, Status: status, Text: text}
	}
	return text, nil
}

// LoadAgent loads the JVMTI agent at libPath (an absolute path as the
// JVM sees it, see Stage) into the JVM and calls its Agent_OnAttach with
// options. It succeeds when Agent_OnAttach returned 0.
func (t *Target) LoadAgent(ctx context.Context, libPath, options string) error {
	if !strings.HasPrefix(libPath, "/") {
		return fmt.Errorf("agent path %q is not absolute", libPath)
	}
	status, text, err := t.request(ctx, "load", libPath, "true", options)
	if err != nil {
		return err
	}
	return loadResult(t, libPath, status, text)
}

// loadResult reads the reply to "load". JDK 17 answers status -1 with
// "<lib> was not loaded.\n<dlerror>" or "Agent_OnAttach is not available
// in <lib>", and status 0 with "return code: <n>" once Agent_OnAttach
// ran; JDK 25 answers status 0 to all, with the same texts (and
// "Dynamic agent loading is not enabled..." where it is turned off).
// JDKs before 17 wrote the bare return code.
func loadResult(t *Target, lib string, status int, text string) error {
	msg := strings.TrimSpace(text)
	oneLine := strings.Join(strings.Fields(msg), " ")
	for _, line := range strings.Split(msg, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "return code:"); ok {
			rc, err := strconv.Atoi(strings.TrimSpace(n))
			if err == nil {
				return agentResult(t, lib, rc)
			}
		}
	}
	if status == 0 {
		// The bare return code of JDKs before 17.
		if rc, err := strconv.Atoi(msg); err == nil {
			return agentResult(t, lib, rc)
		}
	}
	switch {
	case strings.Contains(msg, "Agent_OnAttach is not available"):
		return fmt.Errorf("JVM %s cannot use %s as an agent: the library has no Agent_OnAttach function", t, lib)
	case strings.Contains(msg, "was not loaded"):
		// The dynamic linker's reason follows on the next line.
		return fmt.Errorf("JVM %s could not load %s: %s", t, lib, oneLine)
	case strings.Contains(msg, "Dynamic agent loading is not enabled"):
		return fmt.Errorf("JVM %s refuses to load agents (it runs with -XX:-EnableDynamicAgentLoading): %s", t, oneLine)
	case msg == "":
		return fmt.Errorf("JVM %s did not say whether it loaded %s (status %d, no text)", t, lib, status)
	}
	return fmt.Errorf("JVM %s did not load %s (status %d): %s", t, lib, status, oneLine)
}

func agentResult(t *Target, lib string, rc int) error {
	if rc != 0 {
		return fmt.Errorf("JVM %s loaded %s but its Agent_OnAttach failed with return code %d", t, lib, rc)
	}
	return nil
}

// Listening makes sure the JVM's attach listener is up, as a request
// does first: when its socket is missing it starts it (the trigger file
// and SIGQUIT) and waits for it until ctx ends. A caller that may give up
// (jprof, interrupted) waits here, with a context it cancels, and sends
// its request after, so that a request once sent is never abandoned
// half-way (a load would go on in the JVM unseen).
func (t *Target) Listening(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	sock := t.Path(fmt.Sprintf("/tmp/.java_pid%d", t.NSPid))
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or the request says why not
	}
	if err := t.CheckAttachable(); err != nil {
		return err
	}
	return t.startListener(ctx, sock)
}

// request sends one operation and returns the reply's status and text.
func (t *Target) request(ctx context.Context, cmd string, args ...string) (int, string, error) {
	req, err := encodeRequest(cmd, args)
	if err != nil {
		return 0, "", err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	sock := t.Path(fmt.Sprintf("/tmp/.java_pid%d", t.NSPid))
	if _, err := os.Lstat(sock); errors.Is(err, fs.ErrNotExist) {
		// Before any SIGQUIT: such a JVM would only print thread dumps.
		if err := t.CheckAttachable(); err != nil {
			return 0, "", err
		}
		if err := t.startListener(ctx, sock); err != nil {
			return 0, "", err
		}
	} else if err != nil {
		return 0, "", fmt.Errorf("JVM %s: %w", t, err)
	}
	conn, err := t.dial(ctx, sock)
	if errors.Is(err, unix.ECONNREFUSED) {
		// Nobody listens: the socket of an earlier process of this pid
		// (a JVM killed before it could remove it). This JVM, once
		// triggered, makes its own.
		if rerr := os.Remove(sock); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return 0, "", fmt.Errorf("JVM %s: %s was left by an earlier process (nobody listens on it) and cannot be removed: %w",
				t, sock, rerr)
		}
		if err := t.CheckAttachable(); err != nil {
			return 0, "", err
		}
		if err := t.startListener(ctx, sock); err != nil {
			return 0, "", err
		}
		conn, err = t.dial(ctx, sock)
	}
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	op := cmd
	if cmd == "jcmd" && len(args) > 0 {
		op += " " + strings.Fields(args[0] + " ")[0]
	}
	// The listener must be this JVM, before anything is sent: two JVMs
	// of one PID in PID namespaces that share /tmp name one socket, and
	// the request would go to the other (its heap dumped under this
	// one's name). A JVM gone meanwhile is said as such.
	// (A peer whose credentials cannot be read is let through, as
	// before the check: the JVM's own peer check still applies.)
	if cred, err := peercred.Of(conn); err == nil && int(cred.Pid) != t.PID {
		whose := fmt.Sprintf("pid %d's", cred.Pid)
		if cred.Pid == 0 {
			whose = "a process's outside this PID namespace"
		}
		if t.exited(4) { // a kill takes a moment to show
			return 0, "", &openError{fmt.Sprintf("JVM %s exited before %s was sent: its attach socket %s is %s now",
				t, op, sock, whose), ErrNoProcess}
		}
		return 0, "", &openError{fmt.Sprintf("JVM %s: %s is %s attach socket, not pid %d's: two JVMs of PID %d in PID "+
			"namespaces that share /tmp name one socket; this one cannot be reached through it (give each its own /tmp)",
			t, sock, whose, t.PID, t.NSPid), ErrOtherJVM}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	// A refused peer is closed unanswered, so a failed write is only
	// reported if no reply can be read either.
	_, werr := conn.Write(req)
	reply, rerr := io.ReadAll(io.LimitReader(conn, maxReply+1))
	if ctx.Err() != nil {
		return 0, "", fmt.Errorf("JVM %s: %s: no complete reply: %w", t, cmd, context.Cause(ctx))
	}
	if len(reply) == 0 {
		why := "end of file"
		if rerr != nil {
			why = rerr.Error()
		} else if werr != nil {
			why = werr.Error()
		}
		// A JVM killed while it works on the request (a heap dump
		// takes long) closes the connection as it goes: said as such,
		// not as a refusal.
		if t.exitedSoon() {
			return 0, "", &openError{fmt.Sprintf("JVM %s exited during %s (the attach connection closed without a reply): "+
				"killed, or it crashed (its hs_err_pid%d.log says why, if it wrote one)", t, op, t.NSPid), ErrNoProcess}
		}
		if t.peerAccepted() {
			return 0, "", fmt.Errorf("JVM %s closed the attach connection without a reply (%s) to %s: not a refusal "+
				"of this process (uid/gid %d/%d, which HotSpot accepts as the JVM's own or root's): the JVM could not "+
				"read the request or failed while answering it, and runs on", t, why, op, os.Geteuid(), os.Getegid())
		}
		return 0, "", fmt.Errorf("JVM %s closed the attach connection without a reply (%s): HotSpot does so to a peer "+
			"that is neither root nor of its effective uid and gid (%d/%d; this process: %d/%d), "+
			"and to a request it cannot read", t, why, t.UID, t.GID, os.Geteuid(), os.Getegid())
	}
	if len(reply) > maxReply {
		return 0, "", fmt.Errorf("JVM %s: %s: reply longer than %d bytes", t, cmd, maxReply)
	}
	line, text, found := bytes.Cut(reply, []byte("\n"))
	status, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || (!found && rerr != nil) {
		return 0, "", fmt.Errorf("JVM %s: %s: malformed reply %q", t, cmd, truncate(reply, 80))
	}
	return status, string(text), nil
}

// encodeRequest frames a protocol version 1 request.
func encodeRequest(cmd string, args []string) ([]byte, error) {
	if cmd == "" || len(cmd) > maxNameLen || strings.ContainsRune(cmd, 0) {
		return nil, fmt.Errorf("attach operation name %q: must be 1 to %d bytes without NUL", cmd, maxNameLen)
	}
	if len(args) > maxArgs {
		return nil, fmt.Errorf("attach operation %s: %d arguments, at most %d", cmd, len(args), maxArgs)
	}
	var b bytes.Buffer
	b.WriteString("1\x00" + cmd + "\x00")
	for i := range maxArgs {
		a := ""
		if i < len(args) {
			a = args[i]
		}
		if len(a) > maxArgLen || strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("attach operation %s: argument %d is longer than %d bytes or holds a NUL", cmd, i, maxArgLen)
		}
		b.WriteString(a + "\x00")
	}
	return b.Bytes(), nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// startListener asks the JVM to open its attach socket sock: it writes
// the trigger file, sends SIGQUIT once the JVM handles that signal, and
// waits for the socket until ctx ends. The trigger file is removed
// whatever happens.
func (t *Target) startListener(ctx context.Context, sock string) error {
	removeTrigger, err := t.createTrigger()
	if err != nil {
		return err
	}
	defer removeTrigger()

	start := time.Now()
	deadline, _ := ctx.Deadline()
	total := deadline.Sub(start)
	var signalled, signalledAgain bool
	delay := 5 * time.Millisecond
	for {
		if _, err := os.Lstat(sock); err == nil {
			return nil
		}
		// A SIGQUIT the JVM does not catch would kill it: send one
		// only once the JVM's handler is in place, and a second one
		// halfway through in case the first came too early in start-up.
		half := signalled && !signalledAgain && time.Since(start) > total/2
		if !signalled || half {
			sent, err := t.sendQuit()
			if err != nil {
				return err
			}
			if sent {
				signalledAgain = signalled
				signalled = true
			}
		} else if !t.alive() {
			return &openError{fmt.Sprintf("JVM %s exited", t), ErrNoProcess}
		}
		select {
		case <-ctx.Done():
			why := "it may run with -XX:+DisableAttachMechanism, still be starting, or not be a HotSpot JVM"
			if !signalled {
				why = "it does not handle SIGQUIT (still starting, or started with -Xrs)"
			}
			return fmt.Errorf("JVM %s did not open its attach socket %s within %s: %s",
				t, sock, time.Since(start).Round(time.Millisecond), why)
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// createTrigger makes the file .attach_pid<nspid> that tells the JVM's
// SIGQUIT handler to start the attach listener: in the JVM's working
// directory, else in its /tmp. HotSpot honours it only when its owner is
// root or the JVM's effective uid as the JVM sees them, so a root caller
// gives it to the JVM's uid and gid. Root outside the JVM's user
// namespace creates it as the JVM (see inDir). It returns a function
// that removes the file.
func (t *Target) createTrigger() (remove func(), err error) {
	name := fmt.Sprintf(".attach_pid%d", t.NSPid)
	var errs []error
	for _, dir := range []string{procPath(t.PID, "cwd"), t.Path("/tmp")} {
		err := t.inDir(dir, func(d string) error {
			p := d + "/" + name
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if errors.Is(err, fs.ErrExist) {
				// Left by another attacher; HotSpot takes it all the
				// same if it has the right owner.
				if ok, _ := ownedBy(p, t.UID); ok {
					return nil
				}
			}
			if err != nil {
				return err
			}
			if os.Geteuid() == 0 {
				err = f.Chown(t.UID, t.GID)
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(p)
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", dir, name, err))
			continue
		}
		return func() {
			t.inDir(dir, func(d string) error { return os.Remove(d + "/" + name) })
		}, nil
	}
	return nil, fmt.Errorf("JVM %s: cannot create the attach trigger file: %w", t, errors.Join(errs...))
}

func ownedBy(p string, uid int) (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return false, err
	}
	return int(st.Uid) == uid || st.Uid == 0, nil
}

// sendQuit sends SIGQUIT to the JVM if it catches that signal. It holds
// a pidfd of the process while it checks that the process is still the
// one Open saw and that it catches SIGQUIT, and signals through it, so
// that a pid reused meanwhile is never signalled.
func (t *Target) sendQuit() (sent bool, err error) {
	exited := &openError{fmt.Sprintf("JVM %s exited", t), ErrNoProcess}
	pfd, err := unix.PidfdOpen(t.PID, 0)
	if err == unix.ESRCH {
		return false, exited
	}
	if err != nil {
		return false, fmt.Errorf("JVM %s: pidfd_open: %w", t, err)
	}
	defer unix.Close(pfd)
	if !t.alive() {
		return false, exited
	}
	if !catchesSIGQUIT(t.PID) {
		return false, nil
	}
	if err := unix.PidfdSendSignal(pfd, unix.SIGQUIT, nil, 0); err != nil {
		if err == unix.ESRCH {
			return false, exited
		}
		return false, fmt.Errorf("JVM %s: send SIGQUIT: %w", t, err)
	}
	return true, nil
}

// catchesSIGQUIT says whether the process has a handler for SIGQUIT
// (SigCgt in /proc/<pid>/status) and does not ignore it.
func catchesSIGQUIT(pid int) bool {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return false
	}
	const bit = 1 << (syscall.SIGQUIT - 1)
	caught, ignored := false, false
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "SigCgt" && key != "SigIgn") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(val), 16, 64)
		if err != nil {
			return false
		}
		if key == "SigCgt" {
			caught = mask&bit != 0
		} else {
			ignored = mask&bit != 0
		}
	}
	return caught && !ignored
}

// dial connects to the JVM's attach socket. It opens the socket file
// with O_PATH first, checks that what it opened is a socket owned by
// the JVM's uid (so that nobody else's socket in a shared /tmp is
// trusted), and connects to that very file through
// /proc/thread-self/fd/<n>, which also keeps the address within the
// 108 bytes a socket address holds.
func (t *Target) dial(ctx context.Context, sock string) (*net.UnixConn, error) {
	pfd, err := unix.Open(sock, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("JVM %s: open attach socket %s: %w", t, sock, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, fmt.Errorf("JVM %s: stat %s: %w", t, sock, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, fmt.Errorf("JVM %s: %s is not a socket", t, sock)
	}
	if int(st.Uid) != t.UID {
		return nil, fmt.Errorf("JVM %s: %s belongs to uid %d, not to the JVM's uid %d; not connecting", t, sock, st.Uid, t.UID)
	}
	addr := fmt.Sprintf("/proc/thread-self/fd/%d", pfd)

	// Root in the JVM's user namespace passes HotSpot's peer check as
	// root; root outside it shows up as the overflow uid, so asJVM
	// connects with the JVM's own uid and gid instead (the kernel
	// records the connecting thread's ids for SO_PEERCRED).
	var fd int
	err = t.asJVM(func() (err error) {
		fd, err = connectRetry(ctx, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("JVM %s: connect to %s: %w", t, sock, err)
	}
	f := os.NewFile(uintptr(fd), sock)
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("JVM %s: %w", t, err)
	}
	return c.(*net.UnixConn), nil
}

// connectRetry connects a non-blocking UNIX stream socket to addr,
// retrying while the listener's backlog is full, until ctx ends.
func connectRetry(ctx context.Context, addr string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	delay := time.Millisecond
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: addr})
		if err == nil || err == unix.EISCONN {
			return fd, nil
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			unix.Close(fd)
			return -1, err
		}
		// EAGAIN: the listener's backlog is full (it serves one
		// operation at a time).
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return -1, fmt.Errorf("listener busy: %w", context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}
