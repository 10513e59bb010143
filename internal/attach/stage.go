package attach

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// stagePrefix starts the names of Stage's directories in the JVM's /tmp.
const stagePrefix = ".libjprof-stage-"

// Stage makes files (regular files, e.g. libjprof.so and the jar that
// must sit beside it) reachable by the JVM, side by side, and returns
// their directory as the JVM sees it. When the JVM shares the caller's
// mount namespace and root, the files are in one directory and the
// JVM's uid can read them, that directory is returned as it is.
// Otherwise they are copied into /tmp/.libjprof-stage-<uid>-<hash>/ in
// the JVM's mount namespace, owned by the JVM's uid with modes 0755 and
// 0644 and renamed into place whole; an identical copy already there is
// reused, and a directory of that name that is not one is replaced.
func (t *Target) Stage(files ...string) (string, error) {
	if len(files) == 0 {
		return "", errors.New("stage: no files")
	}
	abs := make([]string, len(files))
	contents := make([][]byte, len(files))
	seen := map[string]bool{}
	for i, f := range files {
		a, err := filepath.Abs(f)
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(a)
		if err != nil {
			return "", fmt.Errorf("stage: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("stage: %s is not a regular file", a)
		}
		base := filepath.Base(a)
		if seen[base] {
			return "", fmt.Errorf("stage: two files named %s", base)
		}
		seen[base] = true
		abs[i] = a
	}
	if dir := filepath.Dir(abs[0]); t.sameRoot {
		ok := true
		for _, a := range abs {
			ok = ok && filepath.Dir(a) == dir && t.canRead(a)
		}
		if ok {
			return dir, nil
		}
	}
	sum := sha256.New()
	for i, a := range abs {
		b, err := os.ReadFile(a)
		if err != nil {
			return "", fmt.Errorf("stage: %w", err)
		}
		contents[i] = b
		sum.Write([]byte(filepath.Base(a)))
		binary.Write(sum, binary.LittleEndian, int64(len(b)))
		sum.Write(b)
	}
	name := fmt.Sprintf("%s%d-%s", stagePrefix, t.UID, hex.EncodeToString(sum.Sum(nil))[:16])
	// Root outside the JVM's user namespace writes as the JVM (see
	// inDir).
	err := t.inDir(t.Path("/tmp"), func(tmp string) (err error) {
		name, err = t.copyTo(tmp, name, abs, contents)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("stage in the /tmp of JVM %s: %w", t, err)
	}
	return "/tmp/" + name, nil
}

// copyTo makes dir/name a directory holding the files, unless it is one
// already, and returns name. Should a bad directory of that name resist
// replacement (made by another user), it returns the name of the fresh
// copy instead.
func (t *Target) copyTo(dir, name string, abs []string, contents [][]byte) (string, error) {
	final := dir + "/" + name
	if t.staged(final, abs, contents) {
		return name, nil
	}
	tmp, err := os.MkdirTemp(dir, name+".tmp-")
	if err != nil {
		return "", err
	}
	if err := t.fill(tmp, abs, contents); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	for try := 0; ; try++ {
		err := os.Rename(tmp, final)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.ENOTDIR) || try > 0 {
			os.RemoveAll(tmp)
			return "", err
		}
		// Made by someone else meanwhile: keep it if it is a good
		// copy, else replace it.
		if t.staged(final, abs, contents) {
			os.RemoveAll(tmp)
			return name, nil
		}
		if os.RemoveAll(final) != nil {
			return filepath.Base(tmp), nil
		}
	}
}

// fill writes the files into dir and gives dir and them to the JVM's
// uid (which they have already when written as the JVM).
func (t *Target) fill(dir string, abs []string, contents [][]byte) error {
	root := os.Geteuid() == 0
	for i, a := range abs {
		p := filepath.Join(dir, filepath.Base(a))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(contents[i])
		if err == nil && root {
			err = f.Chown(t.UID, t.GID)
		}
		if err == nil {
			err = f.Chmod(0o644)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if root {
		if err := os.Chown(dir, t.UID, t.GID); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o755)
}

// staged says whether dir holds exactly what Stage would put there: a
// real directory owned by the JVM's uid, mode 0755, with each file
// regular, owned likewise, mode 0644 and of the same content.
func (t *Target) staged(dir string, abs []string, contents [][]byte) bool {
	good := func(p string, dir bool) bool {
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil || int(st.Uid) != t.UID {
			return false
		}
		if dir {
			return st.Mode&syscall.S_IFMT == syscall.S_IFDIR && st.Mode&0o7777 == 0o755
		}
		return st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&0o7777 == 0o644
	}
	if !good(dir, true) {
		return false
	}
	for i, a := range abs {
		p := filepath.Join(dir, filepath.Base(a))
		if !good(p, false) {
			return false
		}
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, contents[i]) {
			return false
		}
	}
	return true
}

// canRead says whether the JVM's effective uid and groups may read the
// file p, by the permission bits of p and of every directory above it
// (ACLs and security modules are not consulted).
func (t *Target) canRead(p string) bool {
	if t.UID == 0 {
		return true
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	allowed := func(path string, want uint32) bool {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			return false
		}
		perm := st.Mode & 0o7
		if int(st.Uid) == t.UID {
			perm = st.Mode >> 6 & 0o7
		} else {
			for _, g := range t.groups {
				if int(st.Gid) == g {
					perm = st.Mode >> 3 & 0o7
					break
				}
			}
		}
		return perm&want == want
	}
	if !allowed(real, 4) {
		return false
	}
	for d := filepath.Dir(real); ; d = filepath.Dir(d) {
		if !allowed(d, 1) {
			return false
		}
		if d == "/" {
			return true
		}
	}
}
