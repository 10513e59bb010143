package atomicfile

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// asyncWriter buffers writes and hands full buffers to a goroutine that
// writes them to the file, so that the caller formats the next buffer
// while the kernel copies the last one: a log-rt of a million rows is
// over 100 MB, written while the JVM waits at its end, and the copy into
// the page cache is a large part of that time. At most asyncBuffers
// buffers of asyncSize bytes exist per file; a small file never starts
// the goroutine.
type asyncWriter struct {
	f      *os.File
	buf    []byte      // being filled
	free   chan []byte // written buffers, for reuse
	full   chan []byte // buffers to write, in order
	made   int         // buffers allocated
	done   chan struct{}
	start  sync.Once
	closed bool // Flush or Close ran: no more writes

	mu      sync.Mutex
	err     error       // the first write error (or errAborted): the goroutine drops the rest
	failing atomic.Bool // err is set

	written atomic.Int64 // bytes the file holds: a cut after a write error keeps no more
	retries int          // ENOSPC retries spent (writeOut runs on one goroutine at a time)

	// writeback: start the disk writes of what was written as the file
	// grows (a regular file, synced before it is renamed), up to started.
	writeback bool
	started   int64
}

const (
	asyncSize    = 256 << 10
	asyncBuffers = 4
)

// errAborted stops the goroutine's writes when the file is abandoned.
var errAborted = errors.New("atomicfile: aborted")

func newAsyncWriter(f *os.File) *asyncWriter {
	return &asyncWriter{f: f}
}

func (w *asyncWriter) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.failing.Store(true)
}

func (w *asyncWriter) failed() error {
	if !w.failing.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *asyncWriter) run() {
	defer close(w.done)
	for b := range w.full {
		if w.failed() == nil {
			if err := w.writeOut(b); err != nil {
				w.fail(err)
			}
			w.startWriteback()
		}
		w.free <- b[:0]
	}
}

// writebackStep is how much written data starts its way to the disk at
// once.
const writebackStep = 8 << 20

// startWriteback has the kernel start writing the file's pages to the
// disk every writebackStep bytes, without waiting for them: the sync
// before the rename then waits for the last few megabytes only, not for
// a whole report of hundreds (on javac's 200 MB log-rt, at the JVM's
// end, the sync alone was a fifth of the write). Advice only: an error
// leaves it to the sync.
func (w *asyncWriter) startWriteback() {
	n := w.written.Load()
	if !w.writeback || n-w.started < writebackStep {
		return
	}
	// Through Control, which holds the descriptor: an Abort may close
	// the file meanwhile, and its number be another file's by then.
	if c, err := w.f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) {
			_ = unix.SyncFileRange(int(fd), w.started, n-w.started, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
	w.started = n
}

// A full file system is often full for a moment only (a file being
// deleted, a log rotated): a write that fails with ENOSPC or EDQUOT is
// retried after RetryDelay, doubling, at most MaxRetries times per file,
// so that a file waits at most 0.31 s in all for space. Other errors
// are final at once.
const (
	MaxRetries = 5
	RetryDelay = 10 * time.Millisecond
)

// writeOut writes b whole, counting what the file holds.
func (w *asyncWriter) writeOut(b []byte) error {
	for {
		n, err := w.f.Write(b)
		w.written.Add(int64(n))
		b = b[n:]
		if err == nil {
			return nil
		}
		if w.retries >= MaxRetries || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			return err
		}
		time.Sleep(RetryDelay << w.retries)
		w.retries++
	}
}

// Write copies p into the buffers. It returns the error of an earlier
// background write, if any, so that a writer stops early on a full disk.
func (w *asyncWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, os.ErrClosed
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, asyncSize)
			w.made++
		}
		c := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+c]
		p = p[c:]
		if len(w.buf) == cap(w.buf) {
			if err := w.handOff(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// handOff queues the current buffer and takes a free one (a new one
// while fewer than asyncBuffers exist, else waits for the goroutine).
func (w *asyncWriter) handOff() error {
	w.start.Do(func() {
		w.free = make(chan []byte, asyncBuffers)
		w.full = make(chan []byte, asyncBuffers)
		w.done = make(chan struct{})
		go w.run()
	})
	w.full <- w.buf
	w.buf = nil
	select {
	case w.buf = <-w.free:
	default:
		if w.made >= asyncBuffers {
			w.buf = <-w.free
		}
	}
	return w.failed()
}

// Flush writes what is buffered and waits for the goroutine to finish;
// the writer takes no more writes after it.
func (w *asyncWriter) Flush() error {
	if w.closed {
		return os.ErrClosed
	}
	w.closed = true
	if w.done == nil { // never handed a buffer off: write it here
		var err error
		if len(w.buf) > 0 {
			err = w.writeOut(w.buf)
		}
		if err != nil {
			w.fail(err)
		}
		w.buf = nil
		return err
	}
	if len(w.buf) > 0 {
		w.full <- w.buf
	}
	w.buf = nil
	close(w.full)
	<-w.done
	return w.failed()
}

// Close abandons what is buffered: the goroutine writes nothing more. A
// write it is blocked in (a pipe nobody reads) ends when the caller
// closes the file, which it must do first.
func (w *asyncWriter) Close() {
	if w.closed {
		return
	}
	w.closed = true
	w.buf = nil
	if w.done != nil {
		w.fail(errAborted)
		close(w.full)
		<-w.done
	}
}
