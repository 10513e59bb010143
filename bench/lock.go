package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/reports"
)

// LockCost measures what the lock profiles cost a lock-heavy program
// (java/src/LockHeavy.java, mixed: four threads taking locks two million
// times each, two a monitor, two a ReentrantLock), without an agent,
// under libjprof LOCK at its default threshold, and under BCI CALLTREE
// without and with JLM (the exact lock monitor), in interleaved rounds,
// in the program's own time.
type LockCost struct {
	Rows []*AllocRow // Samples: LOCK: contended entries seen; JLM: monitor takes counted
	// One: BCI CALLTREE without and with JLM on one thread (no
	// contention), in the same rounds: JLM's cost a take by itself.
	One []*AllocRow
}

// lockOneEach is the single thread's takes.
const lockOneEach = "4000000"

const (
	lockThreads = "4"
	lockEach    = "2000000"
	lockRounds  = 11
)

func (l *LockCost) Title() string { return "Lock profile cost: LOCK and JLM on contended locks" }

func (l *LockCost) Run(ctx context.Context, s *Suite, tmp string) error {
	each, rounds := lockEach, lockRounds
	if s.Opts.RealSmall {
		each, rounds = "20000", 1
	}
	main := []string{"-cp", filepath.Join(s.Opts.Root, "build", "java"), "LockHeavy", lockThreads, each, "mixed"}
	lib := filepath.Join(s.Opts.Root, "build", "libjprof.so")
	l.Rows = []*AllocRow{{Key: "none", Name: "no agent"}, {Key: "lock", Name: "libjprof LOCK (threshold 10 µs)"},
		{Key: "bci", Name: "libjprof BCI CALLTREE"}, {Key: "jlm", Name: "libjprof BCI CALLTREE JLM"}}
	l.One = []*AllocRow{{Key: "bci1", Name: "libjprof BCI CALLTREE, one thread"}, {Key: "jlm1", Name: "libjprof BCI CALLTREE JLM, one thread"}}
	one := lockOneEach
	if s.Opts.RealSmall {
		one = "20000"
	}
	mainOne := []string{"-cp", filepath.Join(s.Opts.Root, "build", "java"), "LockHeavy", "1", one}
	opts := map[string]string{"lock": "LOCK", "bci": "CALLTREE", "jlm": "CALLTREE,JLM", "bci1": "CALLTREE", "jlm1": "CALLTREE,JLM"}
	all := append(append([]*AllocRow{}, l.Rows...), l.One...)
	for round := 0; round < rounds; round++ {
		for i := range all {
			row := all[(i+round)%len(all)]
			dir := filepath.Join(tmp, fmt.Sprintf("%s%d", row.Key, round))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			m := main
			if strings.HasSuffix(row.Key, "1") {
				m = mainOne
			}
			r := jvmRun{Main: m, Dir: dir}
			if o := opts[row.Key]; o != "" {
				r.Agent, r.Options = lib, o+",START,NORTDRIVER,LOGPATH="+dir
			}
			res, err := runJVM(ctx, s.Opts.Java, r, s.Opts.Timeout)
			if err != nil {
				return err
			}
			t, err := allocTime(res)
			if err != nil {
				return err
			}
			row.Wall = append(row.Wall, t)
			switch row.Key {
			case "lock":
				b, err := os.ReadFile(res.file("rt.1"))
				if err != nil {
					return err
				}
				var n float64
				if m := lockEntriesNote.FindSubmatch(b); m != nil {
					n, _ = strconv.ParseFloat(string(m[1]), 64)
				}
				row.Samples = append(row.Samples, n)
			case "jlm", "jlm1":
				n, err := jlmTakes(res.file("jlm.1"))
				if err != nil {
					return err
				}
				row.Samples = append(row.Samples, n)
			}
		}
	}
	return nil
}

