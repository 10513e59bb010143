package main

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// genWriter writes log-gen: a goroutine drains the hot path's full
// buffers every few milliseconds and formats them; at VM death the rest
// is drained and the file renamed into place, so it appears complete.
type genWriter struct {
	path    string
	raw     bool // lines carry sequence keys
	tmp     *atomicfile.File
	w       *reports.LogGenWriter
	drainer *jvmti.GenDrainer
	log     *zap.Logger

	mu     sync.Mutex // one drain at a time
	events uint64
	err    error
	tick   *drainer
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
	switch {
	case raw:
		notes = append(notes, "Calibration: none here: raw deltas with sequence keys (s<key>), for jprof calibrate")
	case a.opts.Calibrate && len(metrics) > 0:
		notes = append(notes, "Calibration: online (each value calibrated with the minimum current when its event happened)")
	}
	g := &genWriter{
		raw:     raw,
		path:    path,
		tmp:     tmp,
		w:       reports.NewLogGenWriter(tmp, a.pid, metrics, notes...),
		drainer: jvmti.NewGenDrainer(),
		log:     a.log,
	}
	g.tick = startDrainer(genDrainEvery, func() { g.drain(false) })
	return g, nil
}

// drain writes what the hot path handed over. A write error (disk full)
// is kept and reported at the end; draining goes on so that no Java
// thread ever waits on a writer that cannot write.
func (g *genWriter) drain(final bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ev := reports.Event{}
	_ = g.drainer.Drain(final, func(r *jvmti.GenRecord) error {
		g.events++
		if g.err != nil {
			return nil
		}
		ev.Thread = g.drainer.ThreadName(r.Thread)
		ev.Kind = reports.EventKind(r.Kind)
		ev.Name = r.Name
		ev.Values = r.Values
		ev.Key, ev.HasKey, ev.Unclean = r.Key, g.raw, r.Unclean
		if err := g.w.Write(ev); err != nil {
			g.err = err
			g.log.Error("log-gen write failed; events are counted but no longer written", zap.Error(err))
		}
		return nil
	})
}

// finish drains everything (method events must be off), and renames the
// file into place.
func (g *genWriter) finish() (string, uint64, error) {
	g.tick.Stop()
	g.drain(true)
	err := g.err
	if err == nil {
		err = g.w.Flush()
	}
	if err == nil {
		err = g.tmp.Commit()
	}
	if err != nil {
		g.tmp.Abort()
		return "", g.events, fmt.Errorf("log-gen: %w", err)
	}
	return g.path, g.events, nil
}
