package ownedfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// userDir makes a directory of uid's (another user's when the test runs
// as root), closed to others, and a file only this process's user may
// read outside it: what a link planted in the directory would point at.
func userDir(t *testing.T) (dir string, uid int, victim string) {
	t.Helper()
	uid = os.Geteuid()
	dir = filepath.Join(t.TempDir(), "jprof-user")
	require.NoError(t, os.Mkdir(dir, 0o700))
	if uid == 0 {
		uid = 4250
		require.NoError(t, os.Chown(dir, uid, uid))
	}
	victim = filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(victim, []byte("root:secret\n"), 0o600))
	return dir, uid, victim
}

// A link the directory's owner planted at the name written, or at the
// temporary name the old code used, is replaced, never written through:
// the file it names keeps its content; the new file is the owner's.
func TestWriteFileNotThroughLinks(t *testing.T) {
	dir, uid, victim := userDir(t)
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, "rec")))
	require.NoError(t, os.Symlink(victim, filepath.Join(dir, "rec.tmp")))
	d, err := OpenDir(dir, uid)
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.WriteFile("rec", []byte("hello\n"), 0o600, uid))
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "root:secret\n", string(b), "the link's target was written")
	fi, err := os.Lstat(filepath.Join(dir, "rec"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "%v", fi.Mode())
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, uint32(uid), fi.Sys().(*syscall.Stat_t).Uid)
	got, err := d.ReadFile("rec")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
	names, err := d.Names("rec")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"rec", "rec.tmp"}, names, "no temporary file left")
}

// A directory whose name is a link, another user's, or open to others is
// not used.
func TestOpenDirRefuses(t *testing.T) {
	dir, uid, _ := userDir(t)
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	_, err := OpenDir(link, uid)
	assert.ErrorIs(t, err, syscall.ENOTDIR, "a link is not followed (O_NOFOLLOW|O_DIRECTORY)")
	_, err = OpenDir(dir, uid+1)
	assert.ErrorContains(t, err, "want uid")
	require.NoError(t, os.Chmod(dir, 0o755))
	_, err = OpenDir(dir, uid)
	assert.ErrorContains(t, err, "closed to others")
}

// A read takes a regular file of the owner's only, as it is once open: a
// link (to a file only root may read), a FIFO (whose open would wait for
// a writer for ever) and another user's file are refused, at once.
func TestOpenRefuses(t *testing.T) {
	dir, uid, victim := userDir(t)
	mine := filepath.Join(dir, "mine")
	require.NoError(t, os.WriteFile(mine, []byte("ok"), 0o600))
	require.NoError(t, os.Chown(mine, uid, uid))
	b, err := ReadFile(mine, uid)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(victim, link))
	_, err = ReadFile(link, uid)
	assert.ErrorIs(t, err, syscall.ELOOP)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Chown(fifo, uid, uid))
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo, uid); done <- err }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrNotOwned)
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO hung")
	}

	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		require.NoError(t, os.WriteFile(other, []byte("x"), 0o644))
		_, err = ReadFile(other, uid)
		assert.True(t, errors.Is(err, ErrNotOwned), "%v", err)
	}

	d, err := OpenDir(dir, uid)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.ReadFile("link")
	assert.ErrorIs(t, err, syscall.ELOOP)
	_, err = d.ReadFile("../x")
	assert.Error(t, err)
	require.NoError(t, d.Remove("link"))
	_, err = os.Stat(victim)
	assert.NoError(t, err, "Remove removed the link, not its target")
}