// jlmTakes is the monitor takes a log-jlm counted.
func jlmTakes(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	j, err := reports.ReadJLM(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var n uint64
	for _, r := range j.Rows {
		n += r.Gets
	}
	return float64(n), nil
}

// row is the row of this key, nil if none.
func (l *LockCost) row(key string) *AllocRow {
	for _, r := range append(append([]*AllocRow{}, l.Rows...), l.One...) {
		if r.Key == key {
			return r
		}
	}
	return nil
}

// ratioOf is a row's time over another's, per round.
func (l *LockCost) ratioOf(key, over string) (Summary, bool) {
	a, b := l.row(key), l.row(over)
	if a == nil || b == nil {
		return Summary{}, false
	}
	return perRound(a.Wall, b.Wall)
}

func (l *LockCost) ratio() (Summary, bool) { return l.ratioOf("lock", "none") }

func (l *LockCost) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "`LockHeavy %s %s mixed` (%s threads taking a lock %s times each, two a monitor, two a `ReentrantLock`, "+
		"a little work inside and outside it) without an agent, under libjprof `LOCK` (default threshold 10 µs) and under "+
		"`BCI` `CALLTREE` without and with `JLM` (all with `START`), %d interleaved rounds, each first in turn; time: the "+
		"program's own for its threads' work; ratio: over the no-agent run of the same round.\n\n",
		lockThreads, lockEach, lockThreads, lockEach, len(l.Rows[0].Wall))
	fmt.Fprintf(out, "| configuration | time s: median | ratio to no agent | range | seen: median |\n|---|--:|--:|--:|--:|\n")
	for _, r := range l.Rows {
		w := Summarize(r.Wall)
		ratio, rng, n := "1", "", ""
		if r.Key != "none" {
			if sum, ok := l.ratioOf(r.Key, "none"); ok {
				ratio, rng = fmt.Sprintf("%.3f×", sum.Median), sum.Range("%.3f")
			}
		}
		switch r.Key {
		case "lock":
			n = fmt.Sprintf("%.0f contended entries", Summarize(r.Samples).Median)
		case "jlm":
			n = fmt.Sprintf("%.0f monitor takes", Summarize(r.Samples).Median)
		}
		fmt.Fprintf(out, "| %s | %.2f | %s | %s | %s |\n", r.Name, w.Median, ratio, rng, n)
	}
	if sum, ok := l.ratioOf("jlm", "bci"); ok {
		extra := Summarize(l.row("jlm").Wall).Median - Summarize(l.row("bci").Wall).Median
		takes := Summarize(l.row("jlm").Samples).Median
		fmt.Fprintf(out, "\nJLM's own cost, `BCI CALLTREE JLM` over `BCI CALLTREE` in the same round: **%.3f×** (%s); "+
			"%.0f ms more for %.0f monitor takes, %.0f ns of the program's time a take (each take is two JNI calls, "+
			"two clock reads and the class check; the two monitor threads share the machine's cores with the other two).\n",
			sum.Median, sum.Range("%.3f"), extra*1e3, takes, extra*1e9/max(takes, 1))
	}
	if sum, ok := l.ratioOf("jlm1", "bci1"); ok {
		extra := Summarize(l.row("jlm1").Wall).Median - Summarize(l.row("bci1").Wall).Median
		takes := Summarize(l.row("jlm1").Samples).Median
		fmt.Fprintf(out, "\nWithout contention (`LockHeavy 1 %s`: one thread, the same rounds): JLM over BCI CALLTREE "+
			"**%.3f×** (%s); %.0f ns a take (%.0f takes, %.2f s without JLM).\n",
			lockOneEach, sum.Median, sum.Range("%.3f"), extra*1e9/max(takes, 1), takes, Summarize(l.row("bci1").Wall).Median)
	}
	fmt.Fprintln(out)
	return nil
}

// lockTargets is issue 24's for locks: LOCK ≤ 2%; JLM's cost stated.
func lockTargets(l *LockCost) []Target {
	t := Target{What: "LOCK at its default threshold on a lock-heavy program: ≤ 2% over no agent (the program's own time)", Measured: "not measured", Met: "n/a"}
	j := Target{What: "BCI's exact lock monitor (JLM): its cost stated (over BCI CALLTREE, the same program)", Measured: "not measured", Met: "n/a"}
	if l != nil {
		if sum, ok := l.ratio(); ok {
			t.Measured = fmt.Sprintf("%.3f× (%s over %d rounds)", sum.Median, sum.Range("%.3f"), sum.N)
			t.Met = yesNo(sum.Median <= 1.02)
		}
		if sum, ok := l.ratioOf("jlm", "bci"); ok {
			j.Measured = fmt.Sprintf("%.3f× (%s over %d rounds) with 4 threads contending", sum.Median, sum.Range("%.3f"), sum.N)
			j.Met = "stated"
		}
		if sum, ok := l.ratioOf("jlm1", "bci1"); ok {
			extra := Summarize(l.row("jlm1").Wall).Median - Summarize(l.row("bci1").Wall).Median
			j.Measured += fmt.Sprintf("; %.3f× on one thread, %.0f ns a take", sum.Median,
				extra*1e9/max(Summarize(l.row("jlm1").Samples).Median, 1))
		}
	}
	return []Target{t, j}
}
