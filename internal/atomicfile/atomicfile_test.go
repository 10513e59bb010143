package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))

	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return boom
	})
	assert.ErrorIs(t, err, boom)
	b, _ := os.ReadFile(path)
	assert.Equal(t, "old", string(b), "a failed write leaves the old file")

	require.NoError(t, Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}))
	b, _ = os.ReadFile(path)
	assert.Equal(t, "new", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file left behind")
}

func TestNothingVisibleBeforeCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path)
	require.NoError(t, err)
	_, err = f.Write([]byte("data"))
	require.NoError(t, err)
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err))
	require.NoError(t, f.Commit())
	f.Abort() // after Commit: nothing
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "data", string(b))
}

func TestCreateInMissingDirectory(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir", "out"))
	assert.Error(t, err)
}

// A device is written in place, never replaced by a file.
func TestDeviceWrittenInPlace(t *testing.T) {
	require.NoError(t, Write("/dev/null", func(w io.Writer) error {
		_, err := io.WriteString(w, "discarded")
		return err
	}))
	fi, err := os.Stat("/dev/null")
	require.NoError(t, err)
	assert.Equal(t, os.ModeDevice|os.ModeCharDevice, fi.Mode()&(os.ModeDevice|os.ModeCharDevice), "still a device")
	ents, err := os.ReadDir("/dev")
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".null.tmp"), "no temporary file left in /dev: %s", e.Name())
	}
}
