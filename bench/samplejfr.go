package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// SampleJFR sets SAMPLE beside the JVM's own CPU-time sampler: JDK 25's
// JFR jdk.CPUTimeSample (JEP 509), which also samples each thread every
// so much of its CPU time, at the same two periods, on the same
// programs, in shuffled interleaved rounds. Each run's sample count is
// kept beside its cost: a sampler that takes fewer samples does less
// work, and says less.
type SampleJFR struct {
	Skipped string
	Rows    []*SampleJFRRow
	Rounds  int
}

// SampleJFRRow is one configuration's runs of one program.
type SampleJFRRow struct {
	Config
	Program   string
	Label     string    // the options column
	Wall, CPU []float64 // s, per run
	// Samples is, per run, the Java threads' samples: JFR's
	// jdk.CPUTimeSample events, libjprof's samples less those of the
	// JVM's own threads (JFR samples Java threads only).
	Samples []float64
	// All is, per run, every sample taken (libjprof's include the JVM's
	// own threads'): what the sampler paid for.
	All []float64
	// Lost is, per run, the samples JFR says it dropped
	// (jdk.CPUTimeSamplesLost); libjprof's are in its log-msg.
	Lost []float64
}

func (r *SampleJFRRow) key() string { return r.Key }

const sampleJFRRounds = 7

// The configurations, by key suffix.
const (
	sjNone    = "none"
	sjJFRIdle = "jfr-idle"
	sjJFR1    = "jfr-1ms"
	sjJFR10   = "jfr-10ms"
	sjSample1 = "sample-1ms"
	sjSampl10 = "sample-10ms"
)

func (p *SampleJFR) Title() string { return "Sampling against JFR's CPU-time sampler (JDK 25)" }

// jfrCPUSample is JFR started with its CPU-time sampler alone at a
// period ("" for no event at all: JFR's own fixed cost).
func jfrCPUSample(period, rec string) string {
	if period == "" {
		return "-XX:StartFlightRecording:settings=none,filename=" + rec
	}
	return "-XX:StartFlightRecording:settings=none,+jdk.CPUTimeSample#enabled=true,+jdk.CPUTimeSample#throttle=" + period + ",filename=" + rec
}

func (p *SampleJFR) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if o.JavacRounds == 0 {
		return nil
	}
	java, why := jdk25()
	if why != "" {
		p.Skipped = why
		return nil
	}
	for _, prog := range []string{sampleJavac, sampleGCHeavy} {
		p.Rows = append(p.Rows,
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjNone, Name: "no agent (JIT)"}, Label: "–"},
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjJFRIdle, Name: "JFR recording, no event enabled"},
				Label: "`-XX:StartFlightRecording:settings=none,filename=…`"},
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjJFR1, Name: "JFR CPU-time sampler, 1 ms"},
				Label: "`…settings=none,+jdk.CPUTimeSample#enabled=true,+jdk.CPUTimeSample#throttle=1ms`"},
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjJFR10, Name: "JFR CPU-time sampler, 10 ms"},
				Label: "`…#throttle=10ms`"},
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjSample1, Name: "libjprof SAMPLE (cpu, 1 ms)", Agent: LibJProf, Options: "SAMPLE"},
				Label: "`libjprof.so=SAMPLE,START,NORTDRIVER,LOGPATH=…`"},
			&SampleJFRRow{Program: prog, Config: Config{Key: prog + "-" + sjSampl10, Name: "libjprof SAMPLE=10ms", Agent: LibJProf, Options: "SAMPLE=10ms"},
				Label: "`libjprof.so=SAMPLE=10ms,START,NORTDRIVER,LOGPATH=…`"})
	}
	mains, out, err := sampledPrograms(o, tmp)
	if err != nil {
		return err
	}
	p.Rounds = sampleJFRRounds
	if o.SampleJFRRounds > 0 {
		p.Rounds = o.SampleJFRRounds
	}
	if o.JavacRounds < 2 || o.JavacArgs != nil {
		// The smoke test: one short round.
		p.Rounds = 1
		if o.JavacArgs != nil {
			mains[sampleJavac] = append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main"}, o.JavacArgs...)
		}
		mains[sampleGCHeavy] = []string{"-Xmx48m", "-XX:+UseParallelGC", "-cp", filepath.Join(o.Root, "build", "java"), "GCHeavy", "200", "2"}
	}
	jfrTool := filepath.Join(jdk25Home, "bin", "jfr")
	rng := rand.New(rand.NewPCG(o.Seed, 0x736a6672))
	for range p.Rounds {
		for _, i := range rng.Perm(len(p.Rows)) {
			row := p.Rows[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			dir, err := javacRunDir(tmp, row.Key, out)
			if err != nil {
				return err
			}
			r := row.run(o, dir, mains[row.Program]...)
			rec := filepath.Join(dir, "rec.jfr")
			cfg := strings.TrimPrefix(row.Key, row.Program+"-")
			switch cfg {
			case sjJFRIdle:
				r.JVMArgs = []string{jfrCPUSample("", rec)}
			case sjJFR1:
				r.JVMArgs = []string{jfrCPUSample("1ms", rec)}
			case sjJFR10:
				r.JVMArgs = []string{jfrCPUSample("10ms", rec)}
			}
			res, err := runJVM(ctx, java, r, o.Timeout)
			if err != nil {
				return fmt.Errorf("%s %s: %w", row.Program, row.Name, err)
			}
			row.Wall = append(row.Wall, res.Wall.Seconds())
			row.CPU = append(row.CPU, res.CPU.Seconds())
			switch cfg {
			case sjJFR1, sjJFR10:
				n, lost, err := jfrCPUSamples(ctx, jfrTool, rec)
				if err != nil {
					return fmt.Errorf("%s %s: %w", row.Program, row.Name, err)
				}
				row.Samples = append(row.Samples, n)
				row.All = append(row.All, n)
				row.Lost = append(row.Lost, lost)
			case sjSample1, sjSampl10:
				b, err := os.ReadFile(res.file("msg"))
				if err != nil {
					return fmt.Errorf("%s %s: %w", row.Program, row.Name, err)
				}
				java, all, ok := javaSamples(string(b))
				if !ok {
					return fmt.Errorf("%s %s: no sampling summary in log-msg", row.Program, row.Name)
				}
				row.Samples = append(row.Samples, java)
				row.All = append(row.All, all)
			}
			o.Logf("  %s: %.2fs", row.Key, res.Wall.Seconds())
			os.RemoveAll(dir)
		}
	}
	return nil
}

