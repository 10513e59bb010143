// Package ownedfile reads and writes files in a directory that another
// user owns, for a process that may do more than that user: jprof run by
// root, in a JVM user's /tmp/jprof-<uid>/ or /tmp/.libjprof-<uid>/. That
// user may put anything there under any name, and swap it for something
// else at any moment: a symbolic link to /etc/shadow where root is about
// to write (which root would then truncate and overwrite), one to a file
// only root may read where root is about to read and copy (or a FIFO, on
// which the read would hang). A check of the path before the open (Lstat)
// does not help: the name can change between the two. So:
//
//   - nothing is opened through a symbolic link at the name's last
//     component (O_NOFOLLOW), and what was opened is checked once open
//     (fstat of the descriptor: a regular file of the expected owner),
//     never before;
//   - a file is written under a name nobody else can have chosen,
//     created by this call (O_CREAT|O_EXCL, which follows no link), given
//     to the directory's owner by its descriptor (fchown) and renamed
//     onto its name, which replaces a link there rather than following
//     it;
//   - a write, a listing and a removal go through the directory opened
//     once and checked (Dir): the directory's name swapped for a link
//     to another one afterwards changes nothing.
//
// A read needs no such directory handle: a file reached through a
// swapped directory is still refused unless it is a regular file of the
// owner's, who could read it anyway.
//
// atomicfile is not for this: it follows a link at the target's name
// (to write a device in place) and leaves the file the writer's.
package ownedfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotOwned: what is at the name is not a regular file of the expected
// owner (a link, a FIFO, a device, a directory, another user's file).
var ErrNotOwned = errors.New("not a regular file of the expected owner")

// Open opens path for reading if it is a regular file owned by uid, as
// the descriptor says once open; a symbolic link at its last component
// is refused, not followed.
func Open(path string, uid int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return checked(fd, path, uid)
}

// checked wraps fd, open at path, if it is a regular file of uid's.
func checked(fd int, path string, uid int) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != uid {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path,
			Err: fmt.Errorf("%w (mode %#o, owner %d, want a regular file of uid %d)", ErrNotOwned, st.Mode, st.Uid, uid)}
	}
	// O_NONBLOCK only kept the open itself from waiting (a FIFO);
	// a regular file ignores it.
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads path whole if it is a regular file owned by uid (Open).
func ReadFile(path string, uid int) ([]byte, error) {
	f, err := Open(path, uid)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Dir is a directory of another user's, opened once and checked: every
// name is looked up in it, whatever its path names later.
type Dir struct {
	f   *os.File
	uid int
}

// OpenDir opens path, a directory that must be uid's own and closed to
// everyone else (mode 0700 or less), as the descriptor says once open;
// a symbolic link at its last component is refused, not followed.
func OpenDir(path string, uid int) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if int(st.Uid) != uid || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path,
			Err: fmt.Errorf("directory owned by uid %d with mode %#o, want uid %d's, closed to others", st.Uid, st.Mode&0o7777, uid)}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), uid: uid}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Path is the path the directory was opened by.
func (d *Dir) Path() string { return d.f.Name() }

func (d *Dir) fd() int { return int(d.f.Fd()) }

// name refuses a name that is not one entry of the directory.
func name(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsRune(n, '/') {
		return fmt.Errorf("ownedfile: %q is not a file name", n)
	}
	return nil
}

// Open opens the file name in the directory for reading, if it is a
// regular file of the directory's owner (see the package Open).
func (d *Dir) Open(n string) (*os.File, error) {
	if err := name(n); err != nil {
		return nil, err
	}
	p := filepath.Join(d.Path(), n)
	fd, err := unix.Openat(d.fd(), n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return checked(fd, p, d.uid)
}

// ReadFile reads the file name whole (Dir.Open).
func (d *Dir) ReadFile(n string) ([]byte, error) {
	f, err := d.Open(n)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile writes data as the file name, whole or not at all, with mode
// perm, owned by the directory's owner (and gid) when this process may
// give it (root): a new file under a random name, made by this call,
// renamed onto name. Whatever was at name (a symbolic link included) is
// replaced, never written through.
func (d *Dir) WriteFile(n string, data []byte, perm os.FileMode, gid int) error {
	if err := name(n); err != nil {
		return err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + n + ".tmp" + hex.EncodeToString(rnd[:])
	p := filepath.Join(d.Path(), n)
	fd, err := unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(d.Path(), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = func() error {
		if os.Geteuid() != d.uid {
			if err := unix.Fchown(fd, d.uid, gid); err != nil {
				return err
			}
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
			return err
		}
		return f.Close()
	}()
	if err == nil {
		err = unix.Renameat(d.fd(), tmp, d.fd(), n)
	}
	if err != nil {
		f.Close()
		unix.Unlinkat(d.fd(), tmp, 0)
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	return nil
}

// Lstat describes the entry name itself (a link is not followed).
func (d *Dir) Lstat(n string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := name(n); err != nil {
		return st, err
	}
	if err := unix.Fstatat(d.fd(), n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: filepath.Join(d.Path(), n), Err: err}
	}
	return st, nil
}

// Remove removes the entry name (a link itself, not what it names).
func (d *Dir) Remove(n string) error {
	if err := name(n); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), n, 0); err != nil {
		return &os.PathError{Op: "remove", Path: filepath.Join(d.Path(), n), Err: err}
	}
	return nil
}

// Names lists the entries whose names begin with prefix.
func (d *Dir) Names(prefix string) ([]string, error) {
	// A descriptor of its own: reading entries moves its offset.
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.Path(), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.Path())
	defer f.Close()
	all, err := f.Readdirnames(-1)
	var out []string
	for _, n := range all {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, err
}
