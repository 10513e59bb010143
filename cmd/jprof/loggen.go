package main

import (
	"flag"
	"io"
	"os"

	"github.com/libjprof/libjprof/reports"
)

// loggen converts a log-gen, binary or text, to JProf's text format. A
// file that reached GENMAX, or that the agent cut after a write error,
// gives its copy the same closing line, and jprof warns. The copy's
// header is the file's: its readers warn from the closing line, so a
// note there would say it twice.
func loggen(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loggen", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("loggen: extra argument %q: it takes one log-gen file", pos[1])
	}
	if len(pos) != 1 {
		return usagef("loggen needs one log-gen file")
	}
	if err := checkOutFile(*out, pos[0]); err != nil {
		return err
	}
	if fi, err := os.Stat(pos[0]); err == nil && fi.Mode().IsRegular() && *out == "" {
		// Standard output cannot be taken back: the file is read
		// through once first, so that one it cannot read prints
		// nothing, as a file output is left unwritten (the events go
		// out as they are read, not held: a log-gen can be gigabytes).
		// A pipe cannot be read twice: it is copied as it comes.
		if err := readLogGen(pos[0], func(r *reports.LogGenReader) error {
			for r.Next() {
			}
			return r.Err()
		}); err != nil {
			return err
		}
	}
	return output(*out, stdout, func(w io.Writer) error {
		return readLogGen(pos[0], func(r *reports.LogGenReader) error {
			notes := r.Notes()
			lw := reports.NewLogGenWriter(w, r.PID(), r.Metrics(), notes...)
			for r.Next() {
				if err := lw.Write(r.Event()); err != nil {
					return err
				}
			}
			if err := r.Err(); err != nil {
				return err
			}
			if tr := r.Truncated(); tr != "" {
				warnTruncated(pos[0], tr)
				if err := lw.Truncated(tr); err != nil {
					return err
				}
			}
			if sl := r.SizeLimited(); sl != "" {
				warnSizeLimited(pos[0], sl)
				if err := lw.SizeLimited(sl); err != nil {
					return err
				}
			}
			return lw.Flush()
		})
	})
}
