package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/libjprof/libjprof/reports"
)

// Repeat measures how repeatable the default mode's numbers are: the same
// program run several times under it, each method's calibrated self time
// (summed over its calling contexts) compared across the runs.
type Repeat struct {
	Runs     int
	Programs []*RepeatProgram
}

// RepeatProgram is one program's runs.
type RepeatProgram struct {
	Name    string
	Options string
	Main    []string
	// Self is, per run, each method's calibrated self time (ns).
	Self    []map[string]float64
	Total   []float64 // per run, the sum over methods (thread roots excluded)
	Skipped string
	// Subtree names a method whose calibrated time with its callees'
	// (summed over its contexts) is compared, per run (SubtreeNs), with
	// the same work timed from inside the program without an agent
	// (BareNs, one run of BareMain per profiled run): how much the
	// program's own time moves between JVM runs.
	Subtree           string
	BareMain          []string
	SubtreeNs, BareNs []float64
}

// RepeatSpread is one method's spread over the runs.
type RepeatSpread struct {
	Method   string
	Share    float64 // median share of the total, %
	Min, Max float64 // ns
	Spread   float64 // Max / Min (+Inf when a run lacks it)
}

// repeatShare is the share of the total a method needs for the target.
const repeatShare = 1.0

func (r *Repeat) Title() string { return "Repeatability of the default mode" }

func (r *Repeat) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	r.Runs = o.RepeatRuns
	srcs, err := snapshotSources(filepath.Join(o.Root, "java", "src"), filepath.Join(tmp, "src"))
	if err != nil {
		return err
	}
	out := filepath.Join(tmp, "classes")
	javac := append([]string{"-Xmx1g", "-m", "jdk.compiler/com.sun.tools.javac.Main", "-d", out}, srcs...)
	if o.JavacArgs != nil {
		javac = append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main"}, o.JavacArgs...)
	}
	r.Programs = []*RepeatProgram{
		{Name: "hellop", Options: rtarcf, Main: []string{"-cp", filepath.Join(o.Root, "build", "java"), "hellop"},
			Subtree: "hellop.myA()V", BareMain: []string{"-cp", filepath.Join(o.Root, "build", "java"), "HellopTimed"}},
		{Name: "javac", Options: rtarcf, Main: javac},
	}
	var errs []error
	for i := range r.Runs {
		for _, p := range r.Programs {
			if p.Skipped != "" {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := os.RemoveAll(out); err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			self, total, sub, err := r.runOne(ctx, s, tmp, p)
			if err == nil && p.BareMain != nil {
				var bare float64
				if bare, err = runBare(ctx, s, p.BareMain); err == nil {
					p.BareNs = append(p.BareNs, bare)
					p.SubtreeNs = append(p.SubtreeNs, sub)
				}
			}
			if err != nil {
				p.Skipped = err.Error()
				errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
				continue
			}
			p.Self = append(p.Self, self)
			p.Total = append(p.Total, total)
			o.Logf("  repeat %s run %d: %.1f ms of calibrated self time", p.Name, i, total/1e6)
		}
	}
	return errors.Join(errs...)
}

func (r *Repeat) runOne(ctx context.Context, s *Suite, tmp string, p *RepeatProgram) (self map[string]float64, total, subtree float64, err error) {
	dir, err := os.MkdirTemp(tmp, p.Name+"-")
	if err != nil {
		return nil, 0, 0, err
	}
	defer os.RemoveAll(dir)
	c := Config{Agent: LibJProf, Options: p.Options}
	res, err := runJVM(ctx, s.Opts.Java, c.run(&s.Opts, dir, p.Main...), s.Opts.Timeout)
	if err != nil {
		return nil, 0, 0, err
	}
	f, err := os.Open(res.file("rt.1"))
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	prof, err := reports.ParseLogRT(f)
	if err != nil {
		return nil, 0, 0, err
	}
	self = map[string]float64{}
	// The type letter (i or j) may differ between runs.
	bare := func(n *reports.Node) string {
		if len(n.Name) > 2 && n.Name[1] == ':' {
			return n.Name[2:]
		}
		return n.Name
	}
	for _, th := range prof.Threads {
		th.Walk(func(n *reports.Node, d int) {
			if d == 0 || len(n.Base) == 0 {
				return
			}
			self[bare(n)] += float64(n.Base[0])
			total += float64(n.Base[0])
		})
		// The subtree's method does not recurse here (hellop's myA).
		th.Walk(func(n *reports.Node, d int) {
			if p.Subtree != "" && bare(n) == p.Subtree {
				n.Walk(func(m *reports.Node, _ int) {
					if len(m.Base) > 0 {
						subtree += float64(m.Base[0])
					}
				})
			}
		})
	}
	return self, total, subtree, nil
}

var bareLoopRe = regexp.MustCompile(`loop_ns (\d+)`)

// runBare runs a program without an agent that prints the time of its
// measured work (HellopTimed), in ns.
func runBare(ctx context.Context, s *Suite, main []string) (float64, error) {
	res, err := runJVM(ctx, s.Opts.Java, Config{}.run(&s.Opts, "", main...), s.Opts.Timeout)
	if err != nil {
		return 0, err
	}
	m := bareLoopRe.FindStringSubmatch(res.Stdout)
	if m == nil {
		return 0, fmt.Errorf("%s printed no loop_ns: %q", short(main), tail(res.Stdout, 200))
	}
	return strconv.ParseFloat(m[1], 64)
}

