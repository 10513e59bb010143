package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// LockCost measures what the lock profile costs a lock-heavy program
// (java/src/LockHeavy.java: four threads taking one monitor two million
// times each), without an agent and under libjprof LOCK at its default
// threshold, in interleaved rounds, in the program's own time.
type LockCost struct {
	Rows []*AllocRow // Samples: contended entries seen
}

const (
	lockThreads = "4"
	lockEach    = "2000000"
	lockRounds  = 11
)

func (l *LockCost) Title() string { return "Lock profile cost: LOCK on a contended monitor" }

func (l *LockCost) Run(ctx context.Context, s *Suite, tmp string) error {
	each, rounds := lockEach, lockRounds
	if s.Opts.RealSmall {
		each, rounds = "20000", 1
	}
	main := []string{"-cp", filepath.Join(s.Opts.Root, "build", "java"), "LockHeavy", lockThreads, each}
	lib := filepath.Join(s.Opts.Root, "build", "libjprof.so")
	l.Rows = []*AllocRow{{Key: "none", Name: "no agent"}, {Key: "lock", Name: "libjprof LOCK (threshold 10 µs)"}}
	for round := 0; round < rounds; round++ {
		for i := range l.Rows {
			row := l.Rows[(i+round)%len(l.Rows)]
			dir := filepath.Join(tmp, fmt.Sprintf("%s%d", row.Key, round))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			r := jvmRun{Main: main, Dir: dir}
			if row.Key == "lock" {
				r.Agent, r.Options = lib, "LOCK,START,NORTDRIVER,LOGPATH="+dir
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
			if row.Key == "lock" {
				b, err := os.ReadFile(res.file("rt.1"))
				if err != nil {
					return err
				}
				var n float64
				if m := lockEntriesNote.FindSubmatch(b); m != nil {
					n, _ = strconv.ParseFloat(string(m[1]), 64)
				}
				row.Samples = append(row.Samples, n)
			}
		}
	}
	return nil
}

func (l *LockCost) ratio() (Summary, bool) {
	if len(l.Rows) < 2 {
		return Summary{}, false
	}
	return perRound(l.Rows[1].Wall, l.Rows[0].Wall)
}

func (l *LockCost) Markdown(out io.Writer, s *Suite) error {
	fmt.Fprintf(out, "`LockHeavy %s %s` (%s threads taking one monitor %s times each, a little work inside and outside it) "+
		"without an agent and under libjprof `LOCK` (default threshold 10 µs, `START`), %d interleaved rounds, each first "+
		"in turn; time: the program's own for its threads' work; ratio: over the no-agent run of the same round.\n\n",
		lockThreads, lockEach, lockThreads, lockEach, len(l.Rows[0].Wall))
	fmt.Fprintf(out, "| configuration | time s: median | ratio to no agent | range | contended entries seen: median |\n|---|--:|--:|--:|--:|\n")
	for _, r := range l.Rows {
		w := Summarize(r.Wall)
		ratio, rng, n := "1", "", ""
		if r.Key == "lock" {
			if sum, ok := l.ratio(); ok {
				ratio, rng = fmt.Sprintf("%.3f×", sum.Median), sum.Range("%.3f")
			}
			n = fmt.Sprintf("%.0f", Summarize(r.Samples).Median)
		}
		fmt.Fprintf(out, "| %s | %.2f | %s | %s | %s |\n", r.Name, w.Median, ratio, rng, n)
	}
	fmt.Fprintln(out)
	return nil
}

// lockTargets is issue 24's for locks: LOCK ≤ 2%.
func lockTargets(l *LockCost) []Target {
	t := Target{What: "LOCK at its default threshold on a lock-heavy program: ≤ 2% over no agent (the program's own time)", Measured: "not measured", Met: "n/a"}
	if l != nil {
		if sum, ok := l.ratio(); ok {
			t.Measured = fmt.Sprintf("%.3f× (%s over %d rounds)", sum.Median, sum.Range("%.3f"), sum.N)
			t.Met = yesNo(sum.Median <= 1.02)
		}
	}
	return []Target{t}
}
