package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
)

// The heap, on rtdriver's command: the JVM's class histogram and HPROF
// dump, through its own diagnostic commands (what jcmd GC.class_histogram
// and GC.heap_dump run), written beside the other files. They need no
// event source and work whether collection is on or off.

// Heap implements control.Controller.
func (a *agent) Heap() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	t0 := time.Now()
	var hist string
	if err := a.vm.Do(func() (err error) {
		hist, err = jvmti.DiagnosticCommand("GC.class_histogram")
		return err
	}); err != nil {
		return "", err
	}
	a.heapSeq++
	path := a.fileName("heap", a.heapSeq)
	err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, " libjprof heap histogram\n Process_Number_ID=%d\n Main=%s\n Time=%s\n Note: live objects only (GC.class_histogram runs a full GC first)\n\n%s",
			a.pid, a.mainClass, t0.UTC().Format(time.RFC3339Nano), hist)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("heap histogram: %w", err)
	}
	a.files = append(a.files, path)
	a.log.Info("heap histogram written", zap.String("file", path), zap.Duration("took", time.Since(t0)))
	return path, nil
}

// HeapDump implements control.Controller. The JVM writes the dump itself;
// it appears under its final name only once whole.
func (a *agent) HeapDump() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	t0 := time.Now()
	a.dumpSeq++
	path := a.fileName("hprof", a.dumpSeq) + ".hprof"
	// The dumper wants a name ending in .hprof, and one not taken.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".partial.hprof")
	os.Remove(tmp)
	if err := a.vm.Do(func() error { return jvmti.HeapDump(tmp, true) }); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("heap dump: %w", err)
	}
	a.files = append(a.files, path)
	a.log.Info("heap dump written", zap.String("file", path), zap.Duration("took", time.Since(t0)))
	return path, nil
}
