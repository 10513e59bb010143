// Package atomicfile writes files that appear complete or not at all: the
// content goes to a temporary name in the target's directory, is synced
// (its disk writes started as it grows, so that the sync waits for the
// last few megabytes only), and is renamed into place only when
// everything was written. A reader
// (a person, jprof, a test) never sees half a report; a failed write
// leaves whatever was there before. Writes are buffered and go to the
// file from a goroutine, so a caller producing a large file keeps
// producing while the kernel copies (at most 1 MiB buffered per file).
//
// A file whose writer marks where its units end (Mark) can instead be
// kept after a write error, cut at a mark and closed by a line that says
// so (CommitCut): see cut.go. A write that fails for lack of space is
// retried a few times first (see MaxRetries).
//
// A path that already names something other than a regular file (a
// device such as /dev/null or /dev/stdout, a named pipe) is written in
// place: renaming over it would replace the device with a file.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// File is a file being written; nothing is visible at its path until
// Commit.
type File struct {
	path   string
	f      *os.File
	w      *asyncWriter
	done   bool
	direct bool // writing a device or pipe in place
	marks  marks
	perm   os.FileMode // given at Commit; 0644 unless SetPerm
}

// Create starts writing path.
func Create(path string) (*File, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{path: path, f: f, w: newAsyncWriter(f), direct: true, perm: 0o644}, nil
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, err
	}
	w := newAsyncWriter(f)
	w.writeback = true
	return &File{path: path, f: f, w: w, perm: 0o644}, nil
}

// Write buffers p; full buffers are written in the background (see
// asyncWriter), and an error of theirs comes back from a later Write or
// from Commit.
func (f *File) Write(p []byte) (int, error) { return f.w.Write(p) }

// SetPerm gives the file perm instead of 0644 when it is committed: 0600
// for what only its owner may read (a heap dump holds every value the
// program had). The temporary file is 0600 while it is written, so the
// content is never readable by others, even for a moment. A device or
// pipe written in place keeps its own mode.
func (f *File) SetPerm(perm os.FileMode) { f.perm = perm }

// Commit flushes, syncs and renames the file into place (mode 0644, or
// SetPerm's). On
// error the temporary file is removed and nothing appears.
func (f *File) Commit() error {
	if f.done {
		return os.ErrClosed
	}
	if f.direct {
		err := f.w.Flush()
		if cerr := f.f.Close(); err == nil {
			err = cerr
		}
		f.done = true
		return err
	}
	return f.finish(f.w.Flush())
}

// finish syncs, closes and renames a flushed file, or removes it when
// err (the flush's) or any of these fails.
func (f *File) finish(err error) error {
	if err == nil {
		err = f.f.Sync()
	}
	if err == nil {
		err = f.f.Chmod(f.perm)
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.f.Name(), f.path)
	}
	f.done = true
	if err != nil {
		os.Remove(f.f.Name())
	}
	return err
}

// Abort discards the file; after Commit it does nothing, so it can be
// deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	// The file first: a background write blocked on a pipe then ends.
	f.f.Close()
	f.w.Close()
	if !f.direct {
		os.Remove(f.f.Name())
	}
}

// Write writes path whole with write.
func Write(path string, write func(io.Writer) error) error {
	return WritePerm(path, 0o644, write)
}

// WritePerm writes path whole with write, with mode perm (see SetPerm).
func WritePerm(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	f.SetPerm(perm)
	defer f.Abort()
	if err := write(f); err != nil {
		return err
	}
	return f.Commit()
}