var (
	jfrSummaryRe = regexp.MustCompile(`(?m)^\s*jdk\.CPUTimeSample\s+(\d+)\s`)
	jfrLostRe    = regexp.MustCompile(`lostSamples = (\d+)`)
	samplesRe    = regexp.MustCompile(`sampling summary\s.*"samples": (\d+).*"jvmSamples": (\d+)`)
)

// jfrCPUSamples counts a recording's CPU-time samples, and the samples
// it says were lost.
func jfrCPUSamples(ctx context.Context, jfrTool, rec string) (n, lost float64, err error) {
	b, err := exec.CommandContext(ctx, jfrTool, "summary", rec).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("jfr summary: %w", err)
	}
	m := jfrSummaryRe.FindSubmatch(b)
	if m == nil {
		return 0, 0, fmt.Errorf("jfr summary: no jdk.CPUTimeSample line")
	}
	n, _ = strconv.ParseFloat(string(m[1]), 64)
	b, err = exec.CommandContext(ctx, jfrTool, "print", "--events", "jdk.CPUTimeSamplesLost", rec).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("jfr print: %w", err)
	}
	for _, m := range jfrLostRe.FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		lost += v
	}
	return n, lost, nil
}

// javaSamples is log-msg's count of the Java threads' samples, and of
// all.
func javaSamples(msg string) (java, all float64, ok bool) {
	m := samplesRe.FindStringSubmatch(msg)
	if m == nil {
		return 0, 0, false
	}
	all, _ = strconv.ParseFloat(m[1], 64)
	jvm, _ := strconv.ParseFloat(m[2], 64)
	return all - jvm, all, true
}

func (p *SampleJFR) row(prog, cfg string) *SampleJFRRow { return keyed(p.Rows, prog+"-"+cfg) }

// overhead is the median over rounds of a row's wall (CPU) time over its
// program's run without an agent in the same round, minus one.
func (p *SampleJFR) overhead(prog, cfg string, cpu bool) (Summary, bool) {
	row, none := p.row(prog, cfg), p.row(prog, sjNone)
	if row == nil || none == nil {
		return Summary{}, false
	}
	if cpu {
		return overRound(row.CPU, none.CPU)
	}
	return overRound(row.Wall, none.Wall)
}

