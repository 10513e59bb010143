package bench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/reports"
)

// SampleAccuracy compares sampled self-time shares with the exact tree's
// and with JFR's on java/src/SelfMix.java, ten methods whose self times
// are in the ratio 1:2:…:10 by construction. The exact method-event
// source forces the interpreter, and an execution mode can change a
// program's relative costs (hardly SelfMix's: its ten methods run the
// same loop), so each sampled profile is compared with an exact one of
// the same mode: SAMPLE under -Xint with method events, SAMPLE with the
// JIT with BCI (exact, and keeping the JIT; SelfMix makes ten calls a
// round, so BCI's probes do not change its costs). JFR's execution
// samples, at SAMPLE's 1 ms, run on the JIT like SAMPLE. The exact
// trees' uncalibrated shares are shown beside the calibrated ones:
// calibration takes per-key minima, and a minimum taken over leaves that
// always do work holds that work.
type SampleAccuracy struct {
	Profiles           []*AccProfile
	Rounds, XintRounds int // SelfMix rounds with the JIT and under -Xint
}

// AccProfile is one run's self time per method.
type AccProfile struct {
	Config
	JFR bool
	// Self is the self time (ns; JFR: samples) per method, summed over
	// contexts and threads; Total sums all of the run's, pseudo-frames
	// included: shares are of Total.
	Self  map[string]float64
	Total float64
	// Raw and RawTotal are an exact tree's self times before
	// calibration (BASE + DELTA); Calibration is its header's note on
	// where its minima came from.
	Raw         map[string]float64
	RawTotal    float64
	Calls       map[string]float64 // an exact tree's calls per method
	Calibration string
	// Samples the shares rest on (0 for an exact tree).
	Samples int
	Skipped string // why the run has no profile
}

// Keys of the accuracy profiles.
const (
	KeyAccExactXint  = "acc-exact-xint"
	KeyAccSampleXint = "acc-sample-xint"
	KeyAccExactBCI   = "acc-exact-bci"
	KeyAccSampleJIT  = "acc-sample-jit"
	KeyAccJFR        = "acc-jfr"
)

// accTop is how many methods the comparison covers.
const accTop = 10

func (p *SampleAccuracy) Title() string { return "Sampling accuracy: SelfMix" }

func (p *SampleAccuracy) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	// About 6 s of CPU time in each mode on this machine's cores: some
	// 6000 samples at 1 ms, a standard error of 0.5 points on the
	// largest share. The smoke test only checks that it runs.
	p.Rounds, p.XintRounds = 3000, 120
	if o.JavacRounds < 2 {
		p.Rounds, p.XintRounds = 20, 2
	}
	xint := []string{"-Xint"}
	p.Profiles = []*AccProfile{
		{Config: Config{Key: KeyAccExactXint, Name: "exact: method events (interpreted), calibrated", Agent: LibJProf, Options: methodEvents + rtarcf, JVMArgs: xint}},
		{Config: Config{Key: KeyAccSampleXint, Name: "SAMPLE, -Xint", Agent: LibJProf, Options: "SAMPLE", JVMArgs: xint}},
		{Config: Config{Key: KeyAccExactBCI, Name: "exact: BCI (JIT), calibrated", Agent: LibJProf, Options: "BCI," + rtarcf}},
		{Config: Config{Key: KeyAccSampleJIT, Name: "SAMPLE (JIT)", Agent: LibJProf, Options: "SAMPLE"}},
		{Config: Config{Key: KeyAccJFR, Name: "JFR jdk.ExecutionSample, 1 ms (JIT)"}, JFR: true},
	}
	cp := filepath.Join(o.Root, "build", "java")
	for _, pr := range p.Profiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		rounds := p.Rounds
		if slices.Contains(pr.JVMArgs, "-Xint") || pr.Key == KeyAccExactXint {
			rounds = p.XintRounds
		}
		dir, err := os.MkdirTemp(tmp, pr.Key+"-")
		if err != nil {
			return err
		}
		main := []string{"-cp", cp, "SelfMix", strconv.Itoa(rounds)}
		if pr.JFR {
			err = p.runJFR(ctx, s, pr, dir, main)
		} else {
			err = p.runLibJProf(ctx, s, pr, dir, main)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", pr.Name, err)
		}
		os.RemoveAll(dir)
	}
	return nil
}

