package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// AllocInProc is the allocation profile's cost measured inside one JVM
// (java/src/AllocPhases.java): phases of allocation, each with ALLOC
// collecting or not (the program turns it on and off through the
// agent's control socket), in pairs off-on, on-off, ... so that each
// pair's ratio compares the same JVM, JIT and heap seconds apart. Runs
// of separate JVMs differ by more than ALLOC costs (heap sizing, page
// faults, the machine's drift); adjacent phases of one JVM do not.
type AllocInProc struct {
	Pairs       []float64 // on/off time per pair, by run
	Control     []float64 // the same with commands that change nothing
	OffMs       []float64 // off phases' times (ms)
	Samples     float64   // samples taken in the run
	PerSample   time.Duration
	GBps        float64 // the off phases' allocation rate
	PhaseMiB    int
	Runs, NPair int
}

const (
	allocPhaseMiB   = 1024
	allocPhasePairs = 40
	allocPhaseWarm  = 3
	allocPhaseRuns  = 3
)

var allocPhaseLine = regexp.MustCompile(`(?m)^phase (on|off) ms=([0-9.]+)$`)

// runInProc runs AllocPhases under ALLOC (collection off until the
// program starts it) in the runs asked.
func (a *AllocCost) runInProc(ctx context.Context, s *Suite, lib, dir string, runs, mib, pairs int) (*AllocInProc, error) {
	ip := &AllocInProc{PhaseMiB: mib, Runs: runs}
	// The last run is the control: status for on and off.
	for run := 0; run <= runs; run++ {
		control := run == runs
		d := filepath.Join(dir, fmt.Sprintf("inproc%d", run))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		var props []string
		if control {
			props = []string{"-Don=status", "-Doff=status"}
		}
		main := append(props, "-cp", filepath.Join(s.Opts.Root, "build", "java"), "AllocPhases",
			strconv.Itoa(mib), strconv.Itoa(pairs), strconv.Itoa(allocPhaseWarm))
		res, err := runJVM(ctx, a.Java, jvmRun{Agent: lib, Options: "ALLOC,LOGPATH=" + d, Main: main, Dir: d}, s.Opts.Timeout)
		if err != nil {
			return nil, err
		}
		ms := allocPhaseLine.FindAllStringSubmatch(res.Stdout, -1)
		if len(ms) != 2*pairs {
			return nil, fmt.Errorf("AllocPhases printed %d phases, want %d: %q", len(ms), 2*pairs, tail(res.Stdout+res.Stderr, 3))
		}
		for i := 0; i+1 < len(ms); i += 2 {
			on, off := ms[i], ms[i+1]
			if on[1] == "off" {
				on, off = off, on
			}
			ton, _ := strconv.ParseFloat(on[2], 64)
			toff, _ := strconv.ParseFloat(off[2], 64)
			if control {
				ip.Control = append(ip.Control, ton/toff)
				continue
			}
			ip.Pairs = append(ip.Pairs, ton/toff)
			ip.OffMs = append(ip.OffMs, toff)
		}
		if control {
			continue
		}
		b, err := os.ReadFile(res.file("rt.1"))
		if err != nil {
			return nil, err
		}
		if m := allocSamplesNote.FindSubmatch(b); m != nil {
			n, _ := strconv.ParseFloat(string(m[1]), 64)
			cb, _ := time.ParseDuration(string(m[2]))
			ip.Samples += n
			if n > 0 {
				ip.PerSample = time.Duration(float64(cb) / n)
			}
		}
		ip.NPair += pairs
	}
	if off := Summarize(ip.OffMs).Median; off > 0 {
		ip.GBps = float64(mib) * (1 << 20) / (off / 1e3) / 1e9
	}
	return ip, nil
}

func (ip *AllocInProc) markdown(out io.Writer) {
	sum, ctl := Summarize(ip.Pairs), Summarize(ip.Control)
	fmt.Fprintf(out, "**In one JVM** (`AllocPhases %d %d %d`, %d runs): phases of %d MiB allocated as above, at %.1f GB/s "+
		"(the phases without sampling), with `ALLOC` collecting in every other phase (the program sends `start` and "+
		"`detach` to the agent's socket between phases, untimed), in pairs off-on, on-off, ...: each pair compares the "+
		"same JVM, JIT and heap a fraction of a second apart, which runs of separate JVMs cannot (their heap sizing and "+
		"page faults differ by more than the sampler costs). Phase time on over off, per pair: **%.3f×** median "+
		"(%s, interquartile %.3f–%.3f, %d pairs); the agent's callback: %v a sample (wall time inside it), about one "+
		"sample per 512 KiB. The harness alone (a run whose commands change nothing, `status` for both): %.3f× "+
		"(interquartile %.3f–%.3f).\n\n",
		ip.PhaseMiB, ip.NPair/max(ip.Runs, 1), allocPhaseWarm, ip.Runs, ip.PhaseMiB, ip.GBps, sum.Median, sum.Range("%.3f"),
		sum.Q1, sum.Q3, len(ip.Pairs), ip.PerSample.Round(10*time.Nanosecond), ctl.Median, ctl.Q1, ctl.Q3)
}
