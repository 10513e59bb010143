package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/libjprof/libjprof/reports"
	"github.com/libjprof/libjprof/trainer"
)

// Calibration is the calibration accuracy table (issue: calibrated within
// 15% for methods of 200 ns or more; calibrated error at least 5× smaller
// than uncalibrated for the smallest). Each round runs
// java/src/Accuracy.java once without the agent, in -Xint (the mode
// method events force), for each driver's true cost per call in thread
// CPU time, and once under the agent (RTARCF, PTT_TIME, the best backend,
// the built-in calibration table), for the driver's cumulative cost per
// call with and without calibration (trainer.Accuracy). Medians over the
// rounds.
type Calibration struct {
	rounds [][]trainer.AccuracyRow
	// overhead is the distribution of the raw deltas of w0's exits: w0 is
	// empty, so each is the profiler's overhead for that key alone.
	overhead Summary
	mean     float64
	// entry is the same for w0's entries that follow its exit: the
	// profiler's overhead plus d0's loop code (constant) and the call.
	entry     Summary
	entryMean float64
	// ab is the in-process interleaved measurement (interleaved.go), in
	// -Xint with method events; abBCI the same with BCI and the JIT;
	// the loaded ones with both cores kept busy by other processes.
	ab, abBCI             []abRow
	abLoaded, abBCILoaded []abRow
}

// abPairs is how many bare/profiled phase pairs AccuracyAB runs per
// driver: 20 per round asked for, up to 200. A pair's error swings by
// tens of percent on a shared machine (the per-event jitter moves with
// the other core's load); with 60 pairs the median of a 80 ns driver
// still moved by 50 points from one run to the next.
func abPairs(rounds int) int { return max(4, min(200, 20*rounds)) }

func (c *Calibration) Title() string { return "Calibration accuracy" }

func (c *Calibration) Run(ctx context.Context, s *Suite, tmp string) error {
	n := min(s.Opts.Rounds, 5)
	for i := 0; i < n; i++ {
		rows, err := trainer.Accuracy(ctx, trainer.AccuracyConfig{
			Java:      s.Opts.Java,
			Agent:     filepath.Join(s.Opts.Root, "build", "libjprof.so"),
			ClassPath: filepath.Join(s.Opts.Root, "build", "java"),
		})
		if err != nil {
			return err
		}
		c.rounds = append(c.rounds, rows)
	}
	agent, cp := filepath.Join(s.Opts.Root, "build", "libjprof.so"), filepath.Join(s.Opts.Root, "build", "java")
	ab, err := runInterleaved(ctx, s.Opts.Java, agent, cp, tmp, abPairs(s.Opts.Rounds), false)
	if err != nil {
		return err
	}
	c.ab = ab
	if c.abBCI, err = runInterleaved(ctx, s.Opts.Java, agent, cp, tmp, abPairs(s.Opts.Rounds), true); err != nil {
		return err
	}
	// The same with both cores loaded: the overhead removed must follow
	// the run's own conditions, not the trainer's quiet ones.
	stop, err := loadCores(ctx, 2)
	if err != nil {
		return err
	}
	c.abLoaded, err = runInterleaved(ctx, s.Opts.Java, agent, cp, tmp, abPairs(s.Opts.Rounds), false)
	if err == nil {
		c.abBCILoaded, err = runInterleaved(ctx, s.Opts.Java, agent, cp, tmp, abPairs(s.Opts.Rounds), true)
	}
	stop()
	if err != nil {
		return err
	}
	return c.measureOverhead(ctx, s, tmp)
}

