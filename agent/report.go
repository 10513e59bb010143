package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Reports are written straight from the C trees, thread by thread, never
// from a copy of them: besides the trees themselves, writing a log-rt
// holds per node of the thread being written 1 byte (kept?), 8 bytes
// (first child, next sibling) and 8 bytes per metric (the calibration
// removed), all freed when the thread is done.

// threadTotals is what a report learnt of one thread, for log-msg.
type threadTotals struct {
	root     string
	ended    bool
	counters engine.Counters
	nodes    int
	excs     uint64 // exits by exception
	metrics  []uint64
	ds, in   uint64
}

// report is one log-rt being written.
type report struct {
	a      *agent
	nm     int
	cal    *calibrator
	calFB  *calibrator       // threads whose PTT reads fell back to the clock
	names  map[uint64]string // "T:class.method(sig)" per type and method
	totals threadSummary
	// per-thread scratch, reused
	keep        []bool
	first, next []int32
	delta       []uint64
	calls       []uint64
	scratch     engine.Scratch
	// out is the file being written: rows are marked in it, and after a
	// write error they are counted, not written.
	out *atomicfile.File
	// nextBase, for an interval flush, collects the numbers the report read:
	// the baseline of the next report.
	nextBase baseline
	// saturated counts the rows with an exception, dispatch or interrupt
	// count that stopped at engine.CountMax.
	saturated int
}

// header is the log-rt header of a report on ts: notes, metrics, the
// threads' trouble and the registry's limit.
func (r *report) header(ts []engine.Thread, seq int) *reports.Profile {
	a := r.a
	p := &reports.Profile{PID: a.pid, Seq: seq, Notes: append([]string(nil), a.notes...)}
	for _, m := range a.metrics {
		p.Metrics = append(p.Metrics, reports.Metric{Name: m.String(), Unit: m.Unit(), Calibrated: r.cal != nil})
	}
	p.Notes = append(p.Notes, fmt.Sprintf("Event source: %s", engine.SourceName()))
	if a.opts.Sample != nil {
		a.sampleHeader(p)
	}
	if a.opts.Alloc != nil {
		a.allocHeader(p)
	}
	if a.opts.Lock != nil {
		a.lockHeader(p)
	}
	// Reports are written under a.mu, as rtdriver roots= changes them.
	if _, ok := a.source.(jvmti.BCI); ok && a.opts.Roots != "" {
		p.Notes = append(p.Notes, "ROOTS="+a.opts.Roots+": only the calls made inside these methods are counted, each thread's tree holding its roots' subtrees; "+
			"of the classes named above, BCI instruments only those their calls may reach, found as they run")
	}
	if b, ok := a.source.(jvmti.BCI); ok && b.Stats().KeptRunning > 0 {
		kept := b.Stats().KeptRunning
		what := fmt.Sprintf("%d classes left as they were, their methods not seen: a method of each was", kept)
		if kept == 1 {
			what = "1 class left as it was, its methods not seen: a method of it was"
		}
		p.Notes = append(p.Notes, "BCI: "+what+" running a loop when it would have been instrumented "+
			"(HotSpot never compiles the replaced version of a method, so that loop would have run interpreted until it returned: for a program's main loop, the rest of the run, "+
			"after the profile too); log-msg names them")
	}
	if r.cal != nil {
		p.Notes = append(p.Notes, "Calibration: final minima (every event calibrated with the minimum over the whole run, per type/transition sequence)")
	} else if r.nm > 0 && !a.opts.sampledTree() {
		p.Notes = append(p.Notes, "Calibration: off (NOCALIBRATE): BASE is the raw metric between events")
	}
	if over := engine.MethodsOver(); over > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Warning: method registry full at %d methods (MAXMETHODS=): %d method lookups are reported as <method-limit-reached>",
			engine.MaxMethods(), over))
	}
	p.Notes = append(p.Notes, virtualThreadNotes(ts, !a.opts.VThreads, a.opts.sampledTree(), a.opts.Lock != nil)...)
	p.Notes = append(p.Notes, fallbackNotes(ts, a.ptt.Backend.String(), r.calFB != nil)...)
	if n := a.tscDriftNote(); n != "" {
		p.Notes = append(p.Notes, n)
	}
	for _, t := range ts {
		c := a.base.counters(t)
		if c.UnmatchedExits > 0 || c.MissedExits > 0 || c.AllocFailures > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("Thread %s: %d exits without a seen entry (shown as O:), %d missed exits, %d allocation failures",
				rootName(t), c.UnmatchedExits, c.MissedExits, c.AllocFailures))
		}
	}
	return p
}

