package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// AllocCost measures what the allocation profile costs an
// allocation-heavy program (java/src/AllocSites.java, 3 GiB allocated in
// arrays of 64 bytes to 4 KiB) on JDK 25: without an agent, under
// libjprof ALLOC at its default interval, and under JFR's allocation
// sampler (jdk.ObjectAllocationSample) throttled to the rate libjprof
// sampled at, in interleaved rounds; ratios to the no-agent run of the
// same round. The time is the program's own for its allocations, so that
// neither profiler's start-up (JFR's is about a second) counts.
type AllocCost struct {
	Java     string
	Skipped  string
	Rate     float64 // libjprof's samples per second, from the first run
	Throttle int     // JFR's throttle, per second
	Rows     []*AllocRow
	InProc   *AllocInProc
}

// AllocRow is one configuration's runs.
type AllocRow struct {
	Key, Name string
	Wall      []float64 // s the allocations took (the program's own clock), by round
	Samples   []float64 // samples taken, by round
	// Own is libjprof's callback CPU time over the allocation time, by
	// round: the agent's own share, HotSpot's sampler aside.
	Own []float64
}

const (
	allocMiB    = "3072"
	allocRounds = 11
)

func (a *AllocCost) Title() string { return "Allocation profile cost: ALLOC against JFR" }

func (a *AllocCost) Run(ctx context.Context, s *Suite, tmp string) error {
	a.Java = filepath.Join(jdk25Home, "bin", "java")
	if _, err := os.Stat(a.Java); err != nil {
		a.Skipped = "no JDK 25 at " + jdk25Home
		return nil
	}
	jfr, err := jfrTool(a.Java)
	if err != nil {
		a.Skipped = err.Error()
		return nil
	}
	mib, rounds := allocMiB, allocRounds
	if s.Opts.RealSmall {
		mib, rounds = "64", 1
	}
	main := []string{"-cp", filepath.Join(s.Opts.Root, "build", "java"), "AllocSites", mib}
	lib := filepath.Join(s.Opts.Root, "build", "libjprof.so")
	// The rate JFR is throttled to: libjprof's, measured once first.
	first, n, _, err := a.runLibjprof(ctx, s, lib, main, filepath.Join(tmp, "rate"))
	if err != nil {
		return err
	}
	a.Rate = n / first // samples over the allocations' time
	a.Throttle = int(math.Ceil(a.Rate))
	jfc := filepath.Join(tmp, "alloc.jfc")
	if err := os.WriteFile(jfc, []byte(fmt.Sprintf(allocJFC, a.Throttle)), 0o644); err != nil {
		return err
	}
	a.Rows = []*AllocRow{
		{Key: "none", Name: "no agent"},
		{Key: "alloc", Name: "libjprof ALLOC (512 KiB)"},
		{Key: "jfr", Name: fmt.Sprintf("JFR jdk.ObjectAllocationSample, throttle %d/s", a.Throttle)},
	}
	runs, mibPhase, pairs := allocPhaseRuns, allocPhaseMiB, allocPhasePairs
	if s.Opts.RealSmall {
		runs, mibPhase, pairs = 1, 64, 2
	}
	if a.InProc, err = a.runInProc(ctx, s, lib, tmp, runs, mibPhase, pairs); err != nil {
		return err
	}
	for round := 0; round < rounds; round++ {
		for i := range a.Rows {
			row := a.Rows[(i+round)%len(a.Rows)] // rotated: each first in turn
			dir := filepath.Join(tmp, fmt.Sprintf("%s%d", row.Key, round))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			var wall, samples float64
			switch row.Key {
			case "none":
				res, err := runJVM(ctx, a.Java, jvmRun{Main: main, Dir: dir}, s.Opts.Timeout)
				if err != nil {
					return err
				}
				if wall, err = allocTime(res); err != nil {
					return err
				}
			case "alloc":
				var own float64
				if wall, samples, own, err = a.runLibjprof(ctx, s, lib, main, dir); err != nil {
					return err
				}
				row.Own = append(row.Own, own/wall)
			case "jfr":
				rec := filepath.Join(dir, "rec.jfr")
				res, err := runJVM(ctx, a.Java, jvmRun{JVMArgs: []string{"-Xlog:jfr+startup=warning",
					"-XX:StartFlightRecording:filename=" + rec + ",settings=" + jfc}, Main: main, Dir: dir}, s.Opts.Timeout)
				if err != nil {
					return err
				}
				if wall, err = allocTime(res); err != nil {
					return err
				}
				if samples, err = jfrCount(ctx, jfr, rec, "jdk.ObjectAllocationSample"); err != nil {
					return err
				}
			}
			row.Wall = append(row.Wall, wall)
			row.Samples = append(row.Samples, samples)
		}
	}
	return nil
}

