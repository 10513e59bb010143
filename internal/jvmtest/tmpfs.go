package jvmtest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// SmallFS mounts a tmpfs of size bytes (rounded up to pages by the
// kernel) on a fresh directory and unmounts it when the test ends: a
// real file system that fills, for tests of what writers do on ENOSPC.
// It skips the test, saying why, where mounting is not allowed (not
// root, no CAP_SYS_ADMIN, no mount(8)).
func SmallFS(t testing.TB, size int64) string {
	t.Helper()
	return mountTmpfs(t, fmt.Sprintf("size=%d,mode=0777", size))
}

// ReadOnlyFS mounts an empty read-only tmpfs on a fresh directory: a
// LOGPATH nobody, not even root, can write.
func ReadOnlyFS(t testing.TB) string {
	t.Helper()
	return mountTmpfs(t, "size=64k,ro")
}

func mountTmpfs(t testing.TB, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "libjprof-test", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