func (p *SampleAccuracy) runLibJProf(ctx context.Context, s *Suite, pr *AccProfile, dir string, main []string) error {
	res, err := runJVM(ctx, s.Opts.Java, pr.run(&s.Opts, dir, main...), s.Opts.Timeout)
	if err != nil {
		return err
	}
	f, err := os.Open(res.file("rt.1"))
	if err != nil {
		return err
	}
	defer f.Close()
	prof, err := reports.ParseLogRT(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("log-rt: %w", err)
	}
	if len(prof.Metrics) == 0 {
		return errors.New("log-rt has no time metric")
	}
	pr.Self, pr.Raw, pr.Calls = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, n := range prof.Notes {
		if strings.HasPrefix(n, "Calibration "+prof.Metrics[0].Name+":") {
			pr.Calibration = n
		}
	}
	sampled := strings.HasPrefix(prof.Metrics[0].Name, "SAMPLED")
	for _, th := range prof.Threads {
		for _, top := range th.Children {
			top.Walk(func(n *reports.Node, _ int) {
				if len(n.Base) > 0 {
					m := accMethod(n.Name)
					pr.Self[m] += float64(n.Base[0])
					pr.Total += float64(n.Base[0])
					raw := float64(n.Base[0])
					if len(n.Delta) > 0 {
						raw += float64(n.Delta[0])
					}
					pr.Raw[m] += raw
					pr.Calls[m] += float64(n.Calls)
					pr.RawTotal += raw
				}
				if sampled {
					pr.Samples += int(n.Calls - n.Callees())
				}
			})
		}
	}
	if pr.Total == 0 {
		return errors.New("log-rt holds no time")
	}
	return nil
}

// accJFC enables JFR's Java execution sampler alone, at SAMPLE's
// default period (JFR's own "profile" settings sample every 10 ms:
// too few samples to rank methods 1.8 points apart).
const accJFC = `<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="ExecutionSample" description="Java execution samples only">
  <event name="jdk.ExecutionSample">
    <setting name="enabled">true</setting>
    <setting name="period">1 ms</setting>
  </event>
</configuration>
`

func (p *SampleAccuracy) runJFR(ctx context.Context, s *Suite, pr *AccProfile, dir string, main []string) error {
	jfr, err := jfrTool(s.Opts.Java)
	if err != nil {
		pr.Skipped = err.Error()
		return nil
	}
	jfc, rec := filepath.Join(dir, "sample.jfc"), filepath.Join(dir, "rec.jfr")
	if err := os.WriteFile(jfc, []byte(accJFC), 0o644); err != nil {
		return err
	}
	r := jvmRun{JVMArgs: []string{"-Xlog:jfr+startup=warning", "-XX:StartFlightRecording:filename=" + rec + ",settings=" + jfc}, Main: main, Dir: dir}
	if _, err := runJVM(ctx, s.Opts.Java, r, s.Opts.Timeout); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, jfr, "print", "--events", "jdk.ExecutionSample", "--stack-depth", "1", rec)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	pr.Self, err = jfrTopFrames(out)
	if werr := cmd.Wait(); werr != nil {
		return fmt.Errorf("jfr print: %v: %s", werr, tail(stderr.String(), 3))
	}
	if err != nil {
		return err
	}
	for _, n := range pr.Self {
		pr.Total += n
	}
	pr.Samples = int(pr.Total)
	if pr.Total == 0 {
		return errors.New("the recording holds no execution samples")
	}
	return nil
}

// jfrTool is the jfr command of the JDK whose java is java.
func jfrTool(java string) (string, error) {
	path, err := exec.LookPath(java)
	if err != nil {
		return "", err
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return "", err
	}
	jfr := filepath.Join(filepath.Dir(path), "jfr")
	if _, err := os.Stat(jfr); err != nil {
		return "", fmt.Errorf("no jfr beside %s", path)
	}
	return jfr, nil
}

// jfrTopFrames counts the top frames of `jfr print`'s execution samples
// per method: the first line of each stackTrace, "Class.method(args)
// line: N".
func jfrTopFrames(r io.Reader) (map[string]float64, error) {
	counts := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	top := false
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "stackTrace = ["):
			top = true
		case top:
			top = false
			if l == "]" || l == "..." {
				continue
			}
			name, _, _ := strings.Cut(l, "(")
			counts[name]++
		}
	}
	return counts, sc.Err()
}

