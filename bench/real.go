package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Real runs two real programs made of many small methods, from Debian
// packages `make deps` installs: an embedded H2 database under a JDBC
// workload of the project's own (java/real/H2Work.java, libh2-java) and
// a collections-heavy Groovy script (java/real/collections.groovy,
// groovy), each without an agent and under the agent's modes, in
// interleaved rounds; ratios are to the no-agent run of the same round.
type Real struct {
	Programs []*RealProgram
}

// RealProgram is one program's configurations and runs.
type RealProgram struct {
	Name    string   // H2, groovy
	Command string   // for the report
	Desc    string   // what it does
	Main    []string // JVM arguments after the agent: class path, main class, arguments
	Rows    []*RealRow
	Skipped string // the program is not installed
}

// RealRow is one configuration's runs of a program.
type RealRow struct {
	Config
	// JDK25 runs it on JDK 25 (jdk25Home), its ratio to the no-agent
	// run on JDK 25; else on the suite's Java.
	JDK25   bool
	Wall    []float64 // seconds, by round
	Events  []int64   // 2 × the calls in log-rt (libjprof)
	Skipped string
}

// Keys of the real-program configurations.
const (
	KeyRealNone    = "none"
	KeyRealDefault = "default"
	KeyRealTree    = "bci-calltree"
	KeyRealAll     = "bci-allmethods"
	KeyRealCache   = "bci-cache"
	KeyRealSample  = "sample"
	// On JDK 25: the default mode's probes as JNI calls and as FFM
	// critical downcalls (FFMPROBES), beside JDK 25's own no-agent run.
	KeyRealNone25 = "none-25"
	KeyRealJNI25  = "default-25"
	KeyRealFFM25  = "ffm-25"
)

// realConfigs25 are the configurations each real program also runs
// under on JDK 25, where the probes can be FFM downcalls.
func realConfigs25() []Config {
	return []Config{
		{Key: KeyRealNone25, Name: "JDK 25: no agent", Agent: NoAgent},
		{Key: KeyRealJNI25, Name: "JDK 25: libjprof default (JNI probes)", Agent: LibJProf, Options: rtarcf},
		{Key: KeyRealFFM25, Name: "JDK 25: libjprof default, FFMPROBES (FFM critical downcalls)", Agent: LibJProf, Options: "FFMPROBES," + rtarcf},
	}
}

// RealConfigs are the configurations each real program runs under.
func RealConfigs() []Config {
	return []Config{
		{Key: KeyRealNone, Name: "no agent", Agent: NoAgent},
		{Key: KeyRealDefault, Name: "libjprof default (BCI RTARCF, trivial methods left out)", Agent: LibJProf, Options: rtarcf},
		{Key: KeyRealCache, Name: "libjprof default, BCICACHE filled by an earlier run", Agent: LibJProf, Options: rtarcf, BCICache: true},
		{Key: KeyRealTree, Name: "libjprof BCI CALLTREE", Agent: LibJProf, Options: "BCI,CALLTREE"},
		{Key: KeyRealAll, Name: "libjprof BCI RTARCF ALLMETHODS (every method, as before)", Agent: LibJProf, Options: "BCI,ALLMETHODS," + rtarcf},
		{Key: KeyRealSample, Name: "libjprof SAMPLE (1 ms)", Agent: LibJProf, Options: "SAMPLE"},
	}
}

func (r *Real) Title() string { return "Real programs: H2 and groovy" }

func (r *Real) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	classes := filepath.Join(o.Root, "build", "real")
	h2, groovy := []string{"20000", "3"}, []string{"40000", "3"}
	if o.RealSmall {
		h2, groovy = []string{"1000", "1"}, []string{"1000", "1"}
	}
	r.Programs = []*RealProgram{
		{Name: "H2", Command: "H2Work " + strings.Join(h2, " "), Desc: "embedded H2 2.1, JDBC inserts, indexed selects, a join, a grouping",
			Main: append([]string{"-cp", classes + ":/usr/share/java/h2.jar", "H2Work"}, h2...)},
		{Name: "groovy", Command: "groovy collections.groovy " + strings.Join(groovy, " "), Desc: "Groovy 2.4: closures over lists and maps, grouping, sorting",
			Main: append([]string{"-cp", "/usr/share/java/groovy-all.jar", "groovy.ui.GroovyMain",
				filepath.Join(o.Root, "java", "real", "collections.groovy")}, groovy...)},
	}
	for _, p := range r.Programs {
		for _, need := range []string{"/usr/share/java/h2.jar", "/usr/share/java/groovy-all.jar", filepath.Join(classes, "H2Work.class")} {
			if _, err := os.Stat(need); err != nil {
				p.Skipped = fmt.Sprintf("%s missing (make deps installs libh2-java and groovy; make all builds build/real)", need)
			}
		}
		for _, c := range RealConfigs() {
			p.Rows = append(p.Rows, &RealRow{Config: c})
		}
		_, err := os.Stat(filepath.Join(jdk25Home, "bin", "java"))
		for _, c := range realConfigs25() {
			row := &RealRow{Config: c, JDK25: true}
			if err != nil {
				row.Skipped = "no JDK 25 at " + jdk25Home
			}
			p.Rows = append(p.Rows, row)
		}
	}
	var errs []error
	for _, p := range r.Programs {
		for _, row := range p.Rows {
			if p.Skipped == "" && row.Skipped == "" && !row.JDK25 {
				if err := warmBCICache(ctx, o, o.Java, tmp, row.Config, p.Main...); err != nil {
					row.Skipped = err.Error()
					errs = append(errs, fmt.Errorf("%s %s: %w", p.Name, row.Name, err))
				}
			}
		}
	}
	for round := range max(o.RealRounds, 0) {
		for _, p := range r.Programs {
			if p.Skipped != "" {
				continue
			}
			for _, row := range p.Rows {
				if err := ctx.Err(); err != nil {
					return err
				}
				if row.Skipped != "" {
					continue
				}
				wall, events, err := r.runOne(ctx, s, tmp, p, row)
				if err != nil {
					row.Skipped = err.Error()
					errs = append(errs, fmt.Errorf("%s %s: %w", p.Name, row.Name, err))
					continue
				}
				row.Wall = append(row.Wall, wall)
				row.Events = append(row.Events, events)
				o.Logf("  real %s round %d %s: %.2fs", p.Name, round, row.Key, wall)
			}
		}
	}
	return errors.Join(errs...)
}

