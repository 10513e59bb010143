package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/libjprof/libjprof/reports"
)

// JFR sets libjprof against the JVM's own answer: JDK 25's JFR method
// timing (JEP 520), bytecode instrumentation that keeps the JIT but
// keeps only flat per-method counts and times, and libjprof's BCI event
// source building its calling-context tree, instrumenting the same
// javac classes, on the same compilation, in shuffled interleaved rounds.
// The last round's counts of both are compared method by method.
type JFR struct {
	Java    string // JDK 25's java; "" when there is none
	Skipped string // why the part did not run
	Rows    []*JFRRow
	Args    []string // javac's arguments, for the report
	Cmp     *JFRCompare
	CmpErr  string
	// Unwind is the same comparison on a small program whose method f
	// is left 30 times, 10 of them by an exception thrown in its callee.
	Unwind    *JFRCompare
	UnwindErr string
}

// JFRRow is one configuration's runs.
type JFRRow struct {
	Config
	Label     string    // the options column (the class lists elided)
	Wall, CPU []float64 // s, per run
}

// JFRCompare is one round's invocation counts, per method, both ways.
type JFRCompare struct {
	JFR, LibJProf map[string]uint64 // class/name+descriptor → invocations (libjprof: CALLS summed over contexts)
	// Contexts is the number of log-rt rows of the five classes
	// (calling contexts), beside len(LibJProf) methods.
	Contexts int
}

// jdk25Home is where the Temurin 25 JDK is installed (beside the system's
// OpenJDK 17).
const jdk25Home = "/usr/lib/jvm/temurin-25-jdk-amd64"

// jdk25 is JDK 25's java, or why a part that needs it is skipped.
func jdk25() (java, skipped string) {
	java = filepath.Join(jdk25Home, "bin", "java")
	if _, err := os.Stat(java); err != nil {
		return "", "no JDK 25 at " + jdk25Home
	}
	return java, ""
}

// jfrClasses are the javac classes both ways instrument: five large ones
// on the compilation's hot paths, some 800 methods (JDK 25's javac).
var jfrClasses = []string{
	"com.sun.tools.javac.comp.Attr",
	"com.sun.tools.javac.comp.Check",
	"com.sun.tools.javac.comp.Resolve",
	"com.sun.tools.javac.code.Types",
	"com.sun.tools.javac.parser.JavacParser",
}

// jfrExclude keeps libjprof to exactly jfrClasses: INCLUDE takes name
// prefixes, which also match their nested classes and, for Attr,
// AttrContext, AttrContextEnv and AttrRecover; JFR's filter names
// classes exactly.
func jfrExclude() string {
	var ex []string
	for _, c := range jfrClasses {
		ex = append(ex, c+"$")
	}
	return strings.Join(append(ex, "com.sun.tools.javac.comp.AttrContext", "com.sun.tools.javac.comp.AttrRecover"), "+")
}

const (
	KeyJFRNone    = "jfr-none"
	KeyJFRRec     = "jfr-recording"
	KeyJFRTiming  = "jfr-method-timing"
	KeyJFRBCIIdle = "jfr-bci-nothing"
	KeyJFRBCITree = "jfr-bci-calltree"
	KeyJFRBCI     = "jfr-bci-rtarcf"
)

const jfrRounds = 5

func (p *JFR) Title() string { return "Against the JVM's own answer: JFR method timing (JDK 25)" }

