package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/attach"
)

// Attach measures profiling a running JVM with `jprof`: the throughput of
// a long-running program (java/src/Service.java, which prints the units
// of work its main thread did every 500 ms) before the attach, while
// profiled and after the detach, in the same JVM; the time from the
// command to the first sample; and many attach/profile/detach cycles on
// one JVM, with its resident set.
type Attach struct {
	// Warm, Phase and Settle are the run's phases: warm-up, each
	// measured phase, and the wait after the detach.
	Warm, Phase, Settle time.Duration
	Runs                []*AttachRun
	Cycles              []*AttachCycles
	Skipped             string
}

// AttachRun is one -e event's JVMs.
type AttachRun struct {
	Event string
	// Per JVM: the medians of the 500 ms windows during and after,
	// over that of the windows before.
	During, After []float64
	// FirstSample is the time from `jprof start` to the agent's first
	// event (ms), per JVM.
	FirstSample []float64
	Errs        []string
}

// AttachCycles is one JVM profiled again and again.
type AttachCycles struct {
	Event                   string
	N, Done                 int
	RSSBefore, RSS1, RSSEnd int64 // bytes: before the first, after the first, after the last
	// The same outside the Java heap's address range: the heap's pages
	// are touched as the agent's transformer allocates in it, as any
	// program that allocates touches them, up to the heap's size.
	OffHeapBefore, OffHeap1, OffHeapEnd int64
	// OffHeapMid is outside the heap after half the cycles: the growth
	// from there on is what each cycle keeps once the JVM is warm.
	OffHeapMid int64
	// JVMGrowth is what the JVM's Native Memory Tracking (committed)
	// says its own memory grew by after the first cycle (bytes), and
	// JVMTop its largest categories' growth; the rest of the growth
	// outside the heap is the agent's, the C library's arenas and the
	// JVM's untracked memory. NMTErr says why they are missing.
	JVMGrowth int64
	JVMTop    string
	NMTErr    string
	Err       string
}

// Phases of one throughput run (the smoke test's, RealSmall, are 3×
// shorter).
const (
	attachWarm   = 6 * time.Second
	attachPhase  = 8 * time.Second
	attachSettle = 3 * time.Second
	attachJVMs   = 3
	attachCycles = 50
	// attachRSSBound is the most the cycles after the first may add to
	// the JVM's resident set outside the Java heap: the agent's maps are
	// made at the first.
	attachRSSBound = 8 << 20
)

func (a *Attach) Title() string { return "Profiling a running JVM (jprof profile)" }

func (a *Attach) Run(ctx context.Context, s *Suite, tmp string) error {
	jprof := filepath.Join(s.Opts.Root, "build", "bin", "jprof")
	if _, err := os.Stat(jprof); err != nil {
		a.Skipped = "build/bin/jprof not built"
		return nil
	}
	a.Warm, a.Phase, a.Settle = attachWarm, attachPhase, attachSettle
	if s.Opts.RealSmall {
		a.Warm, a.Phase, a.Settle = a.Warm/3, a.Phase/3, a.Settle/3
	}
	events := []string{"bci", "cpu"}
	for _, ev := range events {
		a.Runs = append(a.Runs, &AttachRun{Event: ev})
	}
	jvms := attachJVMs
	if s.Opts.RealSmall {
		jvms = 1
	}
	// Interleaved: one JVM of each event in turn.
	for i := 0; i < jvms; i++ {
		for _, r := range a.Runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			s.Opts.Logf("attach: -e %s, JVM %d of %d", r.Event, i+1, jvms)
			if err := a.throughput(ctx, s, jprof, filepath.Join(tmp, fmt.Sprintf("%s%d", r.Event, i)), r); err != nil {
				r.Errs = append(r.Errs, err.Error())
			}
		}
	}
	cycles := attachCycles
	if s.Opts.RealSmall {
		cycles = 3
	}
	for _, ev := range events {
		c := &AttachCycles{Event: ev, N: cycles}
		a.Cycles = append(a.Cycles, c)
		s.Opts.Logf("attach: %d cycles of -e %s", cycles, ev)
		if err := a.cycles(ctx, s, jprof, filepath.Join(tmp, "cycles-"+ev), c); err != nil {
			c.Err = err.Error()
		}
	}
	return nil
}

