package main

// The heap of a running JVM: its class histogram (heap), an HPROF dump
// (heapdump), and which classes grew between two histograms (heapdiff).
// heap and heapdump ask the JVM itself through the attach protocol (the
// diagnostic commands jcmd sends): no agent is loaded for them.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libjprof/libjprof/reports"
)

func heapFlags(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("timeout", 5*time.Minute, "longest `WAIT` for the JVM (a full GC, a large heap)")
}

func liveHeap(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("heap", flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (default: standard output)")
	timeout := heapFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("heap: extra argument %q: it takes one pid or main class name", pos[1])
	}
	if len(pos) != 1 {
		return usagef("heap needs one pid or main class name")
	}
	if *out != "" {
		// Before the full GC the histogram costs the JVM.
		if err := checkOutPath(*out); err != nil {
			return err
		}
	}
	t, err := findTarget(pos[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	at := time.Now()
	hist, err := t.Execute(ctx, "jcmd", "GC.class_histogram")
	if err != nil {
		return err
	}
	if _, err := reports.ReadHistogram(strings.NewReader(hist)); err != nil {
		return fmt.Errorf("pid %d: the JVM's answer: %w", t.PID, err)
	}
	err = output(*out, stdout, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, " libjprof heap histogram\n Process_Number_ID=%d\n Main=%s\n Time=%s\n Note: live objects only (GC.class_histogram runs a full GC first)\n\n%s",
			t.PID, t.MainClass, at.UTC().Format(time.RFC3339Nano), hist)
		return err
	})
	if err == nil && *out != "" {
		fmt.Fprintf(stdout, "jprof: wrote %s\n", *out)
	}
	return err
}

func liveHeapDump(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("heapdump", flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (default: heap-<pid>.hprof)")
	timeout := heapFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("heapdump: extra argument %q: it takes one pid or main class name", pos[1])
	}
	if len(pos) != 1 {
		return usagef("heapdump needs one pid or main class name")
	}
	// Checked before the JVM is paused for the dump, which can take
	// minutes on a large heap and would then be thrown away.
	if *out != "" {
		if err := checkOutPath(*out); err != nil {
			return err
		}
	} else if !writable(".") {
		return usagef("the current directory is not writable: name an output with -o")
	}
	t, err := findTarget(pos[0])
	if err != nil {
		return err
	}
	if *out == "" {
		*out = fmt.Sprintf("heap-%d.hprof", t.PID)
	}
	dir, err := outputDir(t)
	if err != nil {
		return err
	}
	// The JVM writes the dump as its user, in its own file system; it is
	// copied out and removed there.
	jvmPath := filepath.Join(dir, fmt.Sprintf("heap-%d-%d.hprof", t.NSPid, time.Now().UnixNano()))
	host := t.Path(jvmPath)
	defer os.Remove(host)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	fmt.Fprintf(warnings, "jprof: dumping the heap of pid %d (%s)\n", t.PID, t.MainClass)
	reply, err := t.Execute(ctx, "jcmd", "GC.heap_dump "+jvmPath)
	if err != nil {
		return err
	}
	// In a directory the JVM's user owns: read only if it is a regular
	// file of theirs once open (not a link to a file only root may read,
	// nor a FIFO).
	f, err := openLogFile(host, t.UID)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pid %d: no heap dump written: %s", t.PID, strings.Join(strings.Fields(reply), " "))
	}
	if err != nil {
		return fmt.Errorf("pid %d: %w", t.PID, err)
	}
	defer f.Close()
	// 0600, as HotSpot writes its own dumps and the agent's rtdriver
	// heapdump is: a dump holds every value the program had (passwords,
	// keys, tokens), which only the JVM's user and root may read.
	if err := outputPerm(*out, nil, 0o600, func(w io.Writer) error { _, err := io.Copy(w, f); return err }); err != nil {
		return err
	}
	fi, _ := os.Stat(*out)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Fprintf(stdout, "jprof: wrote %s (%.1f MiB, HPROF: Eclipse MAT, VisualVM)\n", *out, float64(size)/(1<<20))
	return nil
}

func heapDiff(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("heapdiff", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	n := fs.Int("n", 30, "show the first `N` classes (0: all)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 2 {
		return usagef("heapdiff: extra argument %q: it takes two histograms, the earlier first", pos[2])
	}
	if len(pos) != 2 {
		return usagef("heapdiff needs two histograms, the earlier first")
	}
	if *n < 0 {
		return usagef("-n %d: want 0 (all) or more", *n)
	}
	if err := checkOutFile(*out, pos...); err != nil {
		return err
	}
	var hs [2]*reports.Histogram
	for i, p := range pos {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		hs[i], err = reports.ReadHistogram(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	// Two of one JVM given the wrong way round would show every class as
	// shrinking: said, rather than a table of negative growth.
	if a, b := hs[0].HeaderValue("Time="), hs[1].HeaderValue("Time="); a != "" && b != "" &&
		hs[0].HeaderValue("Process_Number_ID=") == hs[1].HeaderValue("Process_Number_ID=") {
		ta, errA := time.Parse(time.RFC3339Nano, a)
		tb, errB := time.Parse(time.RFC3339Nano, b)
		if errA == nil && errB == nil && tb.Before(ta) {
			return usagef("%s (%s) was taken before %s (%s): give the earlier histogram first", pos[1], b, pos[0], a)
		}
	}
	// Two JVMs' histograms (a program restarted, say) are a fair
	// comparison, so diffed all the same; but the counts are then not
	// one heap's growth, which the output alone would not show.
	if twoJVMs(hs[0], hs[1]) {
		fmt.Fprintf(warnings, "jprof: warning: %s is of %s, %s of %s: two JVMs; diffed all the same\n",
			pos[0], jvmOf(hs[0]), pos[1], jvmOf(hs[1]))
	}
	diff := reports.DiffHistograms(hs[0], hs[1])
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteHeapDiff(w, hs[0], hs[1], diff, *n) })
}

// twoJVMs: the histograms' headers name different pids or main classes
// (a header without them, one jcmd wrote, says nothing).
func twoJVMs(a, b *reports.Histogram) bool {
	for _, k := range []string{"Process_Number_ID=", "Main="} {
		if va, vb := a.HeaderValue(k), b.HeaderValue(k); va != "" && vb != "" && va != vb {
			return true
		}
	}
	return false
}

// jvmOf names the JVM of a histogram as its header does: "pid 1234
// (Main)".
func jvmOf(h *reports.Histogram) string {
	pid, main := h.HeaderValue("Process_Number_ID="), h.HeaderValue("Main=")
	if pid == "" {
		pid = "?"
	}
	if main == "" {
		return "pid " + pid
	}
	return fmt.Sprintf("pid %s (%s)", pid, main)
}
