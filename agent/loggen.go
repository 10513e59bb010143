package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// genWriter writes log-gen: a goroutine moves the event path's full
// buffers to the file every few milliseconds, as binary blocks (copied
// as they are, with the names of new methods and threads before them)
// or, with GENFORMAT=text, as JProf's lines; at VM death the rest is
// drained and the file renamed into place, so it appears complete.
type genWriter struct {
	path  string
	raw   bool // records carry sequence keys
	tmp   *atomicfile.File
	bin   *reports.LogGenBinWriter // binary format, else text
	text  *reports.LogGenWriter
	max   int64 // GENMAX, 0: none
	log   *zap.Logger
	nm    int
	pid   int
	notes []string

	mu          sync.Mutex        // one drain at a time
	registered  int               // registry handles looked at so far
	defined     []bool            // registry handles whose names the file has
	definedHigh map[uint64]bool   // the same for the overflow handles
	threads     map[uint32]string // names of the live threads the file named
	named       []uint64          // bit per thread id: the file named it
	retired     map[uint32]string // names of threads freed in the last pass before the file named them
	events      uint64
	written     uint64 // events in the file
	notWritten  uint64 // events past GENMAX or after a write error
	full        bool
	err         error
	rec         reports.GenRecord
	names       map[uint64]string // text: "T:name" per type and handle
	tick        *drainer
}

const genDrainEvery = 10 * time.Millisecond

func (a *agent) startLogGen() (*genWriter, error) {
	path := a.fileName("gen", 0)
	tmp, err := atomicfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("log-gen: %w", err)
	}
	raw := a.opts.genMode() == jvmti.GenRaw
	var metrics []reports.Metric
	for _, m := range a.metrics {
		metrics = append(metrics, reports.Metric{Name: m.String(), Unit: m.Unit(), Calibrated: a.opts.Calibrate && !raw})
	}
	notes := append([]string(nil), a.notes...)
	notes = append(notes, "Event source: "+engine.SourceName())
	switch {
	case raw:
		notes = append(notes, "Calibration: none here: raw deltas with sequence keys (s<key>), for jprof calibrate")
	case a.opts.Calibrate && len(metrics) > 0:
		notes = append(notes, "Calibration: online (each value calibrated with the minimum current when its event happened)")
	}
	if a.opts.GenMax > 0 {
		// Written before anyone knows whether the limit will be reached:
		// the closing line says whether it was.
		notes = append(notes, fmt.Sprintf("Size limit: %d bytes (GENMAX); events past it are counted, not written, and a file that reached it ends with a line that says how many", a.opts.GenMax))
	}
	g := &genWriter{
		raw: raw, path: path, tmp: tmp, max: a.opts.GenMax, log: a.log, nm: len(metrics), pid: a.pid,
		threads: map[uint32]string{},
		rec:     reports.GenRecord{Values: make([]uint64, len(metrics))},
	}
	if a.opts.GenText {
		g.names = map[uint64]string{}
		g.text = reports.NewLogGenWriter(tmp, a.pid, metrics, notes...)
		if g.max > 0 {
			// Checked line by line: a text line is about ten times its
			// binary record, so the blocks' size says nothing here.
			// At least 1: 0 is no limit, and a GENMAX below the
			// closing line's room must still stop at the header.
			g.text.Limit(max(1, g.max-g.endRoom()))
		}
	} else {
		g.bin = reports.NewLogGenBinWriter(tmp, a.pid, metrics, raw, notes...)
	}
	g.tmp.Mark(g.size(), 0) // the header: a cut file keeps it
	g.tick = startDrainer(genDrainEvery, func() { g.drain(false) })
	return g, nil
}

// size is the bytes written so far, buffered ones included.
func (g *genWriter) size() int64 {
	if g.bin != nil {
		return g.bin.Size()
	}
	return g.text.Size()
}

// drain writes what the event path handed over. A write error (disk
// full) is kept and reported at the end; draining goes on so that no
// Java thread ever waits on a writer that cannot write.
func (g *genWriter) drain(final bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = engine.DrainGen(final, func(b engine.GenBlock) error {
		n := uint64(b.Records)
		g.events += n
		if g.err != nil || g.full {
			g.notWritten += n
			return nil
		}
		done, err := g.write(b)
		g.written += done
		if err != nil {
			g.err = err
			g.notWritten += n - done
			g.log.Error("log-gen write failed; events are counted but no longer written", zap.Error(err))
			return nil
		}
		if done < n {
			// GENMAX: what fitted is written, then nothing more, so
			// that each thread's events in the file are its first ones,
			// with no gap a rebuilt tree would be wrong across.
			g.full = true
			g.notWritten += n - done
			g.log.Warn("log-gen reached its size limit (GENMAX): later events are counted, not written", zap.Int64("bytes", g.size()))
		}
		g.tmp.Mark(g.size(), g.written) // a whole frame (text: whole lines)
		return nil
	})
}

