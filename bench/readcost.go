package bench

import (
	"context"
	"errors"

	"github.com/libjprof/libjprof/internal/ptttest"
)

// ReadCost measures one PTT read of each backend beside bare clock reads,
// all in this process, Reps times each in turn.
type ReadCost struct {
	Rows []*ReadCostRow
}

// ReadCostRow is one backend or baseline.
type ReadCostRow struct {
	Name    string
	Ns      []float64 // ns per read, one per repetition
	Skipped string    // the backend could not be set up here
}

// Names of the rows, as ptt names them.
const (
	ReadVDSO  = "vdso-monotonic"
	ReadTSC   = "rdtsc"
	ReadCPU   = "thread-cputime"
	ReadClock = "clock"
	ReadPerf  = "perf"
	ReadBPF   = "bpf"
)

func (c *ReadCost) Title() string { return "PTT read cost" }

func (c *ReadCost) Run(ctx context.Context, s *Suite, _ string) error {
	rows := map[string]*ReadCostRow{}
	for range s.Opts.ReadCostReps {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, m := range ptttest.MeasureReadCosts(s.Opts.ReadCostReads) {
			r := rows[m.Name]
			if r == nil {
				r = &ReadCostRow{Name: m.Name}
				rows[m.Name] = r
				c.Rows = append(c.Rows, r)
			}
			switch {
			case m.Err != nil && r.Skipped == "":
				r.Skipped = m.Err.Error()
			case m.Err == nil:
				r.Ns = append(r.Ns, m.NsPerRead)
			}
		}
	}
	// A backend that worked in some repetitions keeps its numbers.
	for _, r := range c.Rows {
		if len(r.Ns) > 0 {
			r.Skipped = ""
		}
	}
	if len(c.Rows) == 0 {
		return errors.New("ptt measured nothing")
	}
	return nil
}

// Row returns the row named name, or nil.
func (c *ReadCost) Row(name string) *ReadCostRow {
	if c == nil {
		return nil
	}
	for _, r := range c.Rows {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Best is the fastest ns per read over the repetitions, and whether
// there is one: other work on the machine only ever slows a loop of
// reads down, so the fastest repetition is the read's own cost.
func (c *ReadCost) Best(name string) (float64, bool) {
	r := c.Row(name)
	if r == nil || len(r.Ns) == 0 {
		return 0, false
	}
	return Summarize(r.Ns).Min, true
}
