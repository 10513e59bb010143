package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/atomicfile"
)

// Threads freed before VM death (THREADINFO) still belong in log-jtnm, and
// a server frees them by the million: their lines go to a spill file in
// LOGPATH as they are freed, not to memory, and log-jtnm copies it at VM
// death. Only where that file cannot be made are they kept in memory, up
// to maxRetiredLines (about 60 bytes each); the rest are counted and the
// file says how many it lacks.
const maxRetiredLines = 100_000

// retiredThreads holds the log-jtnm lines of freed threads.
type retiredThreads struct {
	path    string // the spill file; "" until made, or when it cannot be
	f       *os.File
	failed  bool     // the spill file could not be made or written
	inFile  int      // lines the spill file holds
	mem     []string // lines kept in memory when it could not
	dropped int      // lines lost past maxRetiredLines
	n       int      // lines kept, either way
}

// retireLine keeps one freed thread's line. The caller holds a.mu. A
// line is written at once (retire passes free threads in batches, once a
// second): a write error then loses no line, which goes to memory.
func (a *agent) retireLine(line string) {
	r := &a.retired
	if r.f == nil && !r.failed {
		r.path = filepath.Join(a.opts.LogPath, fmt.Sprintf(".%s-jtnm_%d.part", a.opts.LogPrefix, a.pid))
		// A stale one of a dead JVM of this pid goes; never through a
		// link someone planted in a shared LOGPATH.
		os.Remove(r.path)
		f, err := os.OpenFile(r.path, os.O_CREATE|os.O_EXCL|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			r.failed = true
			a.log.Warn("log-jtnm: freed threads are kept in memory (at most a bounded number)", zap.Error(err))
		} else {
			r.f = f
		}
	}
	if r.f != nil && !r.failed {
		if _, err := r.f.WriteString(line + "\n"); err == nil {
			r.inFile++
			r.n++
			return
		}
		// The lines written stay in the file; the rest go to memory.
		r.failed = true
		a.log.Warn("log-jtnm: the spill file of freed threads cannot be written; the rest are kept in memory")
	}
	if len(r.mem) < maxRetiredLines {
		r.mem = append(r.mem, line)
		r.n++
		return
	}
	r.dropped++
}

// each calls f with every kept line: those of the spill file (as many as
// were written whole), then those in memory.
func (r *retiredThreads) each(f func(line string) error) error {
	if r.f != nil && r.inFile > 0 {
		if _, err := r.f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("freed threads' lines (%s): %w", r.path, err)
		}
		sc := bufio.NewScanner(r.f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for read := 0; read < r.inFile && sc.Scan(); read++ {
			if err := f(sc.Text()); err != nil {
				return err
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("freed threads' lines (%s): %w", r.path, err)
		}
	}
	for _, l := range r.mem {
		if err := f(l); err != nil {
			return err
		}
	}
	return nil
}

// close removes the spill file.
func (r *retiredThreads) close() {
	if r.f != nil {
		r.f.Close()
		os.Remove(r.path)
		r.f = nil
	}
}

// writeJtnm writes log-jtnm: thread ids, names, start and end times of
// the threads freed before (from the spill file) and of those still
// listed. After a write error it is kept up to the last whole line
// (cut.go).
func (a *agent) writeJtnm() {
	path := a.fileName("jtnm", 0)
	var live []string
	engine.WithThreads(func(ts []engine.Thread) {
		for _, t := range ts {
			live = append(live, jtnmLine(t))
		}
	})
	defer a.retired.close()
	total := uint64(a.retired.n + len(live))
	err := func() error {
		tmp, err := atomicfile.Create(path)
		if err != nil {
			return err
		}
		defer tmp.Abort()
		w := &atomicfile.Counter{W: tmp}
		fmt.Fprintf(w, " libjprof log-jtnm\n Process_Number_ID=%d\n", a.pid)
		fmt.Fprintf(w, " Format: <tid hex> <start ns> <end ns, - if running at VM death> <log-rt root name>; times are CLOCK_MONOTONIC\n")
		tmp.Mark(w.N, 0)
		var n uint64
		line := func(l string) error {
			if err := tmp.Failed(); err != nil {
				return err
			}
			fmt.Fprintln(w, l)
			n++
			tmp.Mark(w.N, n)
			return nil
		}
		if err := a.retired.each(line); err != nil && tmp.Failed() == nil {
			// The spill file cannot be read back: the live threads'
			// lines are still worth the file.
			a.log.Warn("log-jtnm: freed threads' lines lost", zap.Error(err))
			fmt.Fprintf(w, " *** the lines of threads freed before VM death could not be read back: %v\n", err)
			tmp.Mark(w.N, n)
		}
		for _, l := range live {
			if line(l) != nil {
				break
			}
		}
		if a.retired.dropped > 0 && tmp.Failed() == nil {
			fmt.Fprintf(w, " *** %d more threads were freed before VM death and are not listed (kept in memory at most %d)\n",
				a.retired.dropped, maxRetiredLines)
			tmp.Mark(w.N, n)
		}
		_, err = a.commitCut(tmp, path, total, "threads")
		return err
	}()
	if err != nil {
		say("libjprof: log-jtnm: %v", err)
		a.log.Error("log-jtnm not written", zap.Error(err))
		return
	}
	a.files = append(a.files, path)
	a.log.Info("log-jtnm written", zap.String("file", path), zap.Uint64("threads", total),
		zap.Int("notListed", a.retired.dropped))
}