func (r *Real) runOne(ctx context.Context, s *Suite, tmp string, p *RealProgram, row *RealRow) (float64, int64, error) {
	dir, err := os.MkdirTemp(tmp, p.Name+"-"+row.Key+"-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	java := s.Opts.Java
	if row.JDK25 {
		java = filepath.Join(jdk25Home, "bin", "java")
	}
	res, err := runJVM(ctx, java, row.run(&s.Opts, dir, p.Main...), s.Opts.Timeout)
	if err != nil {
		return 0, 0, err
	}
	if !strings.Contains(res.Stdout, ": ") {
		return 0, 0, fmt.Errorf("no checksum line in its output: %q", tail(res.Stdout, 2))
	}
	var events int64
	if row.Agent == LibJProf {
		f, err := os.Open(res.file("rt.1"))
		if err != nil {
			return 0, 0, err
		}
		defer f.Close()
		calls, _, err := countLogRT(f)
		if err != nil {
			return 0, 0, err
		}
		events = 2 * calls
	}
	return res.Wall.Seconds(), events, nil
}

// Ratio is the median over rounds of a configuration's wall time over
// the no-agent run's of the same round on the same JDK.
func (p *RealProgram) Ratio(key string) (Summary, bool) {
	var row *RealRow
	for _, r := range p.Rows {
		if r.Key == key {
			row = r
		}
	}
	if row == nil {
		return Summary{}, false
	}
	base := KeyRealNone
	if row.JDK25 {
		base = KeyRealNone25
	}
	var none *RealRow
	for _, r := range p.Rows {
		if r.Key == base {
			none = r
		}
	}
	if none == nil || row == nil || row.Skipped != "" || none.Skipped != "" {
		return Summary{}, false
	}
	var xs []float64
	for i := range min(len(none.Wall), len(row.Wall)) {
		xs = append(xs, row.Wall[i]/none.Wall[i])
	}
	if len(xs) == 0 {
		return Summary{}, false
	}
	return Summarize(xs), true
}

func (r *Real) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "Two programs nobody here tuned, made of many small methods (accessors, short leaves the JIT inlines), "+
		"from Debian packages `make deps` installs. Each configuration runs once per round, the rounds interleaved "+
		"(%d rounds); the ratio is to the no-agent run of the same round (median, and range over rounds). Events: "+
		"2 × the calls in log-rt, median over rounds. The JDK 25 rows compare the probes as JNI calls (the default) "+
		"and as FFM critical downcalls (`FFMPROBES`), each against JDK 25's own no-agent run.\n\n", s.Opts.RealRounds)
	for _, p := range r.Programs {
		fmt.Fprintf(out, "**%s**: `%s` (%s).\n\n", p.Name, p.Command, p.Desc)
		if p.Skipped != "" {
			fmt.Fprintf(out, "Not run: %s\n\n", p.Skipped)
			continue
		}
		fmt.Fprintf(out, "| configuration | wall s: median | ratio to no agent | range | events |\n|---|--:|--:|--:|--:|\n")
		for _, row := range p.Rows {
			if row.Skipped != "" {
				fmt.Fprintf(out, "| %s | failed: %s | | | |\n", row.Name, oneLine(row.Skipped))
				continue
			}
			w := Summarize(row.Wall)
			ratio, rng := "1", ""
			if row.Key != KeyRealNone && row.Key != KeyRealNone25 {
				if sum, ok := p.Ratio(row.Key); ok {
					ratio, rng = fmt.Sprintf("%.2f×", sum.Median), sum.Range("%.2f")
				}
			}
			ev := ""
			if row.Agent == LibJProf && row.Key != KeyRealSample {
				var xs []float64
				for _, e := range row.Events {
					xs = append(xs, float64(e))
				}
				ev = fmt.Sprintf("%.3g", Summarize(xs).Median)
			}
			fmt.Fprintf(out, "| %s | %.2f | %s | %s | %s |\n", row.Name, w.Median, ratio, rng, ev)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// realTargets are issue 22's: the default mode at most 3× on each real
// program.
func realTargets(r *Real) []Target {
	var ts []Target
	for _, name := range []string{"H2", "groovy"} {
		tg := Target{What: fmt.Sprintf("%s (Debian package) under the default mode: ≤ 3× the no-agent wall time", name), Measured: "not measured", Met: "n/a"}
		if r != nil {
			for _, p := range r.Programs {
				if p.Name != name {
					continue
				}
				if sum, ok := p.Ratio(KeyRealDefault); ok {
					tg.Measured = fmt.Sprintf("%.2f× (%s over %d rounds)", sum.Median, sum.Range("%.2f"), sum.N)
					tg.Met = yesNo(sum.Median <= 3)
					if c, ok := p.Ratio(KeyRealCache); ok {
						tg.Measured += fmt.Sprintf("; with BCICACHE filled by an earlier run %.2f× (%s)", c.Median, c.Range("%.2f"))
					}
				} else if p.Skipped != "" {
					tg.Measured = "not run: " + p.Skipped
				}
			}
		}
		ts = append(ts, tg)
	}
	return ts
}
