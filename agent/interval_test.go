package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/reports"
)

// Interval flushes: each holds exactly the calls of its own phase, a
// plain flush after one is cumulative from it, end after a reset from
// the reset; every header says the interval it covers, and consecutive
// intervals meet exactly. Calibrated (RTARCF, method events and BCI),
// each removes the overhead of its own phase's events only. The minima
// are the run's own (CALTABLE=none): a table's, used for keys seen fewer
// than a hundred times, need not fit this machine, and a key would move
// from one to the other between intervals.
func TestRTDriverIntervalFlush(t *testing.T) {
	for _, opts := range []string{"METHODEVENTS,CALLTREE", "METHODEVENTS,RTARCF,CALTABLE=none", "RTARCF,CALTABLE=none"} {
		t.Run(opts, func(t *testing.T) {
			p, port := driven(t, opts)
			requireOK(t, rt(t, port, "start"))
			phase := func(n, cmd string) string {
				p.Send("call " + n)
				p.Expect("done " + n)
				replies := rt(t, port, cmd)
				requireOK(t, replies)
				return replies[0].Detail
			}
			files := []string{
				phase("100", "flush=interval"),
				phase("250", "flush=interval"),
				phase("7", "flush"),
				phase("30", "flush=interval"),
			}
			requireOK(t, rt(t, port, "reset"))
			files = append(files, phase("3", "end"))
			p.Send("quit")
			r := p.Wait()
			require.Equal(t, 0, r.ExitCode, r.Stderr)

			want := []struct {
				calls  uint64
				counts reports.IntervalCounts
			}{
				{100, reports.CumulativeSinceStart},
				{250, reports.SinceFlush},
				{7, reports.SinceFlush},
				{7 + 30, reports.SinceFlush}, // the plain flush did not start an interval
				{3, reports.CumulativeSinceReset},
			}
			var prev *reports.Interval
			var prevRemoved float64
			for i, w := range want {
				p := r.LogRT(t, i+1)
				assert.Contains(t, files[i], r.File("rt."+string(rune('1'+i))))
				assert.Equal(t, w.calls, workCalls(t, p), "log-rt.%d", i+1)
				base, removed := workCalibrated(t, p)
				if strings.Contains(opts, "RTARCF") {
					require.NotEmpty(t, removed, "log-rt.%d has no removed overhead (Delta)", i+1)
					// Calibration removed something from work and its leaf,
					// and less than their raw time: a baseline that kept an
					// earlier phase's calibration counts removes those
					// events' overhead too, 10 to 130 times this phase's
					// here, which the report clamps to the raw time. (This
					// catches a wrong node's own count, in which a node
					// counts most of its events, its first key's.)
					assert.NotZero(t, removed[0], "log-rt.%d: calibration removed nothing from work", i+1)
					assert.NotZero(t, base[0], "log-rt.%d: calibration removed all of work's time", i+1)
					// Per call, from log-rt.4 on (350 calls before: what
					// the first calls do once, such as a JIT compilation
					// during one, is behind), the same events are removed,
					// at the run's minima, which can only fall: not more
					// than before.
					perCall := float64(removed[0]) / float64(w.calls)
					if i >= 3 {
						assert.LessOrEqual(t, perCall, 1.25*prevRemoved, "log-rt.%d: overhead removed per call of work against log-rt.%d's", i+1, i)
					}
					prevRemoved = perCall
				}
				iv := p.Interval
				require.NotNil(t, iv, "log-rt.%d has no interval", i+1)
				assert.Equal(t, w.counts, iv.Counts, "log-rt.%d", i+1)
				assert.True(t, iv.End.After(iv.Start), "log-rt.%d: %v .. %v", i+1, iv.Start, iv.End)
				assert.Greater(t, iv.EndVM, iv.StartVM, "log-rt.%d", i+1)
				assert.Greater(t, iv.StartVM, time.Duration(0), "log-rt.%d", i+1)
				switch i {
				case 1, 2, 3: // from the previous interval flush's end
					src := prev
					if i == 3 {
						src = r.LogRT(t, 2).Interval
					}
					assert.True(t, iv.Start.Equal(src.End), "log-rt.%d starts where log-rt.%d ended", i+1, i)
					assert.Equal(t, src.EndVM, iv.StartVM)
				case 4:
					assert.True(t, iv.Start.After(prev.End), "the reset came after log-rt.4")
				}
				prev = iv
			}
		})
	}
}

// workCalibrated sums the calibrated time (Base) and the overhead
// removed (Delta) of Driven.work and Driven.leaf in p's main thread.
func workCalibrated(t *testing.T, p *reports.Profile) (base, removed []uint64) {
	t.Helper()
	add := func(to []uint64, v []uint64) []uint64 {
		for k, x := range v {
			if k == len(to) {
				to = append(to, 0)
			}
			to[k] += x
		}
		return to
	}
	mainThread(t, p).Walk(func(n *reports.Node, d int) {
		if len(n.Name) > 2 && (n.Name[2:] == "Driven.work(I)J" || n.Name[2:] == "Driven.leaf(I)J") {
			base, removed = add(base, n.Base), add(removed, n.Delta)
		}
	})
	return base, removed
}