// loadCores starts n busy processes (a shell loop each, in its own
// process group) and returns what stops them.
func loadCores(ctx context.Context, n int) (func(), error) {
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
	for range n {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("loading the cores: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// measureOverhead runs Accuracy once with RAWGEN and collects the raw
// deltas of the empty leaf's exits.
func (c *Calibration) measureOverhead(ctx context.Context, s *Suite, tmp string) error {
	dir := filepath.Join(tmp, "rawgen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"-Xint", "-agentpath:" + filepath.Join(s.Opts.Root, "build", "libjprof.so") +
		"=METHODEVENTS,METRICS=PTT_TIME,RAWGEN,START,NORTDRIVER,LOGPATH=" + dir,
		"-cp", filepath.Join(s.Opts.Root, "build", "java"), "Accuracy"}
	if out, err := exec.CommandContext(ctx, s.Opts.Java, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("accuracy with RAWGEN: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "log-gen_*"))
	if len(files) != 1 {
		return fmt.Errorf("accuracy with RAWGEN: %d log-gen files", len(files))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := reports.NewLogGenReader(f)
	if err != nil {
		return err
	}
	var d, e []float64
	var sum, esum float64
	afterExit := false
	for r.Next() {
		ev := r.Event()
		w0 := ev.Name == "i:Accuracy.w0()J"
		switch {
		case ev.Kind == reports.Exit && w0 && !ev.Unclean:
			d = append(d, float64(ev.Values[0]))
			sum += float64(ev.Values[0])
		case ev.Kind == reports.Entry && w0 && afterExit && !ev.Unclean:
			e = append(e, float64(ev.Values[0]))
			esum += float64(ev.Values[0])
		}
		afterExit = ev.Kind == reports.Exit && w0
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(d) == 0 {
		return fmt.Errorf("accuracy with RAWGEN: no exits of w0")
	}
	c.overhead, c.mean = Summarize(d), sum/float64(len(d))
	if len(e) > 0 {
		c.entry, c.entryMean = Summarize(e), esum/float64(len(e))
	}
	return nil
}

// accuracyStats summarise one driver over the rounds.
type accuracyStats struct {
	size            int
	known, raw, cal Summary
	rawErr, calErr  Summary // of the per-round relative errors
}

func (c *Calibration) stats() []accuracyStats {
	if len(c.rounds) == 0 {
		return nil
	}
	var out []accuracyStats
	for i := range c.rounds[0] {
		var known, raw, cal, rawErr, calErr []float64
		for _, rows := range c.rounds {
			r := rows[i]
			known = append(known, r.KnownNS)
			raw = append(raw, r.RawNS)
			cal = append(cal, r.CalNS)
			rawErr = append(rawErr, r.RawErr())
			calErr = append(calErr, r.CalErr())
		}
		out = append(out, accuracyStats{size: c.rounds[0][i].Size,
			known: Summarize(known), raw: Summarize(raw), cal: Summarize(cal),
			rawErr: Summarize(rawErr), calErr: Summarize(calErr)})
	}
	return out
}

func (c *Calibration) Markdown(w io.Writer, _ *Suite) error {
	st := c.stats()
	if len(st) == 0 {
		_, err := fmt.Fprintln(w, "No rounds ran.")
		return err
	}
	fmt.Fprintf(w, "`java/src/Accuracy.java`: driver `dK` calls leaf `wK` (a loop of K iterations) 2000 times. "+
		"*True* is the driver's thread CPU time per call without the agent, in `-Xint` (the mode method events force), "+
		"median of 9 trials. *Raw* and *calibrated* are the driver's cumulative time per call in the agent's log-rt "+
		"(BASE+DELTA, and BASE), RTARCF with PTT_TIME, the best PTT backend and its built-in calibration table. "+
		"Medians over %d rounds; errors are (measured − true) / true.\n\n", len(c.rounds))
	fmt.Fprintln(w, "| driver | true ns/call (min–max) | raw ns/call | raw error | calibrated ns/call | calibrated error (min–max) |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
	for _, s := range st {
		fmt.Fprintf(w, "| d%d | %.0f (%s) | %.0f | %+.0f%% | %.0f | %+.0f%% (%s%%) |\n",
			s.size, s.known.Median, s.known.Range("%.0f"), s.raw.Median, 100*s.rawErr.Median,
			s.cal.Median, 100*s.calErr.Median, s.calErr.Scale(100).Range("%+.0f"))
	}
	// The targets.
	small := st[0]
	big, within, ratio := calTargets(len(st), func(i int) (float64, Summary, Summary) { return st[i].known.Median, st[i].rawErr, st[i].calErr })
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | measured | met |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| calibrated within 15%% for methods of 200 ns or more | %d drivers of ≥ 200 ns: %s | %s |\n",
		big, errList(st), yesNo(within && big > 0))
	fmt.Fprintf(w, "| calibrated error ≥ 5× smaller than uncalibrated for the smallest (d%d) | raw %+.0f%%, calibrated %+.0f%%: %.1f× | %s |\n",
		small.size, 100*small.rawErr.Median, 100*small.calErr.Median, ratio, yesNo(ratio >= 5))
	if c.overhead.N > 0 {
		o := c.overhead
		fmt.Fprintf(w, "\n**The overhead above the minimum.** JProf's calibration removes each key's *minimum* overhead, "+
			"which assumes the overhead of a key is constant. It is not quite: "+
			"the raw deltas of the %d exits of the empty leaf `w0` (a RAWGEN run; each is pure overhead for its key) "+
			"have minimum %.0f ns, median %.0f, 75th percentile %.0f, maximum %.0f, mean %.0f ns. "+
			"The mean exceeds the minimum by %.0f ns; removing the minimum alone would leave that much per event in the methods: "+
			"negligible for a 1 µs method, most of the error of an 80 ns one. So the trainer also measures each key's typical "+
			"excess over its minimum (the median of its clean deltas less the minimum, the table's `excess` column), and "+
			"calibration removes it too.\n",
			o.N, o.Min, o.Median, o.Q3, o.Max, c.mean, c.mean-o.Min)
	}
	if c.entry.N > 0 {
		e := c.entry
		fmt.Fprintf(w, "\nThe other event of each d0 iteration, w0's entry after its previous exit (its delta holds d0's loop code and the call, "+
			"constant, plus the overhead): minimum %.0f ns, first quartile %.0f, median %.0f, mean %.0f: the minimum lies %.0f ns below "+
			"the first quartile, and the mean %.0f ns above it.\n", e.Min, e.Q1, e.Median, c.entryMean, e.Q1-e.Min, c.entryMean-e.Min)
	}
	c.abMarkdown(w)
	c.abBCIMarkdown(w)
	if len(c.abLoaded) > 0 && len(c.abBCILoaded) > 0 {
		fmt.Fprintf(w, "\n### Both cores loaded by another process\n\nThe two in-process references again, while two shell loops "+
			"(`while :; do :; done`) keep both cores busy: the JVM shares them with the load, its events meet more cache and "+
			"scheduler disturbance than the trainer's quiet runs did, and the overhead removed must follow.\n\nMethod events (`-Xint`):\n\n")
		abTable(w, c.abLoaded)
		fmt.Fprintf(w, "\nBCI (the JIT on):\n\n")
		abTable(w, c.abBCILoaded)
	}
	_, err := fmt.Fprintln(w, "\nThe driver's cumulative time is compared because calibration leaves the "+
		"call and return glue that runs without profiling (the environmental overhead) in the caller, "+
		"where the uninstrumented timing also has it. True costs are noisy on this shared 2-core machine "+
		"(see the min–max); both runs of a round are back to back.")
	return err
}

func errList(st []accuracyStats) string {
	s := ""
	for _, x := range st {
		if x.known.Median >= 200 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("d%d %+.0f%%", x.size, 100*x.calErr.Median)
		}
	}
	return s
}

// abMarkdown is the in-process reference's table.
func (c *Calibration) abMarkdown(w io.Writer) {
	if len(c.ab) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### In-process reference\n\n`java/src/AccuracyAB.java` runs, in one JVM in `-Xint`, %d pairs of phases per driver: "+
		"a bare phase (method events off) timed by the program with its thread CPU clock, running its driver as many times over as "+
		"the previous pair's profiled phase was slower (so that both halves last about as long), and a profiled phase switched on and off "+
		"through the agent's own rtdriver socket (`start`, then `end`, which writes that phase's log-rt), in alternating order. "+
		"Both halves of a pair are milliseconds apart in the same process and interpreter, so the machine's speed drift between JVM runs "+
		"cannot distort the reference; what is left is the drift within a pair (the bare min–max column). Errors are per pair, "+
		"(log-rt − bare) / bare, medians with their interquartile range; the *quietest* column compares the fastest phase of each kind. "+
		"*Probe* times the body of a leaf of the same loop from inside (`System.nanoTime` around the loop alone, median per phase): "+
		"profiled minus bare, less the two events of the `nanoTime` calls themselves (the K=0 probe), is how much slower the body runs "+
		"between method events.\n\n", c.ab[0].bare.N)
	abTable(w, c.ab)
	fmt.Fprintln(w, "\nWhy both halves of a pair last about as long: a burst of other work (another process on the host, the "+
		"other core polluting shared caches) lengthens a phase and never shortens one, and a phase that lasts longer meets more "+
		"bursts. When the bare phases ran their driver once (a fifth of a profiled phase for the small drivers), bursts pulled "+
		"the median of per-pair errors up under load (d16 +18% and +20% in two loaded runs, d0 4 to 5× smaller than raw, while "+
		"the quietest phases met the targets); with halves of equal length both estimates meet them. The *quietest* column "+
		"compares the fastest phase of each kind, the one no burst reached (as the workload section counts each run's fastest "+
		"repetition).")
	c.residualMarkdown(w)
}

// calTargets evaluates the targets over n drivers, the smallest
// first, each given as (true cost, raw error, calibrated error): how many
// drivers cost 200 ns or more and whether all of them are calibrated
// within 15%; how many times smaller than raw the smallest one's
// calibrated error is.
func calTargets(n int, driver func(int) (cost float64, rawErr, calErr Summary)) (big int, within bool, ratio float64) {
	within = true
	for i := 0; i < n; i++ {
		if cost, _, calErr := driver(i); cost >= 200 {
			big++
			within = within && math.Abs(calErr.Median) <= 0.15
		}
	}
	_, rawErr, calErr := driver(0)
	return big, within, math.Abs(rawErr.Median) / math.Max(math.Abs(calErr.Median), 1e-9)
}

// abTable is an in-process reference's table and its targets.
func abTable(w io.Writer, ab []abRow) {
	fmt.Fprintln(w, "| driver | bare ns/call (min–max) | raw error | calibrated error (IQR) | calibrated error, quietest phases | body slower between events |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|")
	probe0 := ab[0].probeProf.Median - ab[0].probeBare.Median
	for _, r := range ab {
		body := r.probeProf.Median - r.probeBare.Median - probe0
		fmt.Fprintf(w, "| d%d | %.0f (%s) | %+.0f%% | %+.0f%% (%s%%) | %+.0f%% | %+.0f ns |\n", r.size, r.bare.Median, r.bare.Range("%.0f"),
			100*r.rawErr.Median, 100*r.calErr.Median, r.calErr.Scale(100).IQR("%+.0f"), 100*(r.cal.Min/r.bare.Min-1), body)
	}
	// The quietest phases' errors: the fastest phase of each kind.
	quiet := func(x, bare Summary) Summary { return Summary{N: 1, Median: x.Min/bare.Min - 1} }
	for _, est := range []struct {
		what   string
		driver func(int) (float64, Summary, Summary)
	}{
		{"by the per-pair medians", func(i int) (float64, Summary, Summary) { return ab[i].bare.Median, ab[i].rawErr, ab[i].calErr }},
		{"by the quietest phases", func(i int) (float64, Summary, Summary) {
			return ab[i].bare.Median, quiet(ab[i].raw, ab[i].bare), quiet(ab[i].cal, ab[i].bare)
		}},
	} {
		big, within, ratio := calTargets(len(ab), est.driver)
		_, rawErr, calErr := est.driver(0)
		first := fmt.Sprintf("calibrated within 15%% for the %d drivers of ≥ 200 ns: %s", big, yesNo(within && big > 0))
		if big == 0 {
			first = "calibrated within 15% for methods of 200 ns or more: no driver costs that much here"
		}
		fmt.Fprintf(w, "\nTargets against this reference, %s: %s; d%d raw %+.0f%%, calibrated %+.0f%%: %.1f× smaller (target 5×): %s.\n",
			est.what, first, ab[0].size, 100*rawErr.Median, 100*calErr.Median, ratio, yesNo(ratio >= 5))
	}
}

// abBCIMarkdown is the in-process reference of the BCI source.
func (c *Calibration) abBCIMarkdown(w io.Writer) {
	if len(c.abBCI) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### BCI (the JIT on): in-process reference\n\nThe same %d pairs per driver with the `BCI` source and the JIT, "+
		"after 20 warm-up rounds under collection (the classes instrumented, the drivers and leaves compiled). A bare phase here is "+
		"collection off: the injected calls still run and return at once (two JNI calls per call of the leaf, besides the driver's own), "+
		"so *bare* is the instrumented code's cost without the engine's work, slightly above the uninstrumented code's; what calibration "+
		"is to remove is the engine's work and its reads. The leaves are compiled as small loops, so the drivers cost far less than in "+
		"`-Xint`; two larger ones, d1024 and d4096, run here only, so that some drivers cost 200 ns or more, the size the target is for.\n\n", c.abBCI[0].bare.N)
	abTable(w, c.abBCI)
}

// residualMarkdown says where the residual comes from, with this run's
// figures: the reference, the keys' minima, the body between events.
func (c *Calibration) residualMarkdown(w io.Writer) {
	if len(c.ab) == 0 || c.overhead.N == 0 || c.entry.N == 0 {
		return
	}
	small := c.ab[0]
	perCall := small.cal.Median - small.bare.Median
	excess := (c.mean - c.overhead.Min) + (c.entryMean - c.entry.Min)
	body, bare := maxBody(c.ab)
	fmt.Fprintf(w, "\n**Where the residual comes from.** *The reference:* a true cost taken in another JVM run moves with the machine's speed between runs "+
		"(the first table's min–max); the in-process pairs take it milliseconds from the measurement, and their errors' interquartile "+
		"ranges are what is left of the drift. *The keys:* d%d's calibrated cost is %.0f ns/call "+
		"above bare; its two events per call have raw deltas whose means lie %.0f ns (entry after exit) and %.0f ns (exit) above "+
		"their minima, %.0f ns together: calibration removes a key's minimum, and the entry key's minimum lies %.0f ns below its first "+
		"quartile: the per-event overhead jitters by tens of ns from one event to the next (the fast ones are spread over the "+
		"whole run, not a warm-up), and the minimum is the low tail of that jitter, not the typical overhead. Under load the per-event path (the JVM's JVMTI "+
		"transition and the agent's reads) slows while the minimum keeps its quiet-moment value, so the residual grows with load. "+
		"*The body between events:* the probe shows the loop body itself running up to %.0f ns per call slower with events on "+
		"(%.0f%% of that driver's bare cost; caches and predictors disturbed by the event path): no key's minimum can hold that, "+
		"it stays in the method. *What calibration removes:* each key's minimum and the trainer's typical excess over it "+
		"(about 50 ns for an interpreter entry, 10–20 for an exit), which is what brought the smaller drivers from several "+
		"times their cost to within tens of percent; what is left is this run's jitter beyond the trainer's (it grows with "+
		"the load), its spread from pair to pair (the interquartile ranges), and the body's slow-down.\n",
		small.size, perCall, c.entryMean-c.entry.Min, c.mean-c.overhead.Min, excess, c.entry.Q1-c.entry.Min, body, 100*body/bare)
}

// maxBody is the largest body slow-down the probe measured, and that
// driver's bare cost per call.
func maxBody(ab []abRow) (body, bare float64) {
	p0 := ab[0].probeProf.Median - ab[0].probeBare.Median
	for _, r := range ab {
		if b := r.probeProf.Median - r.probeBare.Median - p0; b > body {
			body, bare = b, r.bare.Median
		}
	}
	return body, math.Max(bare, 1)
}
