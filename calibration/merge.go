package calibration

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MismatchError says why a table does not fit a run, or why two tables
// cannot be merged: minima measured on another JVM, metric, backend or
// machine do not describe this one's glue code.
type MismatchError struct {
	Field string // provenance field: "jvm", "jvm-version", "metric", ...
	Table string // the table's value ("" when it has none)
	Want  string // the run's (or the other table's) value
}

func (e *MismatchError) Error() string {
	if e.Table == "" {
		return fmt.Sprintf("calibration table has no %s (this run: %q)", e.Field, e.Want)
	}
	return fmt.Sprintf("calibration table is for %s %q, this run has %q", e.Field, e.Table, e.Want)
}

// JavaMajor returns the Java feature release of a java.version or
// java.vm.version string: 17 for "17.0.15+6-Debian-1deb12u1", 21 for
// "21-ea+5", 8 for "1.8.0_392".
func JavaMajor(version string) (int, bool) {
	v := version
	if rest, ok := strings.CutPrefix(v, "1."); ok {
		v = rest
	}
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil {
		return 0, false
	}
	return n, true
}

// sameMajor compares versions by feature release, or exactly when either
// cannot be read.
func sameMajor(a, b string) bool {
	ma, oka := JavaMajor(a)
	mb, okb := JavaMajor(b)
	if oka && okb {
		return ma == mb
	}
	return a == b
}

// MatchesSource reports whether the table was made with the given event
// source (a *MismatchError if not).
func (t *Table) MatchesSource(source string) error {
	if t.EventSource() != source {
		return &MismatchError{Field: fSource, Table: t.EventSource(), Want: source}
	}
	return nil
}

// MatchesReads reports whether the table's minima were taken with the
// given PTT reads per event, "1" or "2" (a *MismatchError if not): the
// second read leaves the event's own work out of every delta, so the two
// have different minima.
func (t *Table) MatchesReads(reads string) error {
	if t.PTTReads() != reads {
		return &MismatchError{Field: fReads, Table: t.PTTReads(), Want: reads}
	}
	return nil
}

// MatchesPath reports whether the table's minima were taken on the given
// path (a *MismatchError naming the first field that differs if not).
func (t *Table) MatchesPath(p Path) error {
	if err := t.MatchesSource(p.Source); err != nil {
		return err
	}
	if err := t.MatchesReads(p.Reads); err != nil {
		return err
	}
	if t.PTTClock() != p.Clock {
		return &MismatchError{Field: fClock, Table: t.PTTClock(), Want: p.Clock}
	}
	return nil
}

// Matches checks that the table fits a run on the given JVM (java.vm.name),
// JVM version (java.vm.version; the Java feature release must be the same),
// metric and PTT backend. An empty argument is not checked. The error, a
// *MismatchError, names the first field that differs.

func (t *Table) Matches(jvm, version, metric, backend string) error {
	checks := []struct {
		field, table, run string
		same              func(a, b string) bool
	}{
		{fMetric, t.Metric, metric, strings.EqualFold},
		{fBackend, t.Backend, backend, strings.EqualFold},
		{fJVM, t.JVM, jvm, func(a, b string) bool { return a == b }},
		{fVersion, t.JVMVersion, version, sameMajor},
	}
	for _, c := range checks {
		if c.run == "" {
			continue
		}
		if c.table == "" || !c.same(c.table, c.run) {
			return &MismatchError{Field: c.field, Table: c.table, Want: c.run}
		}
	}
	return nil
}

// Merge combines tables of the same metric measured on the same JVM,
// backend and machine (for instance the tables of several trainer runs):
//
//   - Min is the minimum of the tables' minima (Unseen only if no table saw
//     the key), Count the sum of their counts;
//   - Env comes from the tables whose EnvSource is EnvTrainer: measured
//     values win over defaults. Where several measured tables hold a key,
//     the smallest value is taken: an Env too large would leave profiler
//     overhead in the program's numbers, and calibration as a whole errs on
//     the side of removing glue (minima are upper bounds of it). Keys no
//     measured table holds take the smallest Env of the other tables;
//   - provenance: the identity fields (metric, backend, jvm, jvm-version,
//     arch, cpu) must agree where both tables have them, and the merged
//     table has every one that any table has; Runs add up; the date is the
//     latest; Tool is the first one given; Notes are kept once each, in
//     order; EnvSource is EnvTrainer if any table's is.
//
// It refuses tables whose identity fields differ, with a *MismatchError
// naming the field.
func Merge(tables ...*Table) (*Table, error) {
	if len(tables) == 0 {
		return nil, errors.New("calibration: nothing to merge")
	}
	for i, t := range tables {
		if t == nil {
			return nil, fmt.Errorf("calibration: merge: table %d is nil", i)
		}
	}
	out := NewTable(Provenance{})
	measuredEnv := map[Key]bool{}
	for i, t := range tables {
		if err := t.MatchesPath(tables[0].Path()); err != nil {
			return nil, fmt.Errorf("calibration: merge: table %d: %w", i, err)
		}
		out.Source, out.Reads, out.Clock = tables[0].Source, tables[0].Reads, tables[0].Clock
		if err := mergeProvenance(&out.Provenance, &t.Provenance); err != nil {
			return nil, fmt.Errorf("calibration: merge: table %d: %w", i, err)
		}
		measured := t.EnvSource == EnvTrainer
		for k, e := range t.Entries {
			cur, ok := out.Entries[k]
			if !ok {
				out.Entries[k] = e
				measuredEnv[k] = measured
				continue
			}
			cur.Min = min(cur.Min, e.Min)
			cur.Count += e.Count
			switch {
			case measured && !measuredEnv[k]:
				cur.Env, cur.Excess = e.Env, e.Excess
				measuredEnv[k] = true
			case measured == measuredEnv[k]:
				cur.Env = min(cur.Env, e.Env)
				cur.Excess = min(cur.Excess, e.Excess)
			}
			out.Entries[k] = cur
		}
	}
	return out, nil
}

func mergeProvenance(dst, src *Provenance) error {
	idents := []struct {
		field    string
		dst, src *string
		same     func(a, b string) bool
	}{
		{fMetric, &dst.Metric, &src.Metric, strings.EqualFold},
		{fBackend, &dst.Backend, &src.Backend, strings.EqualFold},
		{fJVM, &dst.JVM, &src.JVM, nil},
		{fVersion, &dst.JVMVersion, &src.JVMVersion, nil},
		{fArch, &dst.Arch, &src.Arch, nil},
		{fCPU, &dst.CPU, &src.CPU, nil},
	}
	for _, f := range idents {
		switch {
		case *f.src == "":
		case *f.dst == "":
			*f.dst = *f.src
		case f.same != nil && f.same(*f.dst, *f.src), *f.dst == *f.src:
		default:
			return &MismatchError{Field: f.field, Table: *f.src, Want: *f.dst}
		}
	}
	dst.Runs += src.Runs
	if src.Date.After(dst.Date) {
		dst.Date = src.Date
	}
	if dst.Tool == "" {
		dst.Tool = src.Tool
	}
	if src.EnvSource == EnvTrainer || dst.EnvSource == "" {
		dst.EnvSource = src.EnvSource
	}
	for _, n := range src.Notes {
		if !slices.Contains(dst.Notes, n) {
			dst.Notes = append(dst.Notes, n)
		}
	}
	return nil
}
