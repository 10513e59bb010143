package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/reports"
)

// The typical excess of a key's overhead over its minimum. Calibration
// removes each key's minimum, the only figure that is safe in every
// context; but the event path jitters from one event to the next (by tens
// of ns for an entry in the interpreter), so the typical event costs more
// than the minimum, and the difference stays in every method's time. In
// the trainer's cases an event's delta is the overhead and a little glue
// of its own (the glue is in the minimum too), so a key's median delta
// less its minimum is that jitter: the table's Excess, which calibration
// removes too, out of the glue that Env keeps (calibration.Entry.Kept).

// excessMinEvents is how many clean events a key needs in the excess run
// for its median to be used.
const excessMinEvents = 1000

// excessBuckets bounds the per-key histogram of deltas (ns, or the
// metric's unit): larger deltas count in the last bucket, above any
// median that matters.
const excessBuckets = 4096

// excessRun runs the trainer once more under the agent, writing raw
// deltas with their sequence keys (RAWGEN), and returns the median clean
// delta of every key with at least excessMinEvents of them, and how many
// events were read.
func excessRun(ctx context.Context, cfg *Config, dir string) (map[calibration.Key]uint64, int64, error) {
	if _, err := trainerRun(ctx, cfg, dir, "RAWGEN"); err != nil {
		return nil, 0, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "log-gen*"))
	if len(files) != 1 {
		return nil, 0, fmt.Errorf("want one log-gen in %s, found %d", dir, len(files))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r, err := reports.NewLogGenReader(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", files[0], err)
	}
	hist := map[calibration.Key][]uint32{}
	var n int64
	for r.Next() {
		ev := r.Event()
		n++
		if !ev.HasKey || ev.Unclean || len(ev.Values) == 0 {
			continue
		}
		k := calibration.Key(ev.Key)
		h := hist[k]
		if h == nil {
			h = make([]uint32, excessBuckets)
			hist[k] = h
		}
		h[min(ev.Values[0], excessBuckets-1)]++
	}
	if err := r.Err(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", files[0], err)
	}
	med := map[calibration.Key]uint64{}
	for k, h := range hist {
		var total uint64
		for _, c := range h {
			total += uint64(c)
		}
		if total < excessMinEvents {
			continue
		}
		var below uint64
		for v, c := range h {
			below += uint64(c)
			if 2*below >= total {
				med[k] = uint64(v)
				break
			}
		}
	}
	return med, n, nil
}

// ApplyExcess sets each seen key's Excess to its median delta less its
// minimum (nothing where the median is not above it), and returns how many
// keys it set.
func ApplyExcess(t *calibration.Table, medians map[calibration.Key]uint64) int {
	n := 0
	for k, m := range medians {
		e, ok := t.Entries[k]
		if !ok || !e.Seen() || m <= e.Min {
			continue
		}
		e.Excess = m - e.Min
		t.Entries[k] = e
		n++
	}
	return n
}