// accMethod is a log-rt name as Class.method, the form JFR prints
// (overloads merge): no type prefix, no signature, dots for slashes.
// Pseudo-frames keep their names.
func accMethod(name string) string {
	if strings.HasPrefix(name, "<") {
		return name
	}
	if len(name) > 2 && name[1] == ':' {
		name = name[2:]
	}
	name, _, _ = strings.Cut(name, "(")
	return strings.ReplaceAll(name, "/", ".")
}

// Profile returns the profile with key, or nil.
func (p *SampleAccuracy) Profile(key string) *AccProfile { return keyed(p.Profiles, key) }

func (pr *AccProfile) ok() bool { return pr != nil && pr.Skipped == "" && pr.Total > 0 }

// Share is a method's share of the profile's self time, in percent.
func (pr *AccProfile) Share(m string) float64 { return 100 * pr.Self[m] / pr.Total }

// RawShare is Share before calibration.
func (pr *AccProfile) RawShare(m string) float64 {
	if pr.RawTotal == 0 {
		return math.NaN()
	}
	return 100 * pr.Raw[m] / pr.RawTotal
}

// Ranked is the profile's methods by decreasing self time.
func (pr *AccProfile) Ranked() []string {
	ms := make([]string, 0, len(pr.Self))
	for m := range pr.Self {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b string) int {
		if c := cmp.Compare(pr.Self[b], pr.Self[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return ms
}

// Top is the profile's accTop first methods.
func (pr *AccProfile) Top() []string {
	r := pr.Ranked()
	return r[:min(len(r), accTop)]
}

// rank is m's 1-based rank in pr, or 0 if pr has no time for it.
func (pr *AccProfile) rank(m string) int {
	if pr.Self[m] == 0 {
		return 0
	}
	return slices.Index(pr.Ranked(), m) + 1
}

// MaxDiff is the largest |sampled − exact| share, in points, over the
// exact profile's top methods and the sampled one's.
func (p *SampleAccuracy) MaxDiff(exact, sampled string) (float64, string, bool) {
	return p.maxDiff(exact, sampled, (*AccProfile).Share)
}

// maxRawDiff is MaxDiff against the exact profile's uncalibrated shares.
func (p *SampleAccuracy) maxRawDiff(exact, sampled string) (float64, string, bool) {
	if e := p.Profile(exact); e.ok() && e.RawTotal == 0 {
		return 0, "", false
	}
	return p.maxDiff(exact, sampled, (*AccProfile).RawShare)
}

// maxDiff is the largest |sampled share − exactShare(exact)| over both
// profiles' top methods.
func (p *SampleAccuracy) maxDiff(exact, sampled string, exactShare func(*AccProfile, string) float64) (float64, string, bool) {
	e, sm := p.Profile(exact), p.Profile(sampled)
	if !e.ok() || !sm.ok() {
		return 0, "", false
	}
	var worst float64
	var at string
	for _, m := range accRows(e, sm) {
		if d := math.Abs(sm.Share(m) - exactShare(e, m)); d >= worst {
			worst, at = d, m
		}
	}
	return worst, at, true
}

// TopAgree says whether two profiles have the same top methods (as a
// set) and in the same order.
func (p *SampleAccuracy) TopAgree(a, b string) (sameSet, sameOrder, ok bool) {
	pa, pb := p.Profile(a), p.Profile(b)
	if !pa.ok() || !pb.ok() {
		return false, false, false
	}
	ta, tb := pa.Top(), pb.Top()
	sa, sb := slices.Clone(ta), slices.Clone(tb)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(sa, sb), slices.Equal(ta, tb), true
}

// accRows are the first profile's top methods, then any of the others'
// top methods it does not have.
func accRows(prs ...*AccProfile) []string {
	var rows []string
	for _, pr := range prs {
		if !pr.ok() {
			continue
		}
		for _, m := range pr.Top() {
			if !slices.Contains(rows, m) {
				rows = append(rows, m)
			}
		}
	}
	return rows
}

func (p *SampleAccuracy) Markdown(out io.Writer, s *Suite) error {
	if len(p.Profiles) == 0 {
		_, err := fmt.Fprintln(out, "Not run.")
		return err
	}
	fmt.Fprintf(out, "java/src/SelfMix.java: ten methods m1…m10, mK running K units of the same loop in its own body, so that "+
		"of the ten's time mK has K/55 by construction (`SelfMix %d` with the JIT, `SelfMix %d` interpreted: each about the same CPU time). "+
		"A share is a method's self time (summed over calling contexts and threads) over all the run's self time, "+
		"pseudo-frames and JVM start-up included. One run per configuration; SAMPLE at its default, 1 ms of CPU time per thread.\n\n",
		p.Rounds, p.XintRounds)
	fmt.Fprintf(out, "| run | agent, options | JVM | samples | self time |\n|---|---|---|--:|--:|\n")
	for _, pr := range p.Profiles {
		label, jvm := agentLabel(pr.Config), "JIT"
		if pr.JFR {
			label = "`-XX:StartFlightRecording`, jdk.ExecutionSample every 1 ms"
		}
		if slices.Contains(pr.JVMArgs, "-Xint") || pr.Key == KeyAccExactXint {
			jvm = "interpreted"
		}
		switch {
		case pr.Skipped != "":
			fmt.Fprintf(out, "| %s | %s | %s | skipped: %s | |\n", pr.Name, label, jvm, oneLine(pr.Skipped))
		case !pr.ok():
			fmt.Fprintf(out, "| %s | %s | %s | not run | |\n", pr.Name, label, jvm)
		case pr.JFR:
			fmt.Fprintf(out, "| %s | %s | %s | %d | – |\n", pr.Name, label, jvm, pr.Samples)
		default:
			smp := "exact"
			if pr.Samples > 0 {
				smp = strconv.Itoa(pr.Samples)
			}
			fmt.Fprintf(out, "| %s | %s | %s | %s | %.2f s |\n", pr.Name, label, jvm, smp, pr.Total/1e9)
		}
	}

	fmt.Fprintf(out, "\n### Interpreted: SAMPLE -Xint against method events\n\n")
	p.table(out, p.Profile(KeyAccExactXint), p.Profile(KeyAccSampleXint), nil)
	fmt.Fprintf(out, "\n### With the JIT: SAMPLE against BCI, and JFR\n\n")
	p.table(out, p.Profile(KeyAccExactBCI), p.Profile(KeyAccSampleJIT), p.Profile(KeyAccJFR))

	fmt.Fprintf(out, "\nShares in %%, Δ in percentage points (sampled − exact); rank 1 is the largest self time in that run, "+
		"over all its methods. A sampled share p from n samples has a standard error of about √(p(1−p)/n): "+
		"%s for the largest share here. ", p.stdErr())
	fmt.Fprintf(out, "Each sampled run is compared with an exact run in the same execution mode (a mode can change a program's "+
		"relative costs; SelfMix's ten run the same loop, so theirs stay near K/55 in both): BCI (exact, the JIT kept) for the JIT runs, "+
		"method events (which force the interpreter) for the -Xint ones. Calibration subtracts per-key minima of the raw time "+
		"between events; when every call of a key's leaves does work, as here, the minimum holds the lightest leaf's work "+
		"and calibration removes it from every call: the uncalibrated columns show the shares without that.\n")
	return nil
}

// stdErr states the standard error of the sampled runs' largest share.
func (p *SampleAccuracy) stdErr() string {
	var parts []string
	for _, k := range []string{KeyAccSampleXint, KeyAccSampleJIT, KeyAccJFR} {
		pr := p.Profile(k)
		if !pr.ok() || pr.Samples == 0 {
			continue
		}
		top := pr.Ranked()[0]
		q := pr.Self[top] / pr.Total
		parts = append(parts, fmt.Sprintf("%.1f pp (%s)", 100*math.Sqrt(q*(1-q)/float64(pr.Samples)), pr.Name))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// table writes exact and sampled (and JFR) side by side over their top
// methods.
func (p *SampleAccuracy) table(out io.Writer, exact, sampled, jfr *AccProfile) {
	if !exact.ok() || !sampled.ok() {
		fmt.Fprintln(out, "Not measured.")
		return
	}
	head := "| method | exact share | sampled share | Δ pp | exact uncalibrated | Δ pp vs uncalibrated |"
	rule := "|---|--:|--:|--:|--:|--:|"
	if jfr.ok() {
		head += " JFR share |"
		rule += "--:|"
	}
	head += " rank exact | rank sampled |"
	rule += "--:|--:|"
	if jfr.ok() {
		head += " rank JFR |"
		rule += "--:|"
	}
	fmt.Fprintf(out, "%s\n%s\n", head, rule)
	rank := func(pr *AccProfile, m string) string {
		if r := pr.rank(m); r > 0 {
			return strconv.Itoa(r)
		}
		return "–"
	}
	for _, m := range accRows(exact, sampled, jfr) {
		fmt.Fprintf(out, "| %s | %.2f | %.2f | %+.2f | %.2f | %+.2f |", m, exact.Share(m), sampled.Share(m), sampled.Share(m)-exact.Share(m),
			exact.RawShare(m), sampled.Share(m)-exact.RawShare(m))
		if jfr.ok() {
			fmt.Fprintf(out, " %.2f |", jfr.Share(m))
		}
		fmt.Fprintf(out, " %s | %s |", rank(exact, m), rank(sampled, m))
		if jfr.ok() {
			fmt.Fprintf(out, " %s |", rank(jfr, m))
		}
		fmt.Fprintln(out)
	}
	if exact.Calibration != "" {
		fmt.Fprintf(out, "\nThe exact run's %s.", strings.TrimSuffix(lowerFirst(exact.Calibration), "."))
	}
	fmt.Fprintf(out, " Calibration removed, per call, %s.\n", removedPerCall(exact))
}

// removedPerCall states what calibration took from each call of the
// SelfMix methods beside what the lightest of them costs uncalibrated:
// a per-key minimum taken over leaves that always do work holds that
// work, not only the profiler's overhead.
func removedPerCall(pr *AccProfile) string {
	var parts []string
	for k := 1; k <= accTop; k++ {
		m := fmt.Sprintf("SelfMix.m%d", k)
		if c := pr.Calls[m]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", strings.TrimPrefix(m, "SelfMix."), usPerCall((pr.Raw[m]-pr.Self[m])/c)))
		}
	}
	if len(parts) == 0 {
		return "nothing measurable"
	}
	s := strings.Join(parts, ", ")
	if c := pr.Calls["SelfMix.m1"]; c > 0 {
		s += fmt.Sprintf(" (m1 itself takes %s a call uncalibrated)", usPerCall(pr.Raw["SelfMix.m1"]/c))
	}
	return s
}

func usPerCall(ns float64) string {
	if ns >= 1000 {
		return fmt.Sprintf("%.1f µs", ns/1000)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// accuracyTargets are issue 13's accuracy targets against p.
func accuracyTargets(p *SampleAccuracy) []Target {
	tg := Target{What: "SAMPLE (1 ms): each top-10 method's self-time share within 2 pp of the exact tree's calibrated share (SelfMix)",
		Measured: "not measured", Met: "n/a"}
	if p != nil {
		var parts []string
		met := true
		for _, c := range []struct{ exact, sampled, what string }{
			{KeyAccExactXint, KeyAccSampleXint, "interpreted, vs method events"},
			{KeyAccExactBCI, KeyAccSampleJIT, "JIT, vs BCI"},
		} {
			if d, at, ok := p.MaxDiff(c.exact, c.sampled); ok {
				part := fmt.Sprintf("%s: largest difference %.2f pp (%s)", c.what, d, at)
				if r, _, ok := p.maxRawDiff(c.exact, c.sampled); ok && c.exact == KeyAccExactBCI {
					part += fmt.Sprintf(", %.2f pp against its uncalibrated shares", r)
				}
				parts = append(parts, part)
				met = met && d <= 2
			}
		}
		if len(parts) > 0 {
			tg.Measured, tg.Met = strings.Join(parts, "; "), yesNo(met)
		}
	}
	jt := Target{What: "SAMPLE and JFR execution samples: the same top-10 methods (SelfMix, JIT)", Measured: "not measured", Met: "n/a"}
	if p != nil {
		if pr := p.Profile(KeyAccJFR); pr != nil && pr.Skipped != "" {
			jt.Measured = "skipped: " + oneLine(pr.Skipped)
		} else if set, order, ok := p.TopAgree(KeyAccSampleJIT, KeyAccJFR); ok {
			switch {
			case order:
				jt.Measured = "same ten methods in the same order"
			case set:
				jt.Measured = "same ten methods; the order differs (see the section)"
			default:
				jt.Measured = "different methods (see the section)"
			}
			jt.Met = yesNo(set)
		}
	}
	return []Target{tg, jt}
}
