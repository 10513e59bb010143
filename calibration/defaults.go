package calibration

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
)

// shipped holds the tables built into the library. README.txt keeps the
// directory non-empty (go:embed needs a file) until trainer runs add
// tables.
//
//go:embed tables
var shipped embed.FS

// Embedded parses every table built into the library (tables/*.cal), in
// file name order. A file may hold several tables.
func Embedded() ([]*Table, error) {
	return loadFS(shipped, "tables")
}

func loadFS(fsys fs.FS, dir string) ([]*Table, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.cal"))
	if err != nil {
		return nil, err
	}
	var out []*Table
	for _, n := range names {
		f, err := fsys.Open(n)
		if err != nil {
			return nil, err
		}
		ts, err := ParseAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, ts...)
	}
	return out, nil
}

// Default returns the built-in table for a run on the given JVM
// (java.vm.name), version (java.vm.version), metric and PTT backend, if
// one matches (see Table.Matches: same metric, backend, JVM and Java
// feature release). Among several, it prefers the exact JVM version, then
// the most runs, then the newest. It returns a copy the caller may change.
func Default(jvm, version, metric, backend string) (*Table, bool) {
	return DefaultFor(Path{Source: SourceJVMTI, Reads: "2", Clock: ClockVDSO}, jvm, version, metric, backend)
}

// DefaultFor is Default for the tables taken on path p. It parses the
// tables' headers to choose, then the chosen file alone: every JVM start
// asks, and the rows of all the tables are most of a megabyte.
func DefaultFor(p Path, jvm, version, metric, backend string) (*Table, bool) {
	// The embedded tables are checked by the package's tests; a bad one
	// must not stop a profiling run, which can calibrate online: errors
	// are no table.
	names, err := fs.Glob(shipped, "tables/*.cal")
	if err != nil {
		return nil, false
	}
	var same []*Table
	from := map[*Table]string{}
	for _, n := range names {
		b, err := shipped.ReadFile(n)
		if err != nil {
			return nil, false
		}
		hdr := b
		// One table to a file, as the trainer writes them: its header
		// is the comment lines before its first row.
		if bytes.Count(b, []byte(formatLine)) == 1 {
			if i := bytes.Index(b, []byte("\n# sequence")); i >= 0 {
				hdr = b[:i+1]
			}
		}
		ts, err := ParseAll(bytes.NewReader(hdr))
		if err != nil {
			return nil, false
		}
		for _, t := range ts {
			if t.MatchesPath(p) == nil {
				same = append(same, t)
				from[t] = n
			}
		}
	}
	best := choose(same, jvm, version, metric, backend)
	if best == nil {
		return nil, false
	}
	if len(best.Entries) > 0 { // a file of several tables, parsed whole
		return best.Clone(), true
	}
	b, err := shipped.ReadFile(from[best]) // the header chosen: its whole table
	if err != nil {
		return nil, false
	}
	ts, err := ParseAll(bytes.NewReader(b))
	if err != nil || len(ts) != 1 {
		return nil, false
	}
	return ts[0], true
}

func pick(ts []*Table, jvm, version, metric, backend string) (*Table, bool) {
	if best := choose(ts, jvm, version, metric, backend); best != nil {
		return best.Clone(), true
	}
	return nil, false
}

// choose returns the table of ts a run should use (see Default), nil if
// none matches.
func choose(ts []*Table, jvm, version, metric, backend string) *Table {
	var best *Table
	better := func(t, than *Table) bool {
		if te, be := t.JVMVersion == version, than.JVMVersion == version; te != be {
			return te
		}
		if t.Runs != than.Runs {
			return t.Runs > than.Runs
		}
		return t.Date.After(than.Date)
	}
	for _, t := range ts {
		if t.Matches(jvm, version, metric, backend) != nil {
			continue
		}
		if best == nil || better(t, best) {
			best = t
		}
	}
	return best
}