// endRoom is the room kept under GENMAX for what ends the file: the size
// limit line, and before it the binary end frame and a newline (each
// count at its longest).
func (g *genWriter) endRoom() int64 {
	n := int64(len(reports.SizeLimitLine(g.max, math.MaxUint64)) + 1)
	if g.bin != nil {
		n += 1 + 2*binary.MaxVarintLen64 + 1
	}
	return n
}

// frameLen is the size of a binary frame of id with n bytes of payload.
func frameLen(id uint64, n int) int64 {
	var b [binary.MaxVarintLen64]byte
	return int64(1 + binary.PutUvarint(b[:], id) + binary.PutUvarint(b[:], uint64(n)) + n)
}

// isDefined says whether the file has method h's name, growing the set.
func (g *genWriter) isDefined(h uint64) bool {
	if h < uint64(len(g.defined)) {
		return g.defined[h]
	}
	if h >= 1<<31 { // the overflow handles, just below 2^32
		if g.definedHigh == nil {
			g.definedHigh = map[uint64]bool{}
		}
		return g.definedHigh[h]
	}
	g.defined = append(g.defined, make([]bool, int(h)+1-len(g.defined)+len(g.defined)/2)...)
	return false
}

// defineOverflow names the overflow handles (past MAXMETHODS) the file
// lacks, once the registry has refused any.
func (g *genWriter) defineOverflow(data []byte) error {
	if engine.MethodsOver() == 0 || len(g.definedHigh) == 8 {
		return nil
	}
	return g.writeNeededNames(data)
}

