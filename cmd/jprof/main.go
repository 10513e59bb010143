// Command jprof post-processes libjprof's output: arcflow reports, pprof
// conversion, and rebuilding a log-rt from a log-gen. The work is done by
// package reports; this file only parses the command line and opens
// files.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/reports"
)

const usage = `usage:
  jprof report xtree|xarc|xprof [--prune PCT] [-o OUT] FILE
  jprof pprof FILE -o OUT.pb.gz
  jprof logrt LOGGEN [-o OUT]
  jprof calibrate LOGGEN [--table TABLE] [-o OUT]
  jprof pttd [-socket PATH] [-mode 0660]
  jprof help

FILE is a log-rt or a log-gen (told apart by its first line).
  report   the arcflow reports: xtree (the call tree), xarc (each method
           with its callers and callees), xprof (flat, by base); --prune
           folds subtrees below PCT percent of the total into <pruned>
  pprof    a profile.proto for go tool pprof (top lists, flame graphs)
  logrt    rebuild the call tree of a log-gen and write it as a log-rt
  calibrate  calibrate a log-gen written with RAWGEN (raw deltas and
           sequence keys) with the final minima of the whole file, or a
           table's where lower; writes a calibrated log-gen
  pttd     the privileged PTT helper: loads the eBPF programs once and
           hands their maps to agents without CAP_BPF (agent option PTTD=)
Output goes to standard output unless -o is given.
`

// Exit statuses.
const (
	exitOK    = 0
	exitInput = 1 // bad or unreadable input, or failed output
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a command line mistake: exit status 2 and the usage text.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// run runs jprof with the arguments after the program name and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "jprof: %s\n%s", ue.msg, usage)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "jprof: %v\n", err)
		return exitInput
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("no command")
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	case "report":
		return report(args, stdout)
	case "pprof":
		return toPprof(args)
	case "flame":
		return flame(args, stdout)
	case "collapsed":
		return collapsed(args, stdout)
	case "logrt":
		return logrt(args, stdout)
	case "calibrate":
		return calibrate(args, stdout)
	case "pttd":
		return pttd(args, stdout)
	}
	return usagef("unknown command %q", cmd)
}

// parse parses flags anywhere among the arguments ("FILE -o OUT" as well
// as "-o OUT FILE") and returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func report(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	prune := fs.Float64("prune", 0, "fold subtrees below `PCT` percent of the total")
	out := fs.String("o", "", "output `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("report needs a report name and a file")
	}
	write := map[string]func(io.Writer, *reports.Profile) error{
		"xtree": reports.WriteXTree,
		"xarc":  reports.WriteXArc,
		"xprof": reports.WriteXProf,
	}[pos[0]]
	if write == nil {
		return usagef("unknown report %q: want xtree, xarc or xprof", pos[0])
	}
	if *prune < 0 || *prune > 100 {
		return usagef("--prune %v: want a percentage from 0 to 100", *prune)
	}
	p, _, err := load(pos[1])
	if err != nil {
		return err
	}
	if *prune > 0 {
		p = reports.Prune(p, *prune)
		p.Notes = append(p.Notes, fmt.Sprintf("pruned: subtrees below %v%% of the total are folded into %s", *prune, reports.PrunedName))
	}
	return output(*out, stdout, func(w io.Writer) error { return write(w, p) })
}

func toPprof(args []string) error {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("pprof needs one file")
	}
	if *out == "" {
		return usagef("pprof needs -o OUT.pb.gz")
	}
	p, _, err := load(pos[0])
	if err != nil {
		return err
	}
	pp, err := reports.ToPprof(p)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return output(*out, nil, pp.Write)
}

func flame(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("flame", flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.html)")
	value := fs.String("value", "", "`VALUE` shown first: calls or a metric (default: the first metric)")
	merge := fs.Bool("merge", false, "open with all threads merged")
	title := fs.String("title", "", "page `title` (default: pid and sequence)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("flame needs one file")
	}
	p, _, err := load(pos[0])
	if err != nil {
		return err
	}
	if *title == "" {
		*title = fmt.Sprintf("%s (pid %d)", filepath.Base(pos[0]), p.PID)
	}
	o := reports.FlameOptions{Value: *value, MergeThreads: *merge, Title: *title}
	if _, err := reports.SelectValue(p, o.Value); err != nil {
		return usagef("flame -value: %v", err)
	}
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteFlame(w, p, o) })
}

func collapsed(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("collapsed", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	value := fs.String("value", "", "`VALUE` per line: calls or a metric (default: the first metric)")
	merge := fs.Bool("merge", false, "leave the thread out of the stacks")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("collapsed needs one file")
	}
	p, _, err := load(pos[0])
	if err != nil {
		return err
	}
	o := reports.CollapsedOptions{Value: *value, MergeThreads: *merge}
	if _, err := reports.SelectValue(p, o.Value); err != nil {
		return usagef("collapsed -value: %v", err)
	}
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteCollapsed(w, p, o) })
}

func logrt(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("logrt", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("logrt needs one log-gen file")
	}
	p, format, err := load(pos[0])
	if err != nil {
		return err
	}
	if format != reports.FormatLogGen {
		return fmt.Errorf("%s is a %s, not a log-gen", pos[0], format)
	}
	p.Notes = append(p.Notes,
		fmt.Sprintf("rebuilt by jprof logrt from log-gen %s", filepath.Base(pos[0])),
		"log-gen has no DELTA, DS or IN: they read 0")
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteLogRT(w, p) })
}

// load reads a log-rt or log-gen; errors name the file.
func load(path string) (*reports.Profile, reports.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	p, format, err := reports.ReadProfile(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return p, format, nil
}

// output writes with write to path (complete or not at all: see
// atomicfile), or to stdout if path is empty.
func output(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	if err := atomicfile.Write(path, write); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