// fallbackNotes say which threads' PTT reads did not use the process's
// backend, and how they were calibrated; their tree roots carry the same
// mark (rootName), so that no report shows their numbers unmarked.
func fallbackNotes(ts []engine.Thread, backend string, calibrated bool) []string {
	by := map[string][]string{}
	for _, t := range ts {
		if b := t.FallbackBackend(); b != "" {
			by[b] = append(by[b], rootName(t))
		}
	}
	how := "calibrated with minima of their own"
	if !calibrated {
		how = "not calibrated"
	}
	var notes []string
	for _, b := range []string{"perf", "clock"} {
		names := by[b]
		if len(names) == 0 {
			continue
		}
		const show = 8
		list := strings.Join(names[:min(show, len(names))], ", ")
		if len(names) > show {
			list += ", ..."
		}
		why := "each its own perf event, no interrupt accounting"
		if b == "clock" {
			why = "a syscall per read, whose cost calibration removes less well: compare their numbers with care"
		}
		notes = append(notes, fmt.Sprintf("PTT: %d threads read %s instead of the %s backend (%s; %s): %s",
			len(names), b, backend, why, how, list))
	}
	if len(by["perf"]) > 0 && len(by["clock"]) > 0 && calibrated {
		notes = append(notes, "PTT: the perf and clock threads share one set of minima: the clock threads' calibration is the less exact")
	}
	return notes
}

// rootName is a thread's root node name; a thread whose PTT reads fell
// back to another backend carries reports.FallbackMark there, so that its
// numbers are marked wherever its tree shows.
func rootName(t engine.Thread) string {
	name := t.Name()
	if b := t.FallbackBackend(); b != "" {
		name += reports.FallbackMark(b)
	}
	return reports.RootName(t.TID(), name)
}

// name is a node's method with its type letter, escaped for log-rt
// (reports.EscapeName), made once per method.
// Under BCI the events cannot tell interpreted from compiled code, but
// the JIT says what it compiled: such a method is J/j for the run.
func (r *report) name(nd engine.Node) string {
	typ := nd.Type()
	k := uint64(typ)<<32 | uint64(nd.Method())
	s, ok := r.names[k]
	if !ok {
		// Asked once per method and report (a cgo call), not per node.
		if r.a.opts.BCI && (typ == 'i' || typ == 'I') && engine.MethodCompiled(nd.Method()) {
			typ += 'j' - 'i'
		}
		name := engine.MethodName(nd.Method())
		if len(name) == 0 && r.a.opts.Sample != nil {
			// A context made since the methods were named, by a
			// thread still sampling while the report is written.
			r.a.nameSampled()
			name = engine.MethodName(nd.Method())
		}
		s = reports.EscapeName(string(typ) + ":" + string(name))
		r.names[k] = s
	}
	return s
}

