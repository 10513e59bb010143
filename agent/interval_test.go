package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/reports"
)

// Interval flushes: each holds exactly the calls of its own phase, a
// plain flush after one is cumulative from it, end after a reset from
// the reset; every header says the interval it covers, and consecutive
// intervals meet exactly.
func TestRTDriverIntervalFlush(t *testing.T) {
	for _, opts := range []string{"METHODEVENTS,CALLTREE", "METHODEVENTS,RTARCF"} {
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
			for i, w := range want {
				p := r.LogRT(t, i+1)
				assert.Contains(t, files[i], r.File("rt."+string(rune('1'+i))))
				assert.Equal(t, w.calls, workCalls(t, p), "log-rt.%d", i+1)
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