func (p *JFR) Run(ctx context.Context, s *Suite, tmp string) error {
	o := &s.Opts
	if o.JavacRounds == 0 {
		return nil
	}
	java, why := jdk25()
	if why != "" {
		p.Skipped = why
		return nil
	}
	p.Java = java
	sel := "INCLUDE=" + strings.Join(jfrClasses, "+") + ",EXCLUDE=" + jfrExclude()
	const elided = "INCLUDE=<the five classes>,EXCLUDE=<their nested classes, AttrContext, AttrRecover>,START,NORTDRIVER,LOGPATH=…"
	p.Rows = []*JFRRow{
		{Config: Config{Key: KeyJFRNone, Name: "no agent (JIT)"}, Label: "–"},
		{Config: Config{Key: KeyJFRRec, Name: "JFR recording, default settings, no method timing"},
			Label: "`-XX:StartFlightRecording:filename=…`"},
		{Config: Config{Key: KeyJFRTiming, Name: "JFR method timing of the five classes"},
			Label: "`-XX:StartFlightRecording:method-timing=<the five classes, ;-separated>,filename=…`"},
		// The agent's fixed cost: ASM loaded, every class load looked at,
		// nothing instrumented.
		{Config: Config{Key: KeyJFRBCIIdle, Name: "libjprof BCI RTARCF, INCLUDE of no class", Agent: LibJProf,
			Options: "BCI," + rtarcf + ",INCLUDE=no.such.package"}, Label: "`libjprof.so=BCI," + rtarcf + ",INCLUDE=no.such.package,START,NORTDRIVER,LOGPATH=…`"},
		{Config: Config{Key: KeyJFRBCITree, Name: "libjprof BCI CALLTREE of the five classes", Agent: LibJProf,
			Options: "BCI,CALLTREE," + sel}, Label: "`libjprof.so=BCI,CALLTREE," + elided + "`"},
		{Config: Config{Key: KeyJFRBCI, Name: "libjprof BCI RTARCF of the five classes", Agent: LibJProf,
			Options: "BCI," + rtarcf + "," + sel}, Label: "`libjprof.so=BCI," + rtarcf + "," + elided + "`"},
	}
	// A failed check leaves the timings standing; the report says why.
	unwindErr := p.unwind(ctx, s, tmp)
	if unwindErr != nil {
		p.UnwindErr = unwindErr.Error()
		unwindErr = fmt.Errorf("unwinding check: %w", unwindErr)
		o.Logf("  %v", unwindErr)
	}
	rounds := jfrRounds
	args := o.JavacArgs
	out := filepath.Join(tmp, "classes")
	if o.JavacRounds < 2 || args != nil {
		rounds = 1 // the smoke test
	}
	if args == nil {
		srcs, err := snapshotSources(filepath.Join(o.Root, "java", "src"), filepath.Join(tmp, "src"))
		if err != nil {
			return err
		}
		args = append([]string{"-d", out}, srcs...)
		p.Args = []string{"-d", "<tmp>", fmt.Sprintf("java/src/*.java (%d files)", len(srcs))}
	} else {
		p.Args = args
	}
	main := append([]string{"-m", "jdk.compiler/com.sun.tools.javac.Main"}, args...)
	rng := rand.New(rand.NewPCG(o.Seed, 0x6a6672))
	for round := range rounds {
		last := round == rounds-1
		var jfrFile, logRT string
		for _, i := range rng.Perm(len(p.Rows)) {
			row := p.Rows[i]
			if err := ctx.Err(); err != nil {
				return err
			}
			dir, err := javacRunDir(tmp, row.Key, out)
			if err != nil {
				return err
			}
			r := row.run(o, dir, main...)
			rec := filepath.Join(dir, "rec.jfr")
			switch row.Key {
			case KeyJFRRec:
				r.JVMArgs = []string{"-XX:StartFlightRecording:filename=" + rec}
			case KeyJFRTiming:
				r.JVMArgs = []string{"-XX:StartFlightRecording:method-timing=" + strings.Join(jfrClasses, ";") + ",filename=" + rec}
			}
			res, err := runJVM(ctx, java, r, o.Timeout)
			if err != nil {
				return fmt.Errorf("%s: %w", row.Name, err)
			}
			row.Wall = append(row.Wall, res.Wall.Seconds())
			row.CPU = append(row.CPU, res.CPU.Seconds())
			o.Logf("  %s: %.1fs", row.Key, res.Wall.Seconds())
			switch {
			case !last:
				os.RemoveAll(dir)
			case row.Key == KeyJFRTiming:
				jfrFile = rec
			case row.Key == KeyJFRBCI:
				logRT = res.file("rt.1")
			}
		}
		if last {
			cmp, err := compareCounts(ctx, jfrFile, logRT, jfrClasses)
			if err != nil {
				p.CmpErr = err.Error()
				return fmt.Errorf("comparing counts: %w", err)
			}
			p.Cmp = cmp
		}
	}
	return unwindErr
}

