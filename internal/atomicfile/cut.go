package atomicfile

import (
	"fmt"
	"io"
	"os"
)

// A file that takes long to write (a log-gen of gigabytes, a large
// log-rt) should not be lost whole when the disk fills near its end.
// Its writer marks, as it goes, the places where a whole unit (a line, a
// frame, a row) ends; CommitCut then cuts a file whose write failed at
// the last mark that leaves room for a closing line in the blocks the
// file already holds, writes that line there (the writer's words: why
// and how much is missing), and renames the file into place all the
// same. The closing line overwrites bytes the file has, so it needs no
// free space on most file systems; where it does (copy-on-write), the
// file is kept cut at the mark without it.

// MarkerMax bounds the closing line: a mark is chosen so that this many
// bytes fit before the end of what was written.
const MarkerMax = 512

// markStride spaces the marks kept: a cut loses at most about twice it
// beyond what the marker needs. With at most 1 MiB in flight, the marks
// of one file take at most about 40 KiB.
const markStride = MarkerMax

// mark is a place where a whole unit ends: off bytes of the stream hold
// units units.
type mark struct {
	off   int64
	units uint64
}

// marks belong to the file's writer: Mark and CommitCut are called
// from one goroutine at a time (as Write), so they need no lock.
type marks struct {
	list []mark // ascending
}

// Mark records that the first off bytes written (counted by the writer,
// which may buffer before Write) end a whole unit and hold units units
// (lines, frames, rows, events: the writer's choice). Marks must come in
// increasing order; marks closer than a few hundred bytes are thinned,
// so that marking every line or row costs a comparison or two.
func (f *File) Mark(off int64, units uint64) {
	m := &f.marks
	if n := len(m.list); n > 0 && off-m.list[n-1].off < markStride {
		if n > 1 && off-m.list[n-2].off < 2*markStride {
			m.list[n-1] = mark{off, units} // keep the latest, spaced
		}
		return
	}
	// Marks every candidate of a cut supersedes are dropped: the file
	// only grows, so the last mark with room now will do later too.
	held := f.w.written.Load()
	drop := 0
	for drop+1 < len(m.list) && m.list[drop+1].off+MarkerMax <= held {
		drop++
	}
	if drop > 0 {
		m.list = append(m.list[:0], m.list[drop:]...)
	}
	m.list = append(m.list, mark{off, units})
}

// cutAt is the mark a failed file is cut at: the last one with room
// for the marker in what the file holds, else the last one it holds.
func (m *marks) cutAt(held int64) (mark, bool) {
	var best mark
	found := false
	for _, k := range m.list {
		if k.off+MarkerMax <= held {
			best, found = k, true
		}
	}
	if found {
		return best, true
	}
	for _, k := range m.list {
		if k.off <= held {
			best, found = k, true
		}
	}
	return best, found
}

// Cut says what a file whose write failed kept.
type Cut struct {
	Err   error  // the write error
	Bytes int64  // bytes kept, before the marker
	Units uint64 // units kept (the mark's count)
	// MarkerErr is why the file ends without its marker, nil when it
	// has it: on a copy-on-write file system even an overwrite needs
	// free space. The file is kept, cut at the mark, all the same.
	MarkerErr error
}

// Failed returns the write error so far (nil if none): a writer that
// keeps counting what it can no longer write checks it.
func (f *File) Failed() error { return f.w.failed() }

// CommitCut is Commit for a file that is kept after a write error: the
// file is cut at a mark (see Mark), ends with the line marker(cut)
// returns (a newline is added if missing; at most MarkerMax bytes) and
// is renamed into place. It returns the cut, nil when everything was
// written. A marker that cannot be written (Cut.MarkerErr) leaves the file
// cut at the mark without it. When no mark can be used (nothing whole was
// written) the file is removed and the write error returned, as by Commit.
func (f *File) CommitCut(marker func(Cut) string) (*Cut, error) {
	if f.done {
		return nil, os.ErrClosed
	}
	if f.direct {
		return nil, f.Commit()
	}
	werr := f.w.Flush()
	if werr == nil {
		return nil, f.finish(nil)
	}
	f.done = true
	fail := func(err error) (*Cut, error) {
		f.f.Close()
		os.Remove(f.f.Name())
		return nil, err
	}
	m, ok := f.marks.cutAt(f.w.written.Load())
	if !ok {
		return fail(werr)
	}
	c := &Cut{Err: werr, Bytes: m.off, Units: m.units}
	line := marker(*c)
	if len(line) > 0 && line[len(line)-1] != '\n' {
		line += "\n"
	}
	if len(line) > MarkerMax {
		line = line[:MarkerMax-1] + "\n"
	}
	if _, err := f.f.WriteAt([]byte(line), m.off); err != nil {
		c.MarkerErr = err
		line = ""
	}
	// Shrinking needs no space on any file system.
	err := f.f.Truncate(m.off + int64(len(line)))
	if err == nil {
		if serr := f.f.Sync(); serr != nil && c.MarkerErr == nil {
			c.MarkerErr = serr // kept, though perhaps not yet on disk
		}
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
	if err != nil {
		os.Remove(f.f.Name())
		return nil, fmt.Errorf("%w (and cutting the file: %v)", werr, err)
	}
	return c, nil
}

// Counter counts the bytes written through it to W: the offsets a
// writer that buffers before Write gives Mark.
type Counter struct {
	W io.Writer
	N int64
}

func (c *Counter) Write(b []byte) (int, error) {
	n, err := c.W.Write(b)
	c.N += int64(n)
	return n, err
}
