package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
)

// jitWriter writes the JIT code records (JITA2N, PERFMAP) as they come:
// JIT events are on from Agent_OnLoad, before any code is compiled, so
// nothing needs replaying with GenerateEvents. The perf map is appended
// as perf expects of a live process; log-jita2n is written under a
// temporary name and renamed into place at VM death, so no record is
// held in memory longer than one drain.
type jitWriter struct {
	a       *agent
	mu      sync.Mutex
	perf    *bufio.Writer
	pf      *os.File
	a2n     *atomicfile.Counter // into tmp, which buffers
	tmp     *atomicfile.File
	records int
	tick    *drainer
}

const jitDrainEvery = 500 * time.Millisecond

var jitKinds = map[jvmti.JITKind]string{jvmti.JITLoad: "LOAD", jvmti.JITUnload: "UNLOAD", jvmti.JITDynamic: "DYNAMIC"}

func (a *agent) startJIT() *jitWriter {
	j := &jitWriter{a: a}
	if a.opts.PerfMap {
		path := fmt.Sprintf("/tmp/perf-%d.map", a.pid)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			say("libjprof: perf map not written: %v", err)
			a.log.Error("perf map not written", zap.Error(err))
		} else {
			j.pf, j.perf = f, bufio.NewWriter(f)
			a.log.Info("perf map", zap.String("file", path))
		}
	}
	if a.opts.JitA2N {
		tmp, err := atomicfile.Create(a.fileName("jita2n", 0))
		if err != nil {
			say("libjprof: log-jita2n: %v", err)
			a.log.Error("log-jita2n not written", zap.Error(err))
		} else {
			j.tmp, j.a2n = tmp, &atomicfile.Counter{W: tmp}
			writeJitA2NHeader(j.a2n, a.pid)
			tmp.Mark(j.a2n.N, 0)
		}
	}
	j.tick = startDrainer(jitDrainEvery, j.drain)
	return j
}

func (j *jitWriter) drain() {
	recs := jvmti.TakeJIT()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.a2n != nil {
		// After a write error records are counted, not written.
		for _, r := range recs {
			if j.tmp.Failed() == nil {
				writeJitA2NRecord(j.a2n, r)
				j.tmp.Mark(j.a2n.N, uint64(j.records+1))
			}
			j.records++
		}
	}
	if j.perf == nil {
		return
	}
	for _, r := range recs {
		if r.Kind == jvmti.JITUnload || r.Size == 0 {
			continue
		}
		// perf's format: START SIZE symbol, hex without 0x.
		fmt.Fprintf(j.perf, "%x %x %s\n", r.Addr, r.Size, r.Name)
	}
	if err := j.perf.Flush(); err != nil {
		j.a.log.Error("perf map write failed", zap.Error(err))
		j.pf.Close()
		j.perf = nil
	}
}

// finish drains what is left and puts log-jita2n in place.
func (j *jitWriter) finish() {
	j.tick.Stop()
	j.drain()
	if j.pf != nil {
		j.pf.Close()
	}
	if j.tmp == nil {
		return
	}
	path := j.a.fileName("jita2n", 0)
	if _, err := j.a.commitCut(j.tmp, path, uint64(j.records), "records"); err != nil {
		say("libjprof: log-jita2n: %v", err)
		j.a.log.Error("log-jita2n not written", zap.Error(err))
		return
	}
	j.a.files = append(j.a.files, path)
	j.a.log.Info("log-jita2n written", zap.String("file", path), zap.Int("records", j.records))
}

// writeJitA2NHeader and writeJitA2NRecord write JProf's log-jita2n: one
// record per piece of code, its timestamp as two 32-bit hex words as
// JProf wrote them.
func writeJitA2NHeader(w io.Writer, pid int) {
	fmt.Fprintf(w, " JitA2N\n BINARY DATA IN PRINTABLE HEX\n Process_Number_ID=%d\n", pid)
	fmt.Fprintf(w, " Format: <time high> <time low> <code address> <size> <kind> <name>; time is CLOCK_MONOTONIC ns;\n")
	fmt.Fprintf(w, "         kind LOAD (compiled method), UNLOAD, DYNAMIC (VM-generated code); \"  INLINED m\" lines follow a LOAD\n")
}

func writeJitA2NRecord(w io.Writer, r jvmti.JITRecord) {
	fmt.Fprintf(w, "%08x %08x %016x %08x %s %s\n", r.TS>>32, r.TS&0xffffffff, r.Addr, r.Size, jitKinds[r.Kind], r.Name)
	for _, in := range r.Inlined {
		fmt.Fprintf(w, "  INLINED %s\n", in)
	}
}