// javacRunDir empties javac's output directory out and makes a fresh
// directory under tmp for one run of configuration key (its LOGPATH).
func javacRunDir(tmp, key, out string) (string, error) {
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(tmp, key+"-")
}

// compareCounts reads the invocation counts of the methods of classes
// (dotted names) from both runs.
func compareCounts(ctx context.Context, rec, logRT string, classList []string) (*JFRCompare, error) {
	c := &JFRCompare{JFR: map[string]uint64{}, LibJProf: map[string]uint64{}}
	var err error
	if c.JFR, err = jfrMethodTiming(ctx, filepath.Join(jdk25Home, "bin", "jfr"), rec); err != nil {
		return nil, err
	}
	f, err := os.Open(logRT)
	if os.IsNotExist(err) {
		return c, nil // nothing collected: none of the classes ran (javac -version)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	prof, err := reports.ParseLogRT(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logRT, err)
	}
	classes := map[string]bool{}
	for _, cl := range classList {
		classes[strings.ReplaceAll(cl, ".", "/")] = true
	}
	for _, th := range prof.Threads {
		th.Walk(func(n *reports.Node, level int) {
			if level == 0 {
				return // the thread's root
			}
			_, m, ok := strings.Cut(n.Name, ":") // the type letter
			if !ok {
				return
			}
			cls, _, _ := strings.Cut(m, "(")
			if i := strings.LastIndexByte(cls, '.'); i < 0 || !classes[cls[:i]] {
				return
			}
			c.LibJProf[m] += n.Calls
			c.Contexts++
		})
	}
	return c, nil
}