// BareSpread is the spread (max/min) of the subtree's calibrated time
// over the profiled runs and of the same work timed without an agent.
func (p *RepeatProgram) BareSpread() (profiled, bare Summary, ok bool) {
	if len(p.BareNs) < 2 || len(p.SubtreeNs) != len(p.BareNs) || slices.Min(p.BareNs) <= 0 || slices.Min(p.SubtreeNs) <= 0 {
		return Summary{}, Summary{}, false
	}
	return Summarize(p.SubtreeNs), Summarize(p.BareNs), true
}

// Spreads are the spreads of the methods with at least repeatShare % of
// the total in the median run, widest first.
func (p *RepeatProgram) Spreads() []RepeatSpread {
	if len(p.Self) < 2 {
		return nil
	}
	var out []RepeatSpread
	seen := map[string]bool{}
	for _, run := range p.Self {
		for m := range run {
			seen[m] = true
		}
	}
	for m := range seen {
		var vals, shares []float64
		for i, run := range p.Self {
			vals = append(vals, run[m])
			if p.Total[i] > 0 {
				shares = append(shares, run[m]/p.Total[i]*100)
			}
		}
		share := Summarize(shares).Median
		if share < repeatShare {
			continue
		}
		mn, mx := slices.Min(vals), slices.Max(vals)
		spread := math.Inf(1)
		if mn > 0 {
			spread = mx / mn
		}
		out = append(out, RepeatSpread{Method: m, Share: share, Min: mn, Max: mx, Spread: spread})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Spread != out[j].Spread {
			return out[i].Spread > out[j].Spread
		}
		return out[i].Method < out[j].Method
	})
	return out
}

func (r *Repeat) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "Each program runs %d times under the default mode (`%s`: BCI, one PTT read per event, calibrated), "+
		"the runs of the two programs interleaved. Per method: its calibrated self time summed over its calling contexts; "+
		"for every method with at least %.0f%% of the total (median share), the spread is the largest run's over the smallest's "+
		"(target ≤ 1.25×). The widest spreads:\n\n", r.Runs, rtarcf, repeatShare)
	for _, p := range r.Programs {
		if p.Skipped != "" {
			fmt.Fprintf(out, "**%s**: failed: %s\n\n", p.Name, oneLine(p.Skipped))
			continue
		}
		sp := p.Spreads()
		within := 0
		for _, x := range sp {
			if x.Spread <= 1.25 {
				within++
			}
		}
		fmt.Fprintf(out, "**%s**: %d runs; %d methods with ≥ %.0f%% of the total, %d of them within 1.25×.\n\n", p.Name, len(p.Self), len(sp), repeatShare, within)
		if len(sp) == 0 {
			continue
		}
		fmt.Fprintf(out, "| method | share | min µs | max µs | spread |\n|---|--:|--:|--:|--:|\n")
		for i, x := range sp {
			if i == 8 {
				break
			}
			fmt.Fprintf(out, "| `%s` | %.1f%% | %.1f | %.1f | %.2f× |\n", x.Method, x.Share, x.Min/1e3, x.Max/1e3, x.Spread)
		}
		fmt.Fprintln(out)
		if prof, bare, ok := p.BareSpread(); ok {
			fmt.Fprintf(out, "**The program's own spread.** Beside each profiled run, `%s` ran without an agent: hellop's program with "+
				"main's loop timed from inside (`System.nanoTime`), the work of `%s` and its callees. Over the same %d rounds:\n\n"+
				"| | median µs | min µs | max µs | spread |\n|---|--:|--:|--:|--:|\n"+
				"| `%s` with its callees, calibrated, profiled | %.1f | %.1f | %.1f | %.2f× |\n"+
				"| the same work, no agent, timed by the program | %.1f | %.1f | %.1f | %.2f× |\n\n",
				p.BareMain[len(p.BareMain)-1], p.Subtree, len(p.BareNs), p.Subtree,
				prof.Median/1e3, prof.Min/1e3, prof.Max/1e3, prof.Max/prof.Min, bare.Median/1e3, bare.Min/1e3, bare.Max/1e3, bare.Max/bare.Min)
			fmt.Fprintf(out, "A 1 ms piece of work at the start of a JVM does not take the same time twice on this machine, agent or not: "+
				"when the JIT compiles `myC` (on another thread, so after a different number of interpreted calls each run), "+
				"the state of the caches and the other core's work all move it. A profile that showed a narrower spread than the "+
				"program's own would be hiding that.\n\n")
		}
	}
	return nil
}

// repeatTargets are issue 22's: every method with at least 1% of the total
// within a 1.25× spread over five runs of the default mode.
func repeatTargets(r *Repeat) []Target {
	var ts []Target
	for _, name := range []string{"hellop", "javac"} {
		tg := Target{What: fmt.Sprintf("%s, 5 runs of the default mode: every method with ≥ 1%% of the total has a calibrated self-time spread (max/min) ≤ 1.25×", name),
			Measured: "not measured", Met: "n/a"}
		if r != nil {
			for _, p := range r.Programs {
				if p.Name != name || p.Skipped != "" {
					continue
				}
				sp := p.Spreads()
				if len(sp) == 0 {
					continue
				}
				within := 0
				for _, x := range sp {
					if x.Spread <= 1.25 {
						within++
					}
				}
				tg.Measured = fmt.Sprintf("%d of %d methods within 1.25× over %d runs; widest %.2f× (`%s`, %.1f%% of the total)",
					within, len(sp), len(p.Self), sp[0].Spread, sp[0].Method, sp[0].Share)
				if prof, bare, ok := p.BareSpread(); ok {
					tg.Measured += fmt.Sprintf("; `%s` with its callees %.2f×, the same work without an agent %.2f×", p.Subtree,
						prof.Max/prof.Min, bare.Max/bare.Min)
				}
				tg.Met = yesNo(within == len(sp) && len(p.Self) >= 5)
			}
		}
		ts = append(ts, tg)
	}
	return ts
}
