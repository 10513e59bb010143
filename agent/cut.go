package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/reports"
)

// A write error (most often a full disk) must not lose what a file
// already holds: a log-gen of gigabytes that fails near its end keeps
// everything before. Every file the agent writes over time or in bulk
// (log-rt, log-gen, log-jita2n, log-jtnm) marks where its lines, rows or
// frames end; after a write error it is cut at the last mark, ends with
// reports.TruncationLine (why, and how many units were not written) and
// is renamed into place all the same, and stderr and log-msg say so.
// Only a file whose first whole unit could not be written is lost.

// commitCut puts tmp in place at path, cut after a write error if it
// had one; total is how many units (unit: "events", "rows", ...) the
// writer produced in all. It returns the error that kept the file from
// appearing at all, after saying it.
func (a *agent) commitCut(tmp *atomicfile.File, path string, total uint64, unit string) (*atomicfile.Cut, error) {
	cut, err := tmp.CommitCut(func(c atomicfile.Cut) string {
		return reports.TruncationLine(c.Bytes, errnoText(c.Err), total-c.Units, unit)
	})
	if err != nil {
		return nil, err
	}
	if cut != nil {
		msg := fmt.Sprintf("%s cut short by a write error after %d bytes (%s): %d of %d %s not written; the file ends with a line that says so",
			filepath.Base(path), cut.Bytes, errnoText(cut.Err), total-cut.Units, total, unit)
		if cut.MarkerErr != nil {
			msg = fmt.Sprintf("%s cut short by a write error after %d bytes (%s): %d of %d %s not written; the line that would say so could not be written either (%s): the file ends at its last whole unit",
				filepath.Base(path), cut.Bytes, errnoText(cut.Err), total-cut.Units, total, unit, errnoText(cut.MarkerErr))
		}
		say("libjprof: warning: %s", msg)
		a.log.Warn(msg, zap.String("file", path), zap.Error(cut.Err))
	}
	return cut, nil
}

// errnoText is the system's words for a file error ("no space left on
// device"), without the temporary file's name.
func errnoText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