// thread writes one thread's tree: the nodes entered or charged since the
// last reset and the frames above them (a frame open at the reset shows
// with no calls of its own), depth-first, children in first-call order.
func (r *report) thread(lw *reports.LogRTWriter, t engine.Thread) error {
	nm := r.nm
	tb := r.a.base[t.ID()]
	t, err := t.Unpacked(&r.scratch)
	if err != nil {
		return err
	}
	// Sequence counts before node values: a count read first never
	// covers an event whose delta the values read later miss, so
	// calibration never removes more than was added.
	ns := t.NSeqs()
	n := t.Len()
	calibrating := engine.Calibrating()
	cal := r.cal
	if t.Fallback() {
		cal = r.calFB
	}
	tot := threadTotals{root: rootName(t), ended: t.Ended(), counters: r.a.base.counters(t), metrics: make([]uint64, nm)}
	var nb *threadBase // the next baseline's, for an interval flush
	if r.nextBase != nil {
		nb = &threadBase{counters: t.Counters(), seqs: make([]uint64, ns), nodes: make([]uint64, n*nodeFields(nm))}
		if calibrating {
			nb.nodeSeqs = make([]uint64, n)
		}
		r.nextBase[t.ID()] = nb
		// Until read below, a node is as at the last baseline: the
		// report shows nothing of it, the next one all it gains.
		for i := 0; i < n; i++ {
			copy(nb.node(i, nm), tb.node(i, nm))
		}
	}
	delta := grow(r.delta, n*nm)
	if cal != nil || nb != nil {
		for i := 0; i < ns; i++ {
			node, key, c := t.Seq(i)
			if nb != nil {
				nb.seqs[i] = c
			}
			if node >= n || cal == nil {
				continue
			}
			c -= tb.seq(i)
			for k := 0; k < nm; k++ {
				delta[node*nm+k] += c * cal.removed[k][key]
			}
		}
		// Each node's own count (its first key's), when calibrating.
		for i := 0; i < n && calibrating; i++ {
			key, c := t.Node(i).Seq0()
			if nb != nil {
				nb.nodeSeqs[i] = c
			}
			if c == 0 || cal == nil {
				continue
			}
			c -= tb.seq0(i)
			for k := 0; k < nm; k++ {
				delta[i*nm+k] += c * cal.removed[k][key]
			}
		}
	}
	// Each node's calls are read once: its row and its parent's CEE must
	// agree while the thread runs on.
	keep := grow(r.keep, n)
	calls := grow(r.calls, n)
	r.calls = calls
	for i := n - 1; i > 0; i-- {
		nd := t.Node(i)
		old := tb.node(i, nm)
		calls[i] = nd.Calls() - at(old, 0)
		if calls[i] > 0 {
			keep[i] = true
		}
		if nb != nil {
			nb.node(i, nm)[0] = at(old, 0) + calls[i]
		}
		for k := 0; k < nm && !keep[i]; k++ {
			keep[i] = nd.Base(k) > at(old, 4+k)
		}
		if keep[i] {
			keep[nd.Parent()] = true
		}
	}
	r.keep, r.delta = keep, delta
	if n == 0 || !keep[0] {
		return nil
	}
	// Children lists as first-child / next-sibling links, built
	// backwards so that siblings come out in creation order.
	first, next := grow(r.first, n), grow(r.next, n)
	r.first, r.next = first, next
	for i := n - 1; i > 0; i-- {
		if keep[i] {
			p := t.Node(i).Parent()
			next[i] = first[p]
			first[p] = int32(i)
		}
	}
	base := make([]uint64, nm)
	dl := make([]uint64, nm)
	type frame struct{ node, level int }
	stack := []frame{{0, 0}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		nd := t.Node(f.node)
		old := tb.node(f.node, nm)
		ds, in, excs := nd.DS(), nd.IN(), nd.Excs()
		if excs == engine.CountMax || ds == engine.CountMax || in == engine.CountMax {
			r.saturated++
		}
		row := reports.Row{Level: f.level, Calls: calls[f.node], DS: ds - at(old, 2), IN: in - at(old, 3)}
		tot.excs += excs - at(old, 1)
		var nv []uint64 // this node in the next baseline
		if nb != nil {
			nv = nb.node(f.node, nm)
			nv[1], nv[2], nv[3] = excs, ds, in
		}
		if f.node == 0 {
			row.Name = tot.root
		} else {
			row.Name, row.Escaped = r.name(nd), true
		}
		for k := 0; k < nm; k++ {
			now := nd.Base(k)
			if nv != nil {
				nv[4+k] = now
			}
			raw := now - at(old, 4+k)
			d := delta[f.node*nm+k]
			// A live thread's count can be read before the delta it
			// belongs to lands: never show a wrapped value.
			d = min(d, raw)
			base[k], dl[k] = raw-d, d
			tot.metrics[k] += base[k]
		}
		if nm > 0 {
			row.Base, row.Delta = base, dl
		}
		tot.ds += row.DS
		tot.in += row.IN
		tot.nodes++
		// Children, pushed in reverse so the first comes out first.
		mark := len(stack)
		for c := first[f.node]; c != 0; c = next[c] {
			row.Callees += calls[c]
			stack = append(stack, frame{int(c), f.level + 1})
		}
		for i, j := mark, len(stack)-1; i < j; i, j = i+1, j-1 {
			stack[i], stack[j] = stack[j], stack[i]
		}
		if err := lw.Row(row); err != nil && r.out.Failed() == nil {
			return err
		}
		r.out.Mark(lw.Size(), uint64(lw.Rows()))
	}
	r.totals.add(tot)
	return nil
}