// service is a running Service JVM and its throughput lines.
type service struct {
	cmd   *exec.Cmd
	pid   int
	mu    sync.Mutex
	lines []opsLine
	done  chan struct{}
}

type opsLine struct {
	at  time.Time
	ops float64
}

func startService(ctx context.Context, s *Suite, dir string, jvmArgs ...string) (*service, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := append(append([]string{}, jvmArgs...), "-cp", filepath.Join(s.Opts.Root, "build", "java"), "Service")
	cmd := exec.CommandContext(ctx, s.Opts.Java, args...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sv := &service{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(sv.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "ready":
				close(ready)
			case len(f) == 2 && f[0] == "ops":
				n, _ := strconv.ParseFloat(f[1], 64)
				sv.mu.Lock()
				sv.lines = append(sv.lines, opsLine{time.Now(), n})
				sv.mu.Unlock()
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case <-ready:
		return sv, nil
	case <-sv.done:
		cmd.Wait()
		return nil, errors.New("Service ended before it was ready")
	case <-time.After(30 * time.Second):
		sv.stop()
		return nil, errors.New("Service not ready in 30 s")
	}
}

func (sv *service) stop() {
	sv.cmd.Process.Kill()
	sv.cmd.Wait()
}

// window is the median throughput of the lines printed in [from, to).
func (sv *service) window(from, to time.Time) (float64, int) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	var xs []float64
	for _, l := range sv.lines {
		if !l.at.Before(from) && l.at.Before(to) {
			xs = append(xs, l.ops)
		}
	}
	return Summarize(xs).Median, len(xs)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func runTool(ctx context.Context, bin string, args ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("jprof %s: %v: %s", strings.Join(args, " "), err, tail(string(out), 3))
	}
	return nil
}

// firstEvent polls the agent's status until it counts an event.
func firstEvent(ctx context.Context, pid int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, ag := range control.AgentsOfPID(control.SocketBase, pid) {
			c, err := control.DialAgent(ctx, ag, "")
			if err != nil {
				continue
			}
			rs, err := c.Do(ctx, "status")
			c.Close()
			if err == nil && len(rs) == 1 {
				for _, f := range strings.Fields(rs[0].Detail) {
					if v, ok := strings.CutPrefix(f, "events="); ok && v != "0" {
						return nil
					}
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no event within %v", limit)
}

// throughput runs two Service JVMs side by side, the profiled one and a
// reference never attached to: the machine's drift moves both alike, so
// the profiled JVM's throughput is read as a ratio to the reference's,
// and each phase's ratio over the ratio before the attach.
func (a *Attach) throughput(ctx context.Context, s *Suite, jprof, dir string, r *AttachRun) error {
	sv, err := startService(ctx, s, filepath.Join(dir, "profiled"))
	if err != nil {
		return err
	}
	defer sv.stop()
	ref, err := startService(ctx, s, filepath.Join(dir, "reference"))
	if err != nil {
		return err
	}
	defer ref.stop()
	pid := strconv.Itoa(sv.pid)
	ratio := func(from, to time.Time) (float64, error) {
		x, n := sv.window(from, to)
		y, m := ref.window(from, to)
		if n == 0 || m == 0 || y == 0 {
			return 0, errors.New("no throughput lines in a phase")
		}
		return x / y, nil
	}
	if err := sleepCtx(ctx, a.Warm+a.Phase); err != nil {
		return err
	}
	now := time.Now()
	before, err := ratio(now.Add(-a.Phase), now)
	if err != nil || before == 0 {
		return fmt.Errorf("before the attach: %v", err)
	}
	t0 := time.Now()
	if err := runTool(ctx, jprof, "start", "-e", r.Event, pid); err != nil {
		return err
	}
	if err := firstEvent(ctx, sv.pid, 30*time.Second); err != nil {
		return err
	}
	first := time.Since(t0)
	from := time.Now()
	if err := sleepCtx(ctx, a.Phase); err != nil {
		return err
	}
	during, err := ratio(from, time.Now())
	if err != nil {
		return err
	}
	if err := runTool(ctx, jprof, "stop", "-o", dir+"/", pid); err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.Settle); err != nil {
		return err
	}
	from = time.Now()
	if err := sleepCtx(ctx, a.Phase); err != nil {
		return err
	}
	after, err := ratio(from, time.Now())
	if err != nil {
		return err
	}
	r.During = append(r.During, during/before)
	r.After = append(r.After, after/before)
	r.FirstSample = append(r.FirstSample, float64(first.Microseconds())/1000)
	return nil
}

func (a *Attach) cycles(ctx context.Context, s *Suite, jprof, dir string, c *AttachCycles) error {
	// NMT: which of the growth is the JVM's own memory.
	sv, err := startService(ctx, s, dir, "-XX:NativeMemoryTracking=summary")
	if err != nil {
		return err
	}
	defer sv.stop()
	pid := strconv.Itoa(sv.pid)
	if err := sleepCtx(ctx, a.Warm); err != nil {
		return err
	}
	c.RSSBefore, c.OffHeapBefore = vmRSS(sv.pid), offHeapRSS(ctx, sv.pid)
	for i := 0; i < c.N; i++ {
		out := filepath.Join(dir, "c.collapsed")
		if err := runTool(ctx, jprof, "profile", "-d", "200ms", "-e", c.Event, "-o", out, pid); err != nil {
			return fmt.Errorf("cycle %d: %w", i+1, err)
		}
		c.Done++
		if i == 0 {
			c.RSS1, c.OffHeap1 = vmRSS(sv.pid), offHeapRSS(ctx, sv.pid)
			if _, err := jcmd(ctx, sv.pid, "VM.native_memory baseline"); err != nil {
				c.NMTErr = err.Error()
			}
		}
		if i == c.N/2-1 {
			c.OffHeapMid = offHeapRSS(ctx, sv.pid)
		}
	}
	c.RSSEnd, c.OffHeapEnd = vmRSS(sv.pid), offHeapRSS(ctx, sv.pid)
	if c.RSSEnd == 0 {
		return errors.New("the JVM is gone after the cycles")
	}
	if c.NMTErr == "" {
		diff, err := jcmd(ctx, sv.pid, "VM.native_memory summary.diff")
		if err == nil {
			c.JVMGrowth, c.JVMTop, err = parseNMTDiff(diff)
		}
		if err != nil {
			c.NMTErr = err.Error()
		}
	}
	return nil
}

// jcmd runs a diagnostic command in the JVM pid through the attach
// mechanism and returns its output.
func jcmd(ctx context.Context, pid int, command string) (string, error) {
	t, err := attach.Open(pid)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return t.Execute(cctx, "jcmd", command)
}

var (
	nmtTotal = regexp.MustCompile(`(?m)^Total: reserved=\d+KB(?: [+-]\d+KB)?, committed=\d+KB(?: ([+-]\d+)KB)?`)
	nmtCat   = regexp.MustCompile(`(?m)^-\s+(.+?) \(reserved=\d+KB(?: [+-]\d+KB)?, committed=\d+KB(?: ([+-]\d+)KB)?`)
)

// parseNMTDiff reads jcmd VM.native_memory summary.diff: the committed
// memory's change (bytes) and its three largest growths by category.
func parseNMTDiff(out string) (int64, string, error) {
	m := nmtTotal.FindStringSubmatch(out)
	if m == nil {
		return 0, "", fmt.Errorf("no NMT total in %q", oneLine(out))
	}
	total, _ := strconv.ParseInt(m[1], 10, 64)
	type cat struct {
		name string
		kb   int64
	}
	var cats []cat
	for _, c := range nmtCat.FindAllStringSubmatch(out, -1) {
		if kb, _ := strconv.ParseInt(c[2], 10, 64); kb > 0 {
			cats = append(cats, cat{c[1], kb})
		}
	}
	sort.Slice(cats, func(i, j int) bool { return cats[i].kb > cats[j].kb })
	var top []string
	for i := 0; i < len(cats) && i < 3; i++ {
		top = append(top, fmt.Sprintf("%s +%.1f", cats[i].name, float64(cats[i].kb)/1024))
	}
	return total << 10, strings.Join(top, ", "), nil
}

func (a *Attach) Markdown(out io.Writer, s *Suite) error {
	if a.Skipped != "" {
		fmt.Fprintf(out, "Not run: %s\n\n", a.Skipped)
		return nil
	}
	fmt.Fprintf(out, "Two `java -cp build/java Service` JVMs (two threads doing units of work; the main thread prints its units every 500 ms) "+
		"run side by side without an agent: one is profiled, the other is the reference, never attached to, so that the machine's "+
		"drift cancels out. After %v of warm-up the profiled JVM's throughput over the reference's is read for %v (before), then "+
		"`jprof start -e E <pid>` loads libjprof and starts, %v are read while profiled (during), `jprof stop` ends the profile "+
		"and detaches, and after %v for the JIT to settle %v more are read (after). Each phase's ratio (median windows) is "+
		"divided by the ratio before; %d pairs of JVMs per event, interleaved; median and range over them. First event: from the "+
		"`jprof start` command to the agent's status counting an event (the load, the BCI retransformation, the first sample).\n\n",
		a.Warm, a.Phase, a.Phase, a.Settle, a.Phase, len(a.Runs[0].During)+len(a.Runs[0].Errs))
	fmt.Fprintf(out, "| -e | during / before | range | after detach / before | range | first event, ms | range |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range a.Runs {
		if len(r.During) == 0 {
			fmt.Fprintf(out, "| %s | failed: %s | | | | | |\n", r.Event, oneLine(strings.Join(r.Errs, "; ")))
			continue
		}
		d, af, f := Summarize(r.During), Summarize(r.After), Summarize(r.FirstSample)
		fmt.Fprintf(out, "| %s | %.3f | %s | %.3f | %s | %.0f | %s |\n", r.Event, d.Median, d.Range("%.3f"),
			af.Median, af.Range("%.3f"), f.Median, f.Range("%.0f"))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s\n\n", attachObsolete)
	for _, r := range a.Runs {
		if len(r.Errs) > 0 && len(r.During) > 0 {
			fmt.Fprintf(out, "-e %s: %d JVMs failed: %s\n\n", r.Event, len(r.Errs), oneLine(strings.Join(r.Errs, "; ")))
		}
	}
	fmt.Fprintf(out, "Attach/profile/detach cycles on one JVM (`jprof profile -d 200ms -e E -o c.collapsed <pid>` again and again), "+
		"its resident set (VmRSS) before the first, after the first and after the last:\n\n")
	fmt.Fprintf(out, "| -e | cycles done | RSS before, MiB | after 1, MiB | after all, MiB | growth after the first, MiB | outside the Java heap: before, after 1, after half, after all, MiB | its growth after the first, MiB | over the second half, MiB | of it the JVM's own (NMT), MiB: total, largest |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--|\n")
	for _, c := range a.Cycles {
		if c.Err != "" {
			fmt.Fprintf(out, "| %s | %d of %d: %s | | | | | | | | |\n", c.Event, c.Done, c.N, oneLine(c.Err))
			continue
		}
		nmt := fmt.Sprintf("%+.1f: %s", mib(c.JVMGrowth), c.JVMTop)
		if c.NMTErr != "" {
			nmt = "not read: " + oneLine(c.NMTErr)
		}
		fmt.Fprintf(out, "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f, %.1f, %.1f, %.1f | %.1f | %.1f | %s |\n", c.Event, c.Done, mib(c.RSSBefore), mib(c.RSS1), mib(c.RSSEnd),
			mib(c.RSSEnd-c.RSS1), mib(c.OffHeapBefore), mib(c.OffHeap1), mib(c.OffHeapMid), mib(c.OffHeapEnd), mib(c.OffHeapEnd-c.OffHeap1),
			mib(c.OffHeapEnd-c.OffHeapMid), nmt)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "The Java heap's share of the growth is its pages touched for the first time: BCI's transformer "+
		"(ASM, in the JVM) allocates as it rewrites every loaded class at each start and detach, and the collector hands out "+
		"fresh regions of the committed heap until all have been used once, as in any program that allocates; the heap's "+
		"size bounds it. Outside the heap are the agent's C and Go memory and the JVM's own: the JVM runs with "+
		"`-XX:NativeMemoryTracking=summary`, and its growth after the first cycle (a baseline then, `summary.diff` at the end) "+
		"is the last column. The JVM's arena chunks (memory its compilers, class redefinition and stack walks take and "+
		"give back to a pool it trims every few seconds), metadata of the replaced class versions and code are its own caches, "+
		"not the agent's; what the JVM frees stays resident in the C library's arenas unless given back, which each detach "+
		"does (`malloc_trim`). The growth over the second half of the cycles is what a cycle keeps once the JVM is warm.\n\n")
	return nil
}

// attachObsolete explains what a detach cannot give back.
const attachObsolete = "Under BCI a class with a method running a loop when the profile starts, or when it ends, is left as it was: HotSpot never compiles the replaced version of a running method, so retransforming it would leave the loop interpreted until it returned, for a main loop the rest of the run. Service's main loop and its worker's loop are in `Service`, which the profile leaves alone; their work, in `ServiceWork`, is instrumented and given its bytes back at the detach, and compiled again."

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// heapRange is the Java heap's address range, as jcmd GC.heap_info
// prints it: "[0x0000000687400000, 0x0000000800000000)".
var heapRange = regexp.MustCompile(`\[0x([0-9a-f]+), 0x([0-9a-f]+)\)`)

// offHeapRSS is the JVM's resident set outside the Java heap (bytes; 0
// if it cannot be told).
func offHeapRSS(ctx context.Context, pid int) int64 {
	info, err := jcmd(ctx, pid, "GC.heap_info")
	m := heapRange.FindStringSubmatch(info)
	if err != nil || m == nil {
		return 0
	}
	lo, _ := strconv.ParseUint(m[1], 16, 64)
	hi, _ := strconv.ParseUint(m[2], 16, 64)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return 0
	}
	var total, inHeap int64
	var start, end uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if a, z, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			start, _ = strconv.ParseUint(a, 16, 64)
			end, _ = strconv.ParseUint(z, 16, 64)
			continue
		}
		if f[0] == "Rss:" && len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			total += kb << 10
			if start >= lo && end <= hi {
				inHeap += kb << 10
			}
		}
	}
	return total - inHeap
}

