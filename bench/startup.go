package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Startup measures what the agent adds to every run whatever the
// program does: a JVM whose main returns at once (Spin 0), without the
// agent, under the default mode as a user starts it (no options but
// START), under BCI CALLTREE (no PTT: no eBPF programs loaded) and under
// SAMPLE, in shuffled interleaved rounds. The difference is the agent's
// load (the Go runtime, the eBPF programs and their verification, the
// transformer's classes), its set-up at VM start and its reports at VM
// death: a fixed cost, which a short program's ratio to its no-agent
// time carries whole.
type Startup struct {
	Rows   []*StartupRow
	Rounds int
}

// StartupRow is one configuration's runs.
type StartupRow struct {
	Config
	Label     string
	Wall, CPU []float64 // s, per run
}

func (r *StartupRow) key() string { return r.Key }

const startupRounds = 15

func (p *Startup) Title() string { return "Start-up and exit: a program that does nothing" }

func (p *Startup) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	p.Rows = []*StartupRow{
		{Config: Config{Key: "none", Name: "no agent"}, Label: "–"},
		{Config: Config{Key: "default", Name: "libjprof, the default mode", Agent: LibJProf},
			Label: "`libjprof.so=START,NORTDRIVER,LOGPATH=…`"},
		{Config: Config{Key: "calltree", Name: "libjprof BCI CALLTREE (no PTT)", Agent: LibJProf, Options: "BCI,CALLTREE"},
			Label: "`libjprof.so=BCI,CALLTREE,START,NORTDRIVER,LOGPATH=…`"},
		{Config: Config{Key: "sample", Name: "libjprof SAMPLE", Agent: LibJProf, Options: "SAMPLE"},
			Label: "`libjprof.so=SAMPLE,START,NORTDRIVER,LOGPATH=…`"},
	}
	p.Rounds = startupRounds
	if o.Rounds < 2 {
		p.Rounds = 1 // the smoke test
	}
	main := []string{"-cp", filepath.Join(o.Root, "build", "java"), "Spin", "0"}
	rng := rand.New(rand.NewPCG(o.Seed, 0x73747570))
	for round := range p.Rounds {
		for _, i := range rng.Perm(len(p.Rows)) {
			row := p.Rows[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", row.Key, round))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			r := row.run(o, dir, main...)
			res, err := runJVM(ctx, o.Java, r, o.Timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", row.Name, err)
			}
			row.Wall = append(row.Wall, res.Wall.Seconds())
			row.CPU = append(row.CPU, res.CPU.Seconds())
			os.RemoveAll(dir)
		}
	}
	o.Logf("  startup: %d rounds", p.Rounds)
	return nil
}

func (p *Startup) Markdown(out io.Writer, s *Suite) error {
	if ran, err := notRun(out, "", len(p.Rows) > 0 && len(p.Rows[0].Wall) > 0); !ran {
		return err
	}
	fmt.Fprintf(out, "`Spin 0` (main returns at once), %d shuffled interleaved rounds. Wall is the whole JVM, from exec to exit: "+
		"the agent's load (the Go runtime, the eBPF programs and their verification: the default mode's on another thread while the JVM initialises, "+
		"so that its CPU time exceeds its wall time's share), its set-up at VM start (the transformer's classes, "+
		"its compiler directive) and its reports at VM death; CPU is the JVM's user + system time. *+ per round* is the median over rounds "+
		"of each run's time less the same round's run without an agent, with its range: what every run under that configuration pays, "+
		"however short the program.\n\n", p.Rounds)
	fmt.Fprintf(out, "| configuration | options | wall ms: median | min–max | + per round, ms (min–max) | CPU ms: median | CPU + per round, ms |\n|---|---|--:|--:|--:|--:|--:|\n")
	none := keyed(p.Rows, "none")
	for _, r := range p.Rows {
		w, c := Summarize(r.Wall), Summarize(r.CPU)
		dw, dc := "–", "–"
		if r != none {
			if d, ok := minusRound(r.Wall, none.Wall); ok {
				dw = fmt.Sprintf("%+.0f (%+.0f…%+.0f)", 1e3*d.Median, 1e3*d.Min, 1e3*d.Max)
			}
			if d, ok := minusRound(r.CPU, none.CPU); ok {
				dc = fmt.Sprintf("%+.0f", 1e3*d.Median)
			}
		}
		fmt.Fprintf(out, "| %s | %s | %.0f | %.0f–%.0f | %s | %.0f | %s |\n", r.Name, r.Label, 1e3*w.Median, 1e3*w.Min, 1e3*w.Max, dw, 1e3*c.Median, dc)
	}
	fmt.Fprintln(out)
	return nil
}