// allocJFC enables JFR's allocation sampler alone, at a throttle.
const allocJFC = `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="ObjectAllocationSample" description="allocation samples only">
  <event name="jdk.ObjectAllocationSample">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
    <setting name="throttle">%d/s</setting>
  </event>
</configuration>
`

var lockEntriesNote = regexp.MustCompile(`Lock waits since the agent loaded [^:]*: entering ([0-9]+)`)

var allocSamplesNote = regexp.MustCompile(`Allocation sampling since the agent loaded [^:]*: ([0-9]+) samples.*; ([0-9.]+[µnm]?s) in the agent.s callback`)

// runLibjprof runs AllocSites under ALLOC: the allocations' time, the
// samples taken and the CPU time of the agent's callback (s).
func (a *AllocCost) runLibjprof(ctx context.Context, s *Suite, lib string, main []string, dir string) (wall, samples, own float64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, 0, err
	}
	res, err := runJVM(ctx, a.Java, jvmRun{Agent: lib, Options: "ALLOC,START,NORTDRIVER,LOGPATH=" + dir, Main: main, Dir: dir}, s.Opts.Timeout)
	if err != nil {
		return 0, 0, 0, err
	}
	b, err := os.ReadFile(res.file("rt.1"))
	if err != nil {
		return 0, 0, 0, err
	}
	m := allocSamplesNote.FindSubmatch(b)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("no allocation sampling note in %s", res.file("rt.1"))
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	cb, err := time.ParseDuration(string(m[2]))
	if err != nil {
		return 0, 0, 0, err
	}
	t, err := allocTime(res)
	return t, n, cb.Seconds(), err
}

var allocMs = regexp.MustCompile(`ms=([0-9]+)`)

// allocTime is the time AllocSites says its allocations took (s).
func allocTime(res *jvmResult) (float64, error) {
	m := allocMs.FindStringSubmatch(res.Stdout)
	if m == nil {
		return 0, fmt.Errorf("AllocSites printed no time: %q", tail(res.Stdout, 2))
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	return ms / 1000, err
}

// jfrCount is how many events of a type a recording holds (jfr summary).
func jfrCount(ctx context.Context, jfr, rec, event string) (float64, error) {
	out, err := exec.CommandContext(ctx, jfr, "summary", rec).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("jfr summary: %v: %s", err, tail(string(out), 3))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == event {
			n, err := strconv.ParseFloat(f[1], 64)
			return n, err
		}
	}
	return 0, nil
}

// ratio is the row's wall time over the no-agent run's, round by round.
func (a *AllocCost) ratio(key string) (Summary, bool) {
	var none, row *AllocRow
	for _, r := range a.Rows {
		switch r.Key {
		case "none":
			none = r
		case key:
			row = r
		}
	}
	if none == nil || row == nil {
		return Summary{}, false
	}
	return perRound(row.Wall, none.Wall)
}