// attachTargets are issue 23's: after a detach the program runs within 3%
// of its speed before the attach; the cycles run without a failure.
func attachTargets(a *Attach) []Target {
	var ts []Target
	for _, ev := range []string{"bci", "cpu"} {
		tg := Target{What: fmt.Sprintf("throughput after `jprof profile -e %s` detached: within 3%% of before the attach", ev), Measured: "not measured", Met: "n/a"}
		if a != nil {
			for _, r := range a.Runs {
				if r.Event == ev && len(r.After) > 0 {
					sum := Summarize(r.After)
					tg.Measured = fmt.Sprintf("%.3f× (%s over %d JVMs)", sum.Median, sum.Range("%.3f"), sum.N)
					tg.Met = yesNo(sum.Median >= 0.97 && sum.Median <= 1.03)
				}
			}
		}
		ts = append(ts, tg)
	}
	tg := Target{What: fmt.Sprintf("%d attach/profile/detach cycles on one JVM: no failure, RSS growth outside the Java heap after the first < %d MiB", attachCycles, attachRSSBound>>20), Measured: "not measured", Met: "n/a"}
	if a != nil && len(a.Cycles) > 0 {
		var parts []string
		ok := true
		for _, c := range a.Cycles {
			if c.Err != "" {
				parts = append(parts, fmt.Sprintf("-e %s: failed at %d of %d", c.Event, c.Done, c.N))
				ok = false
				continue
			}
			p := fmt.Sprintf("-e %s: %d done, RSS outside the Java heap +%.1f MiB after the first (with the heap's touched pages +%.1f), %+.1f over the second half",
				c.Event, c.Done, mib(c.OffHeapEnd-c.OffHeap1), mib(c.RSSEnd-c.RSS1), mib(c.OffHeapEnd-c.OffHeapMid))
			if c.NMTErr == "" {
				p += fmt.Sprintf("; the JVM's own memory (NMT) %+.1f of it", mib(c.JVMGrowth))
			}
			parts = append(parts, p)
			ok = ok && c.OffHeap1 > 0 && c.OffHeapEnd-c.OffHeap1 < attachRSSBound
		}
		tg.Measured, tg.Met = strings.Join(parts, "; "), yesNo(ok)
	}
	return append(ts, tg)
}
