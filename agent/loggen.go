package main

import (
	"fmt"
	"io"
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

	mu         sync.Mutex // one drain at a time
	methods    int        // registry handles defined in the file so far
	threads    map[uint32]string
	events     uint64
	notWritten uint64 // events past GENMAX
	full       bool
	err        error
	rec        reports.GenRecord
	names      map[uint64]string // text: "T:name" per type and handle
	counted    *countingWriter
	tick       *drainer
}

// countingWriter counts the bytes of the text format, for GENMAX.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
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
		notes = append(notes, fmt.Sprintf("Size limit: %d bytes (GENMAX); events past it are counted, not written", a.opts.GenMax))
	}
	g := &genWriter{
		raw: raw, path: path, tmp: tmp, max: a.opts.GenMax, log: a.log, nm: len(metrics), pid: a.pid,
		threads: map[uint32]string{},
		rec:     reports.GenRecord{Values: make([]uint64, len(metrics))},
	}
	if a.opts.GenText {
		g.counted = &countingWriter{w: tmp}
		g.names = map[uint64]string{}
		g.text = reports.NewLogGenWriter(g.counted, a.pid, metrics, notes...)
	} else {
		g.bin = reports.NewLogGenBinWriter(tmp, a.pid, metrics, raw, notes...)
	}
	g.tick = startDrainer(genDrainEvery, func() { g.drain(false) })
	return g, nil
}

// size is the bytes written so far (text: to the file, less what is
// still buffered).
func (g *genWriter) size() int64 {
	if g.bin != nil {
		return g.bin.Size()
	}
	return g.counted.n
}

// drain writes what the event path handed over. A write error (disk
// full) is kept and reported at the end; draining goes on so that no
// Java thread ever waits on a writer that cannot write.
func (g *genWriter) drain(final bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = engine.DrainGen(final, func(b engine.GenBlock) error {
		n, err := g.count(b.Data)
		g.events += n
		if err != nil && g.err == nil {
			g.err = fmt.Errorf("log-gen: corrupt record buffer: %w", err)
		}
		if g.err != nil || g.full {
			g.notWritten += n
			return nil
		}
		if g.max > 0 && g.size()+int64(len(b.Data)) > g.max {
			g.full = true
			g.notWritten += n
			g.log.Warn("log-gen reached its size limit (GENMAX): later events are counted, not written", zap.Int64("bytes", g.size()))
			return nil
		}
		if err := g.write(b); err != nil {
			g.err = err
			g.log.Error("log-gen write failed; events are counted but no longer written", zap.Error(err))
		}
		return nil
	})
}

// count counts a block's records.
func (g *genWriter) count(data []byte) (uint64, error) {
	var n uint64
	for len(data) > 0 {
		l, err := reports.DecodeGenRecord(data, g.raw, &g.rec)
		if err != nil {
			return n, err
		}
		data = data[l:]
		n++
	}
	return n, nil
}

// threadName is the root name of thread id, defined in the file the
// first time a block names it. The record is still listed: the reaper
// drains log-gen before it frees threads.
func (g *genWriter) threadName(id uint32) string {
	if name, ok := g.threads[id]; ok {
		return name
	}
	name := fmt.Sprintf("%08x_thread%d", 0, id)
	engine.WithThreads(func(ts []engine.Thread) {
		for _, t := range ts {
			if t.ID() == id {
				name = reports.RootName(t.TID(), t.Name())
			}
		}
	})
	g.threads[id] = name
	if g.bin != nil {
		_ = g.bin.Thread(uint64(id), name)
	}
	return name
}

func (g *genWriter) write(b engine.GenBlock) error {
	thread := g.threadName(b.Thread)
	if g.bin != nil {
		// Names of methods registered since the last block: every
		// handle in this block was registered before it was handed over.
		for n := engine.Methods(); g.methods < n; g.methods++ {
			if err := g.bin.Method(uint64(g.methods), engine.MethodName(uint32(g.methods))); err != nil {
				return err
			}
		}
		return g.bin.Block(uint64(b.Thread), b.Data)
	}
	ev := reports.Event{Thread: thread, HasKey: g.raw}
	for data := b.Data; len(data) > 0; {
		l, err := reports.DecodeGenRecord(data, g.raw, &g.rec)
		if err != nil {
			return err
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
				name = string(r.Type) + ":<not recorded: out of memory>"
			} else {
				name = string(r.Type) + ":" + string(engine.MethodName(uint32(r.Method)))
			}
			g.names[k] = name
		}
		ev.Name = name
		if err := g.text.Write(ev); err != nil {
			return err
		}
	}
	return nil
}

// finish drains everything (the source must be off), and renames the
// file into place.
func (g *genWriter) finish() (string, uint64, error) {
	g.tick.Stop()
	g.drain(true)
	err := g.err
	if err == nil {
		if g.bin != nil {
			err = g.bin.End(g.events-g.notWritten, g.notWritten)
		} else {
			err = g.text.Flush()
		}
	}
	if err == nil {
		err = g.tmp.Commit()
	}
	if err != nil {
		g.tmp.Abort()
		return "", g.events, fmt.Errorf("log-gen: %w", err)
	}
	if g.notWritten > 0 {
		g.log.Warn("log-gen size limit reached", zap.Uint64("eventsNotWritten", g.notWritten))
	}
	return g.path, g.events, nil
}
