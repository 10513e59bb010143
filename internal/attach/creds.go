package attach

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// asJVM runs fn with the JVM's effective uid and gid when the caller is
// root outside the JVM's user namespace, and as the caller otherwise.
// Outside its user namespace the caller's root is an unmapped id there:
// HotSpot's peer check sees the overflow uid, and a file system mounted
// in that namespace (a container's tmpfs) refuses to create files owned
// by it (EOVERFLOW). The JVM's own ids are mapped in both.
func (t *Target) asJVM(fn func() error) error {
	if !t.switches() {
		return fn()
	}
	return asIDs(t.UID, t.GID, fn)
}

// inDir runs fn with a name for the directory dir (as the caller reaches
// it), as asJVM would. When it switches ids it opens dir first, as the
// caller, and hands fn /proc/thread-self/fd/<n> instead: the switched
// thread may not follow /proc/<pid>/root or /proc/<pid>/cwd itself,
// since the kernel lets only a process with capabilities in the JVM's
// user namespace use those links into a process of another user
// namespace.
func (t *Target) inDir(dir string, fn func(dir string) error) error {
	if !t.switches() {
		return fn(dir)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	return asIDs(t.UID, t.GID, func() error { return fn(fmt.Sprintf("/proc/thread-self/fd/%d", fd)) })
}

// switches says whether asJVM changes ids.
func (t *Target) switches() bool {
	return os.Geteuid() == 0 && !t.sameUserNS && !t.noSwitch
}

// switchMu makes switched runs take turns, so that each sees the
// process's dumpable flag as it was before any of them.
var switchMu sync.Mutex

// asIDs runs fn on an OS thread whose effective (and file system) uid
// and gid are uid and gid, while every other thread keeps root's.
//
// Go's syscall.Setresuid changes every thread of the process, but the
// Linux system calls change only the calling thread. So fn runs in a
// goroutine of its own that locks its OS thread, sets that thread's ids
// with raw setresgid and setresuid (the real and saved ids stay root's)
// and returns without unlocking: the Go runtime then ends the thread
// rather than reuse it, and no other goroutine ever runs with the
// changed ids. fn must not start goroutines that need the ids. A
// change of effective uid makes the kernel clear the process's dumpable
// flag; it is set back afterwards.
func asIDs(uid, gid int, fn func() error) error {
	switchMu.Lock()
	defer switchMu.Unlock()
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: see above. The gid goes first, while the
		// thread still has the capability to change it.
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
			done <- fmt.Errorf("setresgid(-1, %d, -1): %w", gid, e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			done <- fmt.Errorf("setresuid(-1, %d, -1): %w", uid, e)
			return
		}
		done <- fn()
	}()
	err := <-done
	if dumpable == 1 {
		unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	}
	return err
}