// perSample is a sampler's cost per 1,000 of its samples, ms of the
// JVM's CPU time: the median over rounds of (CPU − the same round's CPU
// without an agent) / samples. It puts samplers that take different
// numbers of samples side by side.
func (p *SampleJFR) perSample(r *SampleJFRRow) (float64, bool) {
	none := p.row(r.Program, sjNone)
	if none == nil || len(r.All) != len(r.CPU) || len(none.CPU) != len(r.CPU) || len(r.CPU) == 0 {
		return 0, false
	}
	var xs []float64
	for i := range r.CPU {
		if r.All[i] > 0 {
			xs = append(xs, (r.CPU[i]-none.CPU[i])/r.All[i]*1e6)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	return Summarize(xs).Median, true
}

func (p *SampleJFR) Markdown(out io.Writer, s *Suite) error {
	if ran, err := notRun(out, p.Skipped, len(p.Rows) > 0 && len(p.Rows[0].Wall) > 0); !ran {
		return err
	}
	fmt.Fprintf(out, "JDK 25 (`%s`), javac compiling java/src and `GCHeavy 1500 2` (`-Xmx48m -XX:+UseParallelGC`), %d shuffled interleaved rounds. "+
		"JFR's CPU-time sampler (JEP 509, `jdk.CPUTimeSample`) and SAMPLE both take a thread's stack every so much of that thread's CPU time; "+
		"JFR runs with nothing else enabled (`settings=none`), and its fixed cost shows on its own row. Wall is the whole JVM, CPU its user + "+
		"system time; *+ per round* is the median over rounds of each run against the run without an agent in the same round, with its range. "+
		"*Java samples*: JFR's `jdk.CPUTimeSample` events (and the samples its `jdk.CPUTimeSamplesLost` events say it dropped), libjprof's "+
		"samples of Java threads (log-msg's count less the JVM's own threads', which JFR does not sample), median over the runs; "+
		"*CPU ms per 1,000 samples* divides each run's CPU time above the same round's run without an agent by its samples (median over rounds; "+
		"for SAMPLE, all its samples, the JVM threads' too, which it also pays for).\n\n",
		jdk25Home, p.Rounds)
	fmt.Fprintf(out, "| program | configuration | options | wall s: median | min–max | wall + per round (min–max) | CPU + per round | Java samples: median (min–max) | lost | CPU ms per 1,000 samples |\n|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range p.Rows {
		w := Summarize(r.Wall)
		dw, dc, ns, lost := "–", "–", "–", "–"
		cfg := strings.TrimPrefix(r.Key, r.Program+"-")
		if cfg != sjNone {
			if x, ok := p.overhead(r.Program, cfg, false); ok {
				dw = fmt.Sprintf("%+.1f%% (%+.1f…%+.1f%%)", 100*x.Median, 100*x.Min, 100*x.Max)
			}
			if x, ok := p.overhead(r.Program, cfg, true); ok {
				dc = fmt.Sprintf("%+.1f%%", 100*x.Median)
			}
		}
		if len(r.Samples) > 0 {
			n := Summarize(r.Samples)
			ns = fmt.Sprintf("%.0f (%s)", n.Median, n.Range("%.0f"))
		}
		if len(r.Lost) > 0 {
			lost = fmt.Sprintf("%.0f", Summarize(r.Lost).Median)
		}
		per := "–"
		if x, ok := p.perSample(r); ok {
			per = fmt.Sprintf("%.0f", x)
		}
		fmt.Fprintf(out, "| %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s |\n", r.Program, r.Name, r.Label, w.Median, w.Range("%.2f"), dw, dc, ns, lost, per)
	}
	fmt.Fprintln(out)
	return nil
}

// sampleJFRTargets is issue 22's: SAMPLE costs no more than JFR's
// CPU-time sampler at the same periods, with both sample counts.
func sampleJFRTargets(p *SampleJFR) []Target {
	tg := Target{What: "SAMPLE at 1 ms and 10 ms costs no more wall time than JFR's CPU-time sampler (`jdk.CPUTimeSample#throttle`) at the same period (JDK 25, javac and GCHeavy, medians of per-round differences), sample counts beside",
		Measured: "not measured", Met: "n/a"}
	if p == nil || p.Skipped != "" || len(p.Rows) == 0 {
		return []Target{tg}
	}
	var parts []string
	met := true
	for _, prog := range []string{sampleJavac, sampleGCHeavy} {
		for _, per := range [][2]string{{sjSample1, sjJFR1}, {sjSampl10, sjJFR10}} {
			a, okA := p.overhead(prog, per[0], false)
			b, okB := p.overhead(prog, per[1], false)
			ra, rb := p.row(prog, per[0]), p.row(prog, per[1])
			if !okA || !okB || ra == nil || rb == nil {
				return []Target{tg}
			}
			parts = append(parts, fmt.Sprintf("%s %s: SAMPLE %+.1f%% with %.0f samples, JFR %+.1f%% with %.0f", prog,
				strings.TrimPrefix(per[0], "sample-"), 100*a.Median, Summarize(ra.Samples).Median, 100*b.Median, Summarize(rb.Samples).Median))
			met = met && a.Median <= b.Median
		}
	}
	tg.Measured = strings.Join(parts, "; ")
	tg.Met = yesNo(met)
	return []Target{tg}
}
