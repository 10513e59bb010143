package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
)

// jvmIdentity is what a calibration table must match.
type jvmIdentity struct {
	name, version, arch string
}

func readJVMIdentity() jvmIdentity {
	return jvmIdentity{
		name:    jvmti.SystemProperty("java.vm.name"),
		version: jvmti.SystemProperty("java.vm.version"),
		arch:    jvmti.SystemProperty("os.arch"),
	}
}

// loadCalibration reads, per metric, the minima and environmental values
// of CALTABLE= or else of a built-in table that matches this JVM, metric
// and PTT backend; without one, minima come from the run alone. The
// environmental values go to the hot path (for log-gen); the minima serve
// the keys this run sees too rarely (newCalibrator). A CALTABLE that does
// not match is refused: another JVM's or backend's numbers would remove
// the wrong amounts.
func (a *agent) loadCalibration() error {
	notes, err := a.readCalibration()
	a.notes = append(a.notes, notes...)
	return err
}

// readCalibration is loadCalibration, its notes returned.
func (a *agent) readCalibration() ([]string, error) {
	var notes []string
	a.env = make([][]uint64, len(a.metrics))
	a.kept = make([][]int64, len(a.metrics))
	a.tables = make([]*calibration.Table, len(a.metrics))
	var given []*calibration.Table
	if a.opts.CalTable != "" && a.opts.CalTable != "none" {
		f, err := os.Open(a.opts.CalTable)
		if err != nil {
			return nil, fmt.Errorf("CALTABLE: %w", err)
		}
		given, err = calibration.ParseAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("CALTABLE %s: %w", a.opts.CalTable, err)
		}
	}
	for k, m := range a.metrics {
		a.env[k] = make([]uint64, engine.NKeys)
		a.kept[k] = make([]int64, engine.NKeys)
		for i := range a.env[k] {
			a.env[k][i] = calibration.DefaultEnv(m.String())
			a.kept[k][i] = int64(a.env[k][i])
		}
		var tab *calibration.Table
		var source string
		from := calibration.FromNone
		run := calibration.Run{JVM: a.jvm.name, JVMVersion: a.jvm.version, Metric: m.String(), Backend: a.ptt.Backend.String(), Path: a.calPath()}
		// The run as a table must fit it, for jprof calibrate -table,
		// which checks a table given after the run by the same rule.
		notes = append(notes, calibration.RunNote(run))
		if a.opts.CalTable == "none" {
			// Asked for: minima from this run only.
		} else if a.opts.CalTable != "" {
			var errs []string
			for _, t := range given {
				err := t.Fits(run)
				if err == nil {
					tab = t
					break
				}
				errs = append(errs, err.Error())
			}
			if tab == nil {
				return nil, fmt.Errorf("CALTABLE %s has no table for this run (JVM %q %s, metric %s, backend %s, event source %s, %s PTT reads per event, %s clock): %s",
					a.opts.CalTable, a.jvm.name, a.jvm.version, m, a.ptt.Backend, a.source.Name(), pttReads(), a.calPath().Clock, strings.Join(errs, "; "))
			}
			source, from = "table "+a.opts.CalTable, calibration.FromCALTABLE
		} else if t, ok := calibration.DefaultFor(a.calPath(), a.jvm.name, a.jvm.version, m.String(), a.ptt.Backend.String()); ok {
			tab, source, from = t, "built-in table", calibration.FromBuiltIn
		}
		// The table by its identity, for the reader and for jprof
		// calibrate, which takes the same built-in table by default.
		notes = append(notes, calibration.Note(m.String(), from, tab, a.opts.CalTable))
		if tab != nil {
			if w := a.tableDiffers(tab); w != "" {
				notes = append(notes, "Warning: "+w)
				a.log.Warn(w)
			}
		}
		if tab == nil {
			p := a.calPath()
			note := fmt.Sprintf("Calibration %s: no table for JVM %q %s, backend %s, event source %s, %s PTT reads per event and the %s clock; minima found online in this run",
				m, a.jvm.name, a.jvm.version, a.ptt.Backend, p.Source, p.Reads, p.Clock)
			if a.opts.CalTable == "none" {
				note = fmt.Sprintf("Calibration %s: CALTABLE=none: minima found online in this run", m)
			}
			notes = append(notes, note)
			a.log.Info(note)
		} else {
			a.tables[k] = tab
			for i := range a.env[k] {
				a.env[k][i] = tab.Lookup(calibration.Key(i)).Env
			}
			a.kept[k] = tab.Kept()
			note := fmt.Sprintf("Calibration %s: minima of keys seen fewer than %d times in this run from %s (JVM %s %s, backend %s, event source %s, %d runs, %s); environmental overhead from it (%s)",
				m, calibration.OwnMinimumEvents, source, tab.JVM, tab.JVMVersion, tab.Backend, tab.EventSource(), tab.Runs, tab.Date.Format("2006-01-02"), tab.EnvSource)
			if tab.HasExcess() {
				note += ", and each key's typical excess over its minimum, removed too"
			}
			notes = append(notes, note)
			a.log.Info(note)
		}
		if err := engine.SetEnv(k, a.kept[k]); err != nil {
			return nil, err
		}
		if tab := a.tables[k]; tab != nil {
			mins := make([]uint64, engine.NKeys)
			for i := range mins {
				mins[i] = tab.Lookup(calibration.Key(i)).Min
			}
			if err := engine.SetTableMinima(k, mins); err != nil {
				return nil, err
			}
		}
	}
	return notes, nil
}