// jfrMethodTiming reads the jdk.MethodTiming events of a recording with
// the JDK's jfr tool: invocations per method, the largest where a method
// has several events (each holds the count so far).
func jfrMethodTiming(ctx context.Context, jfrTool, rec string) (map[string]uint64, error) {
	cmd := exec.CommandContext(ctx, jfrTool, "print", "--json", "--events", "jdk.MethodTiming", rec)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("jfr print: %v: %s", err, tail(stderr.String(), 3))
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Values struct {
					Method struct {
						Type struct {
							Name string `json:"name"`
						} `json:"type"`
						Name       string `json:"name"`
						Descriptor string `json:"descriptor"`
					} `json:"method"`
					Invocations uint64 `json:"invocations"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("jfr print --json: %w", err)
	}
	out := map[string]uint64{}
	for _, e := range doc.Recording.Events {
		m := e.Values.Method
		k := m.Type.Name + "." + m.Name + m.Descriptor
		out[k] = max(out[k], e.Values.Invocations)
	}
	return out, nil
}

// unwindSource is the small program of the unwinding check: f is called
// 30 times and left 10 times by the exception g throws.
const unwindSource = `public class JFRUnwind {
    static int g(int i) { if (i % 3 == 0) throw new IllegalStateException(); return i; }
    static int f(int i) { return g(i) + 1; }
    public static void main(String[] a) {
        int s = 0;
        for (int i = 0; i < 30; i++) {
            try { s += f(i); } catch (IllegalStateException e) { s--; }
        }
        System.out.println(s);
    }
}
`

// unwind runs JFRUnwind (with the source launcher) under JFR method
// timing and under libjprof BCI, and compares their counts.
func (p *JFR) unwind(ctx context.Context, s *Suite, tmp string) error {
	dir := filepath.Join(tmp, "unwind")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(dir, "JFRUnwind.java")
	if err := os.WriteFile(src, []byte(unwindSource), 0o644); err != nil {
		return err
	}
	rec := filepath.Join(dir, "rec.jfr")
	if _, err := runJVM(ctx, p.Java, jvmRun{JVMArgs: []string{"-XX:StartFlightRecording:method-timing=JFRUnwind,filename=" + rec},
		Main: []string{src}, Dir: dir}, s.Opts.Timeout); err != nil {
		return err
	}
	c := Config{Agent: LibJProf, Options: "BCI,ALLMETHODS,CALLTREE,INCLUDE=JFRUnwind"}
	res, err := runJVM(ctx, p.Java, c.run(&s.Opts, dir, src), s.Opts.Timeout)
	if err != nil {
		return err
	}
	p.Unwind, err = compareCounts(ctx, rec, res.file("rt.1"), []string{"JFRUnwind"})
	return err
}

// Ratio is a row's median wall time over no agent's.
func (p *JFR) Ratio(key string) (float64, bool) {
	row, none := keyed(p.Rows, key), keyed(p.Rows, KeyJFRNone)
	if row == nil || none == nil || len(row.Wall) == 0 || len(none.Wall) == 0 {
		return 0, false
	}
	return Summarize(row.Wall).Median / Summarize(none.Wall).Median, true
}

// Paired is the median and spread over rounds of a row's wall time over
// base's in the same round: the machine's drift between rounds cancels.
func (p *JFR) Paired(key, base string) (Summary, bool) {
	row, b := keyed(p.Rows, key), keyed(p.Rows, base)
	if row == nil || b == nil {
		return Summary{}, false
	}
	return perRound(row.Wall, b.Wall)
}

// jfrDiff is one method whose counts differ.
type jfrDiff struct {
	Method  string
	JFR, JP uint64
}

func (d jfrDiff) delta() int64 { return int64(d.JP) - int64(d.JFR) }

// Agreement compares the methods JFR times (it leaves out synthetic
// methods, lambda bodies among them): those invoked at least once either
// way, those whose counts agree exactly, and the others, largest
// difference first. untimed are the methods only libjprof instruments,
// with their calls.
func (c *JFRCompare) Agreement() (invoked, equal int, diffs, untimed []jfrDiff) {
	for m, j := range c.JFR {
		l := c.LibJProf[m]
		if j == 0 && l == 0 {
			continue
		}
		invoked++
		if j == l {
			equal++
		} else {
			diffs = append(diffs, jfrDiff{Method: m, JFR: j, JP: l})
		}
	}
	for m, l := range c.LibJProf {
		if _, ok := c.JFR[m]; !ok {
			untimed = append(untimed, jfrDiff{Method: m, JP: l})
		}
	}
	byDelta := func(a, b jfrDiff) int {
		da, db := max(a.delta(), -a.delta()), max(b.delta(), -b.delta())
		if da != db {
			if da > db {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Method, b.Method)
	}
	slices.SortFunc(diffs, byDelta)
	slices.SortFunc(untimed, byDelta)
	return invoked, equal, diffs, untimed
}

func (p *JFR) Markdown(out io.Writer, s *Suite) error {
	if ran, err := notRun(out, p.Skipped, len(p.Rows) > 0 && len(p.Rows[0].Wall) > 0); !ran {
		return err
	}
	fmt.Fprintf(out, "`java [agent or -XX:StartFlightRecording] -m jdk.compiler/com.sun.tools.javac.Main %s` on JDK 25 (`%s`), "+
		"%d shuffled interleaved round(s). Both instrumentations keep the JIT and instrument the same classes: %s "+
		"(not their nested classes; JFR leaves out their lambda bodies, which libjprof instruments too). JFR method timing (JEP 520) keeps a flat count and time per method; libjprof keeps "+
		"its calling-context tree, with calibrated thread time per node under RTARCF. Wall time is the whole JVM, "+
		"including JFR dumping its recording and libjprof writing its log-rt at exit; CPU is the JVM's user + system time.\n\n",
		strings.Join(p.Args, " "), jdk25Home, len(p.Rows[0].Wall), strings.Join(quoteAll(jfrClasses), ", "))
	fmt.Fprintf(out, "*Per round* divides each run's wall time by that of the other configuration in the same round "+
		"(median, min–max over rounds), which cancels the machine's drift between rounds.\n\n")
	fmt.Fprintf(out, "| configuration | options | wall s: median | min–max | × no agent | per round ÷ no agent | per round ÷ JFR method timing | CPU s: median | min–max | × no agent |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	none := keyed(p.Rows, KeyJFRNone)
	for _, r := range p.Rows {
		w, c := Summarize(r.Wall), Summarize(r.CPU)
		xw, xc := "–", "–"
		if r.Key != KeyJFRNone && none != nil && len(none.Wall) > 0 {
			xw = fmt.Sprintf("%.2f", w.Median/Summarize(none.Wall).Median)
			xc = fmt.Sprintf("%.2f", c.Median/Summarize(none.CPU).Median)
		}
		paired := func(base string) string {
			if r.Key == base {
				return "–"
			}
			if x, ok := p.Paired(r.Key, base); ok {
				return fmt.Sprintf("%.2f (%s)", x.Median, x.Range("%.2f"))
			}
			return "–"
		}
		fmt.Fprintf(out, "| %s | %s | %.2f | %s | %s | %s | %s | %.2f | %s | %s |\n", r.Name, r.Label, w.Median, w.Range("%.2f"), xw,
			paired(KeyJFRNone), paired(KeyJFRTiming), c.Median, c.Range("%.2f"), xc)
	}
	fmt.Fprintln(out)
	switch {
	case p.CmpErr != "":
		fmt.Fprintf(out, "Counts not compared: `%s`\n\n", oneLine(p.CmpErr))
	case p.Cmp != nil:
		p.Cmp.markdown(out)
	}
	switch {
	case p.UnwindErr != "":
		fmt.Fprintf(out, "Unwinding check failed: `%s`\n", oneLine(p.UnwindErr))
	case p.Unwind != nil:
		f, g := "JFRUnwind.f(I)I", "JFRUnwind.g(I)I"
		fmt.Fprintf(out, "**Frames unwound by an exception.** A small program (`JFRUnwind`, run by the same JDK) calls `f` 30 times; "+
			"`f` calls `g`, which throws on 10 of the calls, and the exception passes through `f` to a `catch` in `main`. "+
			"JFR method timing counts `f` %d times and `g` %d times; libjprof BCI counts `f` %d and `g` %d. "+
			"JFR counts an invocation when the method returns or throws itself; a frame that a callee's exception "+
			"unwinds is not counted, so JFR's counts fall short on methods that exceptions pass through.\n",
			p.Unwind.JFR[f], p.Unwind.JFR[g], p.Unwind.LibJProf[f], p.Unwind.LibJProf[g])
	}
	return nil
}

func (c *JFRCompare) markdown(out io.Writer) {
	invoked, equal, diffs, untimed := c.Agreement()
	var jfrInvoked int
	for _, n := range c.JFR {
		if n > 0 {
			jfrInvoked++
		}
	}
	var untimedCalls uint64
	for _, d := range untimed {
		untimedCalls += d.JP
	}
	fmt.Fprintf(out, "**Invocation counts, last round.** JFR reported %d methods of the five classes (%d of them invoked); "+
		"libjprof's log-rt has %d methods of these classes, in %s calling contexts (CALLS summed per method, `reports.ParseLogRT`). "+
		"Of the %d methods JFR times that ran, **%d have exactly the same count** both ways",
		len(c.JFR), jfrInvoked, len(c.LibJProf), group(float64(c.Contexts)), invoked, equal)
	if len(diffs) == 0 {
		fmt.Fprintf(out, ": all of them.\n\n")
	} else {
		fmt.Fprintf(out, "; %d differ, libjprof counting more. These are methods that javac's exceptions pass through "+
			"(overload resolution and speculative attribution throw and catch them: Resolve's `InapplicableMethodException`, "+
			"raised from the checks of `checkType`, Types' `FunctionDescriptorLookupError`), and JFR does not count a frame "+
			"that a callee's exception unwinds (the unwinding check below shows it on a small program):\n\n", len(diffs))
		fmt.Fprintf(out, "| method | JFR | libjprof | libjprof − JFR |\n|---|--:|--:|--:|\n")
		for _, d := range diffs[:min(len(diffs), 10)] {
			fmt.Fprintf(out, "| `%s` | %s | %s | %+d |\n", d.Method, group(float64(d.JFR)), group(float64(d.JP)), d.delta())
		}
		fmt.Fprintln(out)
	}
	if len(untimed) > 0 {
		fmt.Fprintf(out, "libjprof also counted %d methods JFR does not report (%s calls): JFR times no lambda bodies "+
			"(the classes' synthetic `lambda$…` methods); libjprof instruments every method with bytecode. The largest: ", len(untimed), group(float64(untimedCalls)))
		var xs []string
		for _, d := range untimed[:min(len(untimed), 3)] {
			xs = append(xs, fmt.Sprintf("`%s` %s", d.Method, group(float64(d.JP))))
		}
		fmt.Fprintf(out, "%s.\n\n", strings.Join(xs, ", "))
	}
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return out
}