// writeNeededNames names the methods of data's records the file lacks.
func (g *genWriter) writeNeededNames(data []byte) error {
	for len(data) > 0 {
		l, err := reports.DecodeGenRecord(data, g.raw, &g.rec)
		if err != nil {
			return err
		}
		data = data[l:]
		if h := g.rec.Method; !g.rec.Lost && !g.isDefined(h) {
			g.markDefined(h)
			if err := g.bin.Method(h, engine.MethodName(uint32(h))); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *genWriter) markDefined(h uint64) {
	if h >= 1<<31 {
		g.definedHigh[h] = true
	} else {
		g.defined[h] = true
	}
}

// fit returns how many bytes of data's records fit in room together
// with the frames they need in the file (the names of their methods new
// to it, and the block frame's header: data's length bounds the cut
// part's), and how many records that is.
func (g *genWriter) fit(data []byte, thread uint32, room int64) (int, uint64) {
	off, n := 0, uint64(0)
	used := frameLen(uint64(thread), len(data)) - int64(len(data))
	seen := map[uint64]bool{}
	for off < len(data) {
		l, err := reports.DecodeGenRecord(data[off:], g.raw, &g.rec)
		if err != nil {
			break
		}
		need := int64(l)
		if h := g.rec.Method; !g.rec.Lost && !g.isDefined(h) && !seen[h] {
			need += frameLen(h, len(engine.MethodName(uint32(h))))
			seen[h] = true
		}
		if used+need > room {
			break
		}
		used += need
		off += l
		n++
	}
	return off, n
}

// writeLimited writes, under GENMAX, as many of the block's records as
// fit with the frames they need (the thread's name if the file lacks it,
// the new methods' names, the block's header), keeping endRoom: the file
// never grows past the limit. It returns how many records it wrote.
func (g *genWriter) writeLimited(b engine.GenBlock) (uint64, error) {
	room := g.max - g.size() - g.endRoom()
	if name, _, define := g.lookupThread(b.Thread); define {
		room -= frameLen(uint64(b.Thread), len(name))
	}
	keep, kept := g.fit(b.Data, b.Thread, room)
	if kept == 0 {
		return 0, nil
	}
	g.threadName(b.Thread)
	b.Data = b.Data[:keep]
	if err := g.writeNeededNames(b.Data); err != nil {
		return 0, err
	}
	return blockWritten(kept, g.bin.Block(uint64(b.Thread), b.Data))
}

// blockWritten is what a binary block of n records adds to the file:
// all of them, or none after a write error.
func blockWritten(n uint64, err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	return n, nil
}

// threadName is the root name of thread id, defined in the file the
// first time a block names it. The record is still listed (the reaper
// drains log-gen before it frees threads), or was freed in the last
// retire pass (g.retired).
func (g *genWriter) threadName(id uint32) string {
	name, live, define := g.lookupThread(id)
	if define {
		if live {
			g.threads[id] = name
		}
		g.markNamed(id)
		if g.bin != nil {
			_ = g.bin.Thread(uint64(id), name)
		}
	}
	return name
}

// lookupThread finds thread id's root name without changing anything, so
// that GENMAX can count its frame before writing it: define says the
// file lacks it, live that the thread is listed (a retired one is not
// kept: it will not be retired again to leave g.threads; the next pass
// replaces g.retired).
func (g *genWriter) lookupThread(id uint32) (name string, live, define bool) {
	if name, ok := g.threads[id]; ok {
		return name, true, false
	}
	if name, ok := g.retired[id]; ok {
		return name, false, !g.wasNamed(id)
	}
	name = fmt.Sprintf("%08x_thread%d", 0, id)
	engine.WithThreads(func(ts []engine.Thread) {
		for _, t := range ts {
			if t.ID() == id {
				name = rootName(t)
			}
		}
	})
	// Named in the file once already, and freed since: never expected
	// (a freed thread has no events left to write).
	return name, true, !g.wasNamed(id)
}

// A thread's id is dense and never reused: one bit per id says the file
// has named it, so that its name can leave memory when it is freed.
func (g *genWriter) wasNamed(id uint32) bool {
	return int(id/64) < len(g.named) && g.named[id/64]&(1<<(id%64)) != 0
}

func (g *genWriter) markNamed(id uint32) {
	for int(id/64) >= len(g.named) {
		g.named = append(g.named, 0)
	}
	g.named[id/64] |= 1 << (id % 64)
}

// retiredThreads is told the names of the threads a retire pass just
// freed. Those the file named already leave memory; the others are kept
// until the next pass, for a last buffer handed over between the pass's
// drain and the freeing (the next pass drains it first). So the writer
// holds the names of live threads and of one pass's freed ones, never of
// every thread the process ever ran.
func (g *genWriter) retiredThreads(names map[uint32]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.retired = map[uint32]string{}
	for id, name := range names {
		if _, ok := g.threads[id]; ok {
			delete(g.threads, id)
		} else if !g.wasNamed(id) {
			g.retired[id] = name
		}
	}
}

func (g *genWriter) write(b engine.GenBlock) (uint64, error) {
	if g.bin != nil && g.max > 0 {
		// Only the names the block needs, counted against the limit.
		return g.writeLimited(b)
	}
	thread := g.threadName(b.Thread)
	if g.bin != nil {
		// The names of methods registered since the last block go first,
		// without decoding it: every handle in it was registered before
		// it was handed over. Methods no record names cost their names
		// once, which is little beside the records.
		for n := engine.Methods(); g.registered < n; g.registered++ {
			if !g.isDefined(uint64(g.registered)) {
				g.markDefined(uint64(g.registered))
				if err := g.bin.Method(uint64(g.registered), engine.MethodName(uint32(g.registered))); err != nil {
					return 0, err
				}
			}
		}
		if err := g.defineOverflow(b.Data); err != nil {
			return 0, err
		}
		return blockWritten(uint64(b.Records), g.bin.Block(uint64(b.Thread), b.Data))
	}
	ev := reports.Event{Thread: thread, HasKey: g.raw}
	var done uint64 // lines of this block written
	for data := b.Data; len(data) > 0; {
		l, err := reports.DecodeGenRecord(data, g.raw, &g.rec)
		if err != nil {
			return done, err
		}
		data = data[l:]
		r := &g.rec
		ev.Kind, ev.Values, ev.Key, ev.Unclean = r.Kind, r.Values, r.Key, r.Unclean
		k := uint64(r.Type)<<56 | r.Method
		if r.Lost {
			k = 1 << 63
		}
		name, ok := g.names[k]
		if !ok {
			if r.Lost {
				name = string(r.Type) + ":<not-recorded:out-of-memory>"
			} else {
				name = string(r.Type) + ":" + string(engine.MethodName(uint32(r.Method)))
			}
			g.names[k] = name
		}
		ev.Name = name
		if err := g.text.Write(ev); err == reports.ErrSizeLimit {
			return done, nil // GENMAX: the line is not written
		} else if err != nil {
			return done, err
		}
		// Every line: a text block is ten times its binary size.
		done++
		g.tmp.Mark(g.text.Size(), g.written+done)
	}
	return done, nil
}

// finish drains everything (the source must be off), and renames the
// file into place: cut after its last whole frame, and saying so, if a
// write failed (see cut.go).
func (g *genWriter) finish(a *agent) (string, uint64, error) {
	g.tick.Stop()
	g.drain(true)
	err := g.err
	if err == nil {
		if g.bin != nil {
			err = g.bin.End(g.written, g.notWritten, g.max)
		} else {
			if g.full {
				// The file's last line says it holds only the first
				// events, and how many it lacks (endRoom kept its room).
				err = g.text.SizeLimited(strings.TrimPrefix(reports.SizeLimitLine(g.max, g.notWritten), " *** "))
			}
			if err == nil {
				err = g.text.Flush()
			}
		}
	}
	if err != nil && g.tmp.Failed() == nil {
		// Not the file's fault (a record that does not decode): a
		// cut would not say what is wrong.
		g.tmp.Abort()
		return "", g.events, fmt.Errorf("log-gen: %w", err)
	}
	cut, err := a.commitCut(g.tmp, g.path, g.events, "events")
	if err != nil {
		return "", g.events, fmt.Errorf("log-gen: %w", err)
	}
	if g.full && cut == nil {
		// Said where the user looks, as a cut file is: the file is whole
		// but a tree rebuilt from it lacks every call past the limit.
		a.warn(fmt.Sprintf("%s reached its size limit (GENMAX, %d bytes): %d of %d events not written; the file ends with a line that says so",
			filepath.Base(g.path), g.max, g.notWritten, g.events))
	}
	return g.path, g.events, nil
}
