package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/reports"
)

// calibrate is seed 004's post-processing calibration: a log-gen written
// with raw deltas and sequence keys (the agent's RAWGEN) is calibrated
// after the run with the final minima (or a table's, where lower), so that
// the first events of a run are treated like the last. It reads the file
// twice: once for the minima, once to write.
func calibrate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	tablePath := fs.String("table", "", "calibration `table` for the environmental values, and the minima of keys the file has few events of (default: the table the agent used, as the log-gen header names it; none: the file's minima only)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("calibrate: extra argument %q: it takes one log-gen file", pos[1])
	}
	if len(pos) != 1 {
		return usagef("calibrate needs one log-gen file")
	}
	in := pos[0]
	if err := checkOutFile(*out, in, *tablePath); err != nil {
		return err
	}

	var tables []*calibration.Table
	if *tablePath != "" && *tablePath != calibration.FromNone {
		f, err := os.Open(*tablePath)
		if err != nil {
			return fmt.Errorf("-table: %w", err)
		}
		tables, err = calibration.ParseAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", *tablePath, err)
		}
	}

	// Pass 1: the minimum of every key, per metric.
	var over [][]uint64 // [metric][key]: min - kept (calibration.Entry.Overhead)
	var metrics []reports.Metric
	var notes []string
	var pid int
	var sources []string // the tables used, for the output's note
	err = readLogGen(in, func(r *reports.LogGenReader) error {
		metrics, notes, pid = r.Metrics(), r.Notes(), r.PID()
		if len(metrics) == 0 {
			return fmt.Errorf("%s has no metrics to calibrate", in)
		}
		tabs := make([]*calibration.Table, len(metrics))
		mins := make([][]uint64, len(metrics))
		for k, m := range metrics {
			switch *tablePath {
			case "":
				t, desc, err := agentTable(notes, m.Name)
				if err != nil {
					return fmt.Errorf("%s: %w", in, err)
				}
				tabs[k] = t
				if t != nil {
					sources = append(sources, desc)
				}
			case calibration.FromNone:
			default:
				t, err := pickTable(tables, notes, m.Name)
				if err != nil {
					return fmt.Errorf("%s: -table %s: %w", in, *tablePath, err)
				}
				tabs[k] = t
				sources = append(sources, "table "+filepath.Base(*tablePath))
			}
			mins[k] = calibration.NewTable(calibration.Provenance{}).Minima() // all unseen
		}
		counts := make([]uint64, calibration.NKeys)
		for r.Next() {
			ev := r.Event()
			if !ev.HasKey {
				return fmt.Errorf("%s: events carry no sequence keys: write the log-gen with the agent's RAWGEN option", in)
			}
			if ev.Unclean {
				continue // calibrated, but not learnt from: as the agent does
			}
			counts[ev.Key]++
			for k, v := range ev.Values {
				mins[k][ev.Key] = min(mins[k][ev.Key], v)
			}
		}
		// The agent's rule: a key's own minimum when the file has enough
		// of its events, else the table's where lower.
		over = make([][]uint64, len(metrics))
		for k, m := range metrics {
			over[k] = make([]uint64, calibration.NKeys)
			for key := range over[k] {
				e := calibration.Entry{
					Min: calibration.FinalMinimum(mins[k][key], counts[key], tabs[k], calibration.Key(key)),
					Env: calibration.DefaultEnv(m.Name),
				}
				if tabs[k] != nil {
					te := tabs[k].Lookup(calibration.Key(key))
					e.Env, e.Excess = te.Env, te.Excess
				}
				over[k][key] = e.Overhead()
			}
		}
		return r.Err()
	})
	if err != nil {
		return err
	}

	// Pass 2: every value less its key's overhead (an unclean event keeps
	// its raw value, as in the agent). A value below its key's overhead
	// is written negative, not 0: the agent removes count × overhead from
	// each context and only its total stops at zero, so the rebuilt tree
	// matches the agent's only if each event takes its whole overhead.
	for i := range metrics {
		metrics[i].Calibrated = true
	}
	source := "the minima of this file"
	if len(sources) > 0 {
		source += fmt.Sprintf(" (%s for keys seen fewer than %d times)", strings.Join(sources, ", "), calibration.OwnMinimumEvents)
	}
	notes = append(notes, fmt.Sprintf("Calibration: post-processed by jprof calibrate from %s with %s", filepath.Base(in), source))
	return output(*out, stdout, func(w io.Writer) error {
		lw := reports.NewLogGenWriter(w, pid, metrics, notes...)
		cal := make([]uint64, len(metrics))
		err := readLogGen(in, func(r *reports.LogGenReader) error {
			for r.Next() {
				ev := r.Event()
				for k, v := range ev.Values {
					cal[k] = v - over[k][ev.Key] // may wrap: negative
					if ev.Unclean {
						cal[k] = v // as the agent: neither learnt from nor calibrated
					}
				}
				ev.Values, ev.HasKey, ev.Key = cal, false, 0
				if err := lw.Write(ev); err != nil {
					return err
				}
			}
			if err := r.Err(); err != nil {
				return err
			}
			if tr := r.Truncated(); tr != "" {
				warnTruncated(in, tr)
				return lw.Truncated(tr)
			}
			if sl := r.SizeLimited(); sl != "" {
				// As loggen: the copy ends as the file does.
				warnSizeLimited(in, sl)
				return lw.SizeLimited(sl)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return lw.Flush()
	})
}

func readLogGen(path string, read func(*reports.LogGenReader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := reports.NewLogGenReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return read(r)
}

// pickTable is the table of ts that fits the log-gen's run for metric,
// by the agent's rule for CALTABLE (calibration.Table.Fits): another
// backend's, event source's, reads' or clock's minima would remove the
// wrong amounts. The run is the one the header names (calibration.RunNote);
// a log-gen of an agent from before that note is taken to be the run of
// the table the agent used, which it checked, and one that names neither
// cannot be checked, so no table is taken for it.
func pickTable(ts []*calibration.Table, notes []string, metric string) (*calibration.Table, error) {
	run, ok := logGenRun(notes, metric)
	if !ok {
		t, _, err := agentTable(notes, metric)
		if err != nil || t == nil {
			return nil, fmt.Errorf("the log-gen does not say which JVM, PTT backend and event path its %s was measured on (an older agent, without a table), so no table can be checked against it: -table none calibrates with the file's minima alone", metric)
		}
		run = t.RunOf()
	}
	var errs []string
	for _, t := range ts {
		err := t.Fits(run)
		if err == nil {
			return t, nil
		}
		errs = append(errs, err.Error())
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("no table in the file")
	}
	// As the agent says it for a CALTABLE that does not fit.
	return nil, fmt.Errorf("no table for this run (JVM %q %s, metric %s, backend %s, event source %s, %s PTT reads per event, %s clock): %s",
		run.JVM, run.JVMVersion, metric, run.Backend, run.Source, run.Reads, run.Clock, strings.Join(errs, "; "))
}

// logGenRun is the run the header's calibration.RunNote names for metric.
func logGenRun(notes []string, metric string) (calibration.Run, bool) {
	for _, line := range notes {
		if run, ok := calibration.ParseRunNote(line); ok && run.Metric == metric {
			return run, true
		}
	}
	return calibration.Run{}, false
}

// agentTable finds the table the agent calibrated metric with, by the
// header note that names it (calibration.Note): a built-in table of this
// build, or the CALTABLE file if it is still there and still holds it.
// A log-gen without the note (an older agent, or CALTABLE=none) has none.
// A table that cannot be found is an error: calibrating without it would
// not reproduce the agent's numbers.
func agentTable(notes []string, metric string) (*calibration.Table, string, error) {
	for _, line := range notes {
		n, ok := calibration.ParseNote(line)
		if !ok || n.Metric != metric {
			continue
		}
		switch n.From {
		case calibration.FromBuiltIn:
			if t, ok := calibration.EmbeddedByID(n.ID); ok {
				return t, "built-in table " + n.ID, nil
			}
			return nil, "", fmt.Errorf("the agent calibrated %s with a built-in table this jprof does not have (%s): use the jprof of the same build, or -table FILE, or -table none", metric, n.ID)
		case calibration.FromCALTABLE:
			f, err := os.Open(n.File)
			if err == nil {
				ts, perr := calibration.ParseAll(f)
				f.Close()
				if t, ok := calibration.ByID(ts, n.ID); perr == nil && ok {
					return t, "table " + n.File, nil
				}
			}
			return nil, "", fmt.Errorf("the agent calibrated %s with CALTABLE %s, which no longer holds that table (%s): give it with -table FILE, or -table none", metric, n.File, n.ID)
		}
		return nil, "", nil
	}
	return nil, "", nil
}
