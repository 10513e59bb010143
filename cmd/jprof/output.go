package main

// Where a command's output goes: standard output, or a file written
// whole or not at all, never over one of the command's inputs.

import (
	"fmt"
	"io"
	"os"

	"github.com/libjprof/libjprof/internal/atomicfile"
)

// checkOutFile refuses an -o that would destroy what the command reads or
// could not be written: a directory (the rename at the end would fail
// only after all the work, with a temporary file's name in the error), or
// one of the input files, which the rename would replace with output made
// from it. Inputs are compared as files (os.SameFile: symbolic links and
// hard links followed), not as names. Commands call it before they read
// anything; "" is standard output.
func checkOutFile(out string, inputs ...string) error {
	if out == "" {
		return nil
	}
	fo, err := os.Stat(out)
	if err != nil {
		return nil // not there yet (or not reachable: the write says why)
	}
	if fo.IsDir() {
		return usagef("-o %s is a directory: give a file name for the output", out)
	}
	for _, in := range inputs {
		if fi, err := os.Stat(in); err == nil && os.SameFile(fo, fi) {
			return usagef("-o %s is the input file %s: writing it would overwrite what is being read; give another output file", out, in)
		}
	}
	return nil
}

// output writes with write to path (complete or not at all: see
// atomicfile), or to stdout if path is empty. A directory is refused
// before write runs (checkOutFile), whichever command got here.
func output(path string, stdout io.Writer, write func(io.Writer) error) error {
	return outputPerm(path, stdout, 0o644, write)
}

// outputPerm is output with the file's mode perm (0600: see liveHeapDump).
func outputPerm(path string, stdout io.Writer, perm os.FileMode, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	if err := checkOutFile(path); err != nil {
		return err
	}
	if err := atomicfile.WritePerm(path, perm, write); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
