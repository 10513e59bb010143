package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
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

// TestWritePerm: a private file is never readable by others, neither
// while it is written nor once in place, and replaces a readable one.
func TestWritePerm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, WritePerm(path, 0o600, func(w io.Writer) error {
		tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".private.tmp*"))
		require.Len(t, tmp, 1)
		st, err := os.Stat(tmp[0])
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "while written")
		_, err = io.WriteString(w, "secret")
		return err
	}))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
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

// Many buffers' worth, in writes of odd sizes that straddle buffer ends,
// comes out whole and in order.
func TestLargeWriteInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	var want []byte
	require.NoError(t, Write(path, func(w io.Writer) error {
		for i := 0; len(want) < 5*asyncBuffers*asyncSize; i++ {
			chunk := []byte(strings.Repeat(string(rune('a'+i%26)), 1+i*7919%70001))
			want = append(want, chunk...)
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, len(want), len(got))
	assert.True(t, string(want) == string(got), "content differs")
}

// A file of many megabytes has its disk writes started as it grows, so
// that the sync before the rename has little left to wait for; the
// content is whole. A device written in place gets no such advice.
func TestWritebackStartedAsItGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	f, err := Create(path)
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 3 * writebackStep >> 20 {
		_, err := f.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, f.Commit())
	assert.GreaterOrEqual(t, f.w.started, int64(2*writebackStep), "writeback started every %d bytes", writebackStep)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.EqualValues(t, 3*writebackStep, fi.Size())

	dev, err := Create(os.DevNull)
	require.NoError(t, err)
	for range 2 * writebackStep >> 20 {
		_, err := dev.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, dev.Commit())
	assert.Zero(t, dev.w.started)
}

// A write that fails in the background (a full device) is reported by
// a later Write, so that the caller stops early, and by Commit; never
// lost.
func TestBackgroundWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	block := make([]byte, 100<<10)
	var werr error
	err := Write("/dev/full", func(w io.Writer) error {
		for range 4 * asyncBuffers * asyncSize / len(block) {
			if _, werr = w.Write(block); werr != nil {
				return werr
			}
		}
		return nil
	})
	require.Error(t, werr, "a Write returns the background error")
	assert.Contains(t, werr.Error(), "no space")
	require.ErrorIs(t, err, werr)
	// Small writes never leave the caller's goroutine: the error comes
	// from Commit.
	err = Write("/dev/full", func(w io.Writer) error {
		_, err := io.WriteString(w, "small")
		return err
	})
	require.Error(t, err)
}

// Abort abandons what is buffered: nothing more is written, and it
// returns even when a background write is blocked on a pipe nobody
// reads.
func TestAbortWhileWriting(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out"))
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 3*asyncSize))
	require.NoError(t, err)
	f.Abort()
	ents, _ := os.ReadDir(dir)
	assert.Empty(t, ents)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer r.Close()
	f, err = Create(fifo)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 3*asyncSize)) // more than the pipe holds
	require.NoError(t, err)
	aborted := make(chan struct{})
	go func() { f.Abort(); close(aborted) }()
	select {
	case <-aborted:
	case <-time.After(30 * time.Second):
		t.Fatal("Abort hung on a pipe nobody reads")
	}
	n, _ := io.Copy(io.Discard, r)
	assert.Less(t, n, int64(asyncSize), "what was buffered is not written after Abort")
	fi, err := os.Stat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, fi.Mode()&os.ModeNamedPipe, "still a pipe")
}

// A finished file refuses more writes and a second Commit with an
// error, never a panic (the agent runs inside the JVM).
func TestUseAfterFinish(t *testing.T) {
	dir := t.TempDir()
	for _, big := range []bool{false, true} {
		f, err := Create(filepath.Join(dir, "out"))
		require.NoError(t, err)
		data := []byte("x")
		if big {
			data = make([]byte, 2*asyncSize)
		}
		_, err = f.Write(data)
		require.NoError(t, err)
		require.NoError(t, f.Commit())
		_, err = f.Write(data)
		assert.ErrorIs(t, err, os.ErrClosed)
		assert.ErrorIs(t, f.Commit(), os.ErrClosed)
		f.Abort()

		f, err = Create(filepath.Join(dir, "out2"))
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		f.Abort()
		_, err = f.Write(data)
		assert.ErrorIs(t, err, os.ErrClosed)
		assert.ErrorIs(t, f.Commit(), os.ErrClosed)
	}
}

// A file that fills its file system is kept: cut at the last mark with
// room, closed by the writer's line, renamed into place; what precedes
// the line is whole lines, as marked.
func TestCutOnFullDisk(t *testing.T) {
	dir := jvmtest.SmallFS(t, 256<<10)
	path := filepath.Join(dir, "out")
	f, err := Create(path)
	require.NoError(t, err)
	var off int64
	var lines uint64
	var werr error
	for lines < 1<<20 {
		line := fmt.Sprintf("line %d %s\n", lines, strings.Repeat("x", int(lines%97)))
		if _, werr = f.Write([]byte(line)); werr != nil {
			break
		}
		off += int64(len(line))
		lines++
		f.Mark(off, lines)
	}
	require.Error(t, werr, "the file system never filled")
	assert.ErrorIs(t, f.Failed(), syscall.ENOSPC)
	start := time.Now()
	cut, err := f.CommitCut(func(c Cut) string {
		return fmt.Sprintf(" *** cut after %d bytes: %v; %d lines not written", c.Bytes, c.Err, lines-c.Units)
	})
	require.NoError(t, err)
	require.NotNil(t, cut)
	t.Logf("kept %d bytes, %d of %d lines; commit took %v", cut.Bytes, cut.Units, lines, time.Since(start))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, cut.Bytes, int64(bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1), "the marker follows the kept bytes")
	body, marker := b[:cut.Bytes], string(b[cut.Bytes:])
	assert.Equal(t, fmt.Sprintf(" *** cut after %d bytes: %v; %d lines not written\n", cut.Bytes, cut.Err, lines-cut.Units), marker)
	assert.Contains(t, marker, "no space left on device")
	got := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	require.Len(t, got, int(cut.Units))
	for i, l := range got {
		require.True(t, strings.HasPrefix(l, fmt.Sprintf("line %d ", i)), "line %d: %q", i, l)
	}
	assert.Greater(t, cut.Bytes, int64(128<<10), "most of what was written is kept")
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1, "no temporary file left behind")
}

// Without a write error CommitCut is Commit.
func TestCutNotNeeded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	f, err := Create(path)
	require.NoError(t, err)
	_, err = f.Write([]byte("a\n"))
	require.NoError(t, err)
	f.Mark(2, 1)
	cut, err := f.CommitCut(func(Cut) string { t.Fatal("no marker wanted"); return "" })
	require.NoError(t, err)
	assert.Nil(t, cut)
	b, _ := os.ReadFile(path)
	assert.Equal(t, "a\n", string(b))
}