func (a *AllocCost) Markdown(out io.Writer, s *Suite) error {
	if a.Skipped != "" {
		fmt.Fprintf(out, "Not run: %s\n\n", a.Skipped)
		return nil
	}
	fmt.Fprintf(out, "`AllocSites %s` (JDK 25: `%s`) allocates %s MiB in arrays of 64 bytes to 4 KiB from three sites, "+
		"without an agent, under libjprof `ALLOC` (default interval 512 KiB, `START`) and under JFR with only "+
		"`jdk.ObjectAllocationSample` on (stack traces on), throttled to libjprof's own rate (%.0f samples/s, measured in a "+
		"first run), in %d interleaved rounds, each configuration first in turn. Time: what the program's own clock says its "+
		"allocations took, without the JVM's start and end (JFR's start-up alone is about a second); ratio: over the no-agent "+
		"run of the same round (median and range).\n\n", allocMiB, a.Java, allocMiB, a.Rate, len(a.Rows[0].Wall))
	fmt.Fprintf(out, "| configuration | allocation time s: median | ratio to no agent | range | samples: median |\n|---|--:|--:|--:|--:|\n")
	for _, r := range a.Rows {
		w := Summarize(r.Wall)
		ratio, rng := "1", ""
		if r.Key != "none" {
			if sum, ok := a.ratio(r.Key); ok {
				ratio, rng = fmt.Sprintf("%.3f×", sum.Median), sum.Range("%.3f")
			}
		}
		samples := ""
		if r.Key != "none" {
			samples = fmt.Sprintf("%.0f", Summarize(r.Samples).Median)
		}
		fmt.Fprintf(out, "| %s | %.2f | %s | %s | %s |\n", r.Name, w.Median, ratio, rng, samples)
	}
	fmt.Fprintln(out)
	for _, r := range a.Rows {
		if len(r.Own) > 0 {
			o := Summarize(r.Own)
			fmt.Fprintf(out, "libjprof's own share: the time its callback took (stack walk, class name, tree), over the "+
				"allocation time: %.2f%% (median; %s%% over the rounds). The rest of the difference to the no-agent run is "+
				"HotSpot's sampler and the machine's drift between runs.\n\n", 100*o.Median, o.Scale(100).Range("%.2f"))
		}
	}
	if a.InProc != nil {
		a.InProc.markdown(out)
	}
	return nil
}

// allocTargets are issue 24's for allocations: ALLOC ≤ 2% over no agent,
// and no more than JFR's sampler at a comparable rate.
func allocTargets(a *AllocCost) []Target {
	t1 := Target{What: "ALLOC at its default interval on an allocation-heavy program: ≤ 2% over no agent (the program's own time)", Measured: "not measured", Met: "n/a"}
	t2 := Target{What: "ALLOC costs no more than JFR's jdk.ObjectAllocationSample at a comparable rate (JDK 25)", Measured: "not measured", Met: "n/a"}
	if a == nil || a.Skipped != "" || len(a.Rows) == 0 {
		if a != nil && a.Skipped != "" {
			t1.Measured, t2.Measured = "not run: "+a.Skipped, "not run: "+a.Skipped
		}
		return []Target{t1, t2}
	}
	al, ok1 := a.ratio("alloc")
	jf, ok2 := a.ratio("jfr")
	if ip := a.InProc; ip != nil && len(ip.Pairs) > 0 {
		// In one JVM, phase against phase: the measurement that the
		// machine's drift between JVMs does not swamp.
		sum := Summarize(ip.Pairs)
		t1.Measured = fmt.Sprintf("in one JVM at %.1f GB/s: %.3f× (interquartile %.3f–%.3f, %d pairs); %v a sample",
			ip.GBps, sum.Median, sum.Q1, sum.Q3, sum.N, ip.PerSample.Round(10*time.Nanosecond))
		if ok1 {
			t1.Measured += fmt.Sprintf("; separate JVMs (AllocSites) %.3f× (%s)", al.Median, al.Range("%.3f"))
		}
		t1.Met = yesNo(sum.Median <= 1.02)
	} else if ok1 {
		t1.Measured = fmt.Sprintf("%.3f× (%s over %d rounds)", al.Median, al.Range("%.3f"), al.N)
		t1.Met = yesNo(al.Median <= 1.02)
	}
	if ok1 && ok2 {
		t2.Measured = fmt.Sprintf("ALLOC %.3f×, JFR %.3f× (medians)", al.Median, jf.Median)
		t2.Met = yesNo(al.Median <= jf.Median)
	}
	return []Target{t1, t2}
}