func at(v []uint64, i int) uint64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// grow returns s resized to n zeroed elements, reusing its array when
// it is large enough: the per-thread scratch of a report.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// writeLogRT writes the next log-rt.N_<pid> from the live trees, less
// the counts at the last reset or interval flush, and returns what it
// learnt of each thread. With interval, the counts it read become the
// baseline (see baseline.go). The caller holds a.mu.
func (a *agent) writeLogRT(interval bool) (string, *threadSummary, error) {
	seq := a.seq + 1
	path := a.fileName("rt", seq)
	if a.opts.Sample != nil {
		a.nameSampled()
	}
	var r *report
	var events uint64
	var err error
	var cut *atomicfile.Cut
	end := time.Now()
	engine.WithThreads(func(ts []engine.Thread) {
		r = &report{a: a, nm: len(a.metrics), names: map[uint64]string{}}
		if interval {
			r.nextBase = baseline{}
		}
		r.cal = a.calibrator(ts)
		r.calFB = a.fallbackCalibrator(ts)
		p := r.header(ts, seq)
		p.Interval = a.interval(end)
		if n := a.cpuNote(); n != "" {
			p.Notes = append(p.Notes, n)
		}
		for _, t := range ts {
			events += a.base.counters(t).Events
		}
		cut, err = a.writeRows(path, r, p, ts)
	})
	if err != nil {
		return "", nil, fmt.Errorf("writing log-rt: %w", err)
	}
	if r.saturated > 0 {
		a.log.Warn("counts that stopped at their limit: the exception exits, dispatches or interrupts of these contexts are at least what log-rt shows",
			zap.String("file", path), zap.Int("rows", r.saturated), zap.Uint64("limit", engine.CountMax))
	}
	if a.opts.JLM {
		// Over the same span as the log-rt; an interval flush starts the
		// next span.
		if jp, err := a.writeJLM(seq, a.interval(end)); err != nil {
			a.log.Error("log-jlm not written", zap.Error(err))
		} else {
			a.log.Info("log-jlm written", zap.String("file", jp))
			if interval && cut == nil {
				jvmti.ResetJLM()
			}
		}
	}
	a.seq = seq
	a.written = events
	a.files = append(a.files, path)
	switch {
	case interval && cut != nil:
		msg := fmt.Sprintf("%s was cut short: the interval goes on, and the next log-rt covers this one's too", filepath.Base(path))
		a.warn(msg)
	case interval:
		a.base, a.written = r.nextBase, 0
		a.setBase(end, reports.SinceFlush)
		a.sampleRestart()
		// As at a reset: threads that have ended can add nothing more.
		a.retireLocked()
	}
	return path, &r.totals, nil
}

// setBase starts the next log-rt's counts at at (see baseAt).
func (a *agent) setBase(at time.Time, kind reports.IntervalCounts) {
	a.baseAt, a.baseKind, a.baseCPU = at, kind, processCPU()
}

// processCPU is the process's user and system time, every thread's; -1
// if it cannot be read.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuNote says how much CPU the process used over the log-rt's interval,
// beside the rows, which hold only the threads whose methods it sees,
// while collecting: not the JIT compilers', the garbage collector's or
// the agent's (on a short program under BCI, the compilers' can be as
// much as the program's own). Over the whole interval, collecting or
// not, as the note says.
func (a *agent) cpuNote() string {
	now := processCPU()
	if a.baseAt.IsZero() || a.opts.sampledTree() || now < 0 || a.baseCPU < 0 {
		return ""
	}
	return fmt.Sprintf("Process CPU time over this interval: %.3f s, every thread's (user and system), collecting or not: the rows hold the threads whose methods are seen, while collecting; "+
		"not the JIT compilers', the garbage collector's, the VM's own or the agent's (SAMPLE samples those too)", (now - a.baseCPU).Seconds())
}

// interval is the header's interval of a report taken at end.
func (a *agent) interval(end time.Time) *reports.Interval {
	iv := &reports.Interval{Start: a.baseAt, End: end, Counts: a.baseKind}
	if iv.Start.IsZero() { // nothing collected yet: an empty interval
		iv.Start, iv.Counts = end, reports.CumulativeSinceStart
	}
	// Both carry monotonic readings: the wall clock's steps do not count.
	iv.StartVM, iv.EndVM = iv.Start.Sub(a.loaded), iv.End.Sub(a.loaded)
	return iv
}

// writeRows writes the log-rt at path: the header p and the rows of
// ts, kept up to the last whole row after a write error (see cut.go).
func (a *agent) writeRows(path string, r *report, p *reports.Profile, ts []engine.Thread) (*atomicfile.Cut, error) {
	tmp, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	defer tmp.Abort()
	r.out = tmp
	lw, err := reports.NewLogRTWriter(tmp, p)
	if err != nil {
		return nil, err
	}
	tmp.Mark(lw.Size(), 0)
	for _, t := range ts {
		if err := r.thread(lw, t); err != nil {
			return nil, err
		}
	}
	if err := lw.Close(); err != nil && tmp.Failed() == nil {
		return nil, err
	}
	return a.commitCut(tmp, path, uint64(lw.Rows()), "rows")
}

// eventsSinceReset counts the events of every thread since the last reset.
func (a *agent) eventsSinceReset() uint64 {
	var n uint64
	engine.WithThreads(func(ts []engine.Thread) {
		for _, t := range ts {
			n += a.base.counters(t).Events
		}
	})
	return n
}

// metricNames is "PTT_TIME+PTT_INSTS", or "none".
func (a *agent) metricNames() string {
	switch {
	case a.opts.Alloc != nil:
		return "ALLOC_SPACE+ALLOC_OBJECTS"
	case a.opts.Lock != nil:
		return "DELAY+CONTENTIONS"
	case a.opts.Sample != nil && a.opts.Sample.Kind == jvmti.SampleWall:
		return "SAMPLED_WALL_TIME"
	case a.opts.Sample != nil:
		return "SAMPLED_CPU_TIME"
	}
	var names []string
	for _, m := range a.metrics {
		names = append(names, m.String())
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}