// tableDiffers says how a calibration table's JVM build and CPU differ
// from this run's, "" when they are the same: a table matches any build
// of the same Java feature release, but the glue it measured may not.
func (a *agent) tableDiffers(tab *calibration.Table) string {
	var diffs []string
	if tab.JVMVersion != a.jvm.version {
		diffs = append(diffs, fmt.Sprintf("JVM build %s, this JVM is %s", tab.JVMVersion, a.jvm.version))
	}
	if cpu := cpuModel(); tab.CPU != "" && tab.CPU != cpu {
		diffs = append(diffs, fmt.Sprintf("CPU %q, this machine's is %q", tab.CPU, cpu))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("calibration table %s was made on another %s: its minima serve only keys this run sees fewer than %d times, and its environmental values may be off (make train makes a table for this JVM)",
		tab.Metric, strings.Join(diffs, ", and "), calibration.OwnMinimumEvents)
}

// writeCalOut writes the run's minima as calibration tables (CALOUT=),
// one per metric, for the trainer to merge.
func (a *agent) writeCalOut() {
	mins := engine.Minima()
	if mins == nil {
		a.log.Warn("CALOUT: nothing to write (no metrics, or NOCALIBRATE)")
		return
	}
	var counts []uint64
	engine.WithThreads(func(ts []engine.Thread) { counts = keyCounts(ts, nil, false) })
	var tabs []*calibration.Table
	for k, m := range a.metrics {
		t := calibration.NewTable(calibration.Provenance{
			JVM: a.jvm.name, JVMVersion: a.jvm.version, Arch: a.jvm.arch,
			Metric: m.String(), Backend: a.ptt.Backend.String(), CPU: cpuModel(),
			Date: time.Now().UTC(), Runs: 1, Tool: "libjprof agent", EnvSource: calibration.EnvDefault, Source: a.source.Name(),
			Reads: pttReads(), Clock: a.calPath().Clock,
		})
		for key, mn := range mins[k] {
			if mn == calibration.Unseen {
				continue
			}
			t.Entries[calibration.Key(key)] = calibration.Entry{Min: mn, Env: a.env[k][key], Count: counts[key]}
		}
		tabs = append(tabs, t)
	}
	err := atomicfile.Write(a.opts.CalOut, func(w io.Writer) error { return calibration.WriteAll(w, tabs...) })
	if err != nil {
		say("libjprof: CALOUT: %v", err)
		a.log.Error("CALOUT not written", zap.Error(err))
		return
	}
	a.files = append(a.files, a.opts.CalOut)
	a.log.Info("calibration table written", zap.String("file", a.opts.CalOut))
}

// cpuModel is the "model name" of /proc/cpuinfo, for table provenance.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

// calPath is the run's per-event path as calibration tables name it.
func (a *agent) calPath() calibration.Path {
	clock := calibration.ClockVDSO
	if a.pttTSC {
		clock = calibration.ClockTSC
	}
	return calibration.Path{Source: a.source.Name(), Reads: pttReads(), Clock: clock}
}

// pttReads is the run's PTT reads per event as calibration tables name
// them: "2" with LATEREAD, else "1".
func pttReads() string {
	if engine.LateRead() {
		return "2"
	}
	return "1"
}
