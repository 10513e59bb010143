// Command jprof post-processes libjprof's output: arcflow reports, pprof
// conversion, and rebuilding a log-rt from a log-gen; and it profiles
// running JVMs (live.go: profile, start, stop, flush, status, list),
// loading the agent through the JDK's attach protocol (package attach).
// The reports' work is done by package reports; this file only parses
// the command line and opens files.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libjprof/libjprof/internal/buildinfo"
	"github.com/libjprof/libjprof/internal/nearest"
	"github.com/libjprof/libjprof/reports"
)

// command is one jprof command: its synopsis and description are its
// -h text, and, with the others', jprof's usage.
type command struct {
	name     string
	synopsis string // the arguments after "jprof name"
	short    string // one line for jprof's usage
	about    string // what it does; wrapped at 72 columns, no indent
	run      func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"profile", "[-d 30s] [-e EVENT] [-o OUT] PID|MAIN",
		"profile a running JVM for a while: attach, collect, detach, write",
		`Profile a running JVM (by pid, or by its main class or jar as jprof
list shows it) for -d, or until Ctrl-C, and write OUT where jprof runs.
libjprof is loaded into the JVM if it has no agent yet (the JDK's attach
protocol; no restart, no -agentpath), and taken out of the program's
way at the end: instrumented classes get their bytes back, timers stop.
A JVM in a container is named by its pid here. Only the JVM's user or
root may profile it. EVENT is one of:
` + eventHelp() + `The same agent answers later commands (and rtdriver); a JVM started
with -agentpath is profiled by its own agent, with its own source.`, liveProfile},
	{"list", "", "the running JVMs you may profile",
		`The running HotSpot JVMs the caller may profile (its own; all for
root), with their main class and whether libjprof is loaded; "(no
attach)" marks one started with -XX:+DisableAttachMechanism, which no
agent can be loaded into.`, liveList},
	{"start", "[-e EVENT] PID|MAIN", "attach if needed and start collecting",
		`Load libjprof into the JVM if needed (as profile does) and start
collecting; jprof stop writes the profile.`, liveStart},
	{"stop", "[-o OUT] PID|MAIN", "stop collecting, detach, write the profile",
		`Stop collecting, take the agent out of the program's way (as at the
end of profile) and write OUT.`, liveStop},
	{"flush", "[-o OUT] PID|MAIN", "write what was collected so far, collection goes on",
		`Write what was collected so far into OUT; collection goes on.`, liveFlush},
	{"heap", "[-o OUT] PID|MAIN", "a running JVM's class histogram: instances and bytes per class",
		`The JVM's class histogram (instances and bytes per class of the live
objects, after a full GC), asked of the JVM itself through the attach
protocol: no agent is loaded. Two of them, taken while the program runs,
make a heapdiff.`, liveHeap},
	{"heapdump", "[-o OUT.hprof] PID|MAIN", "a running JVM's heap as an HPROF file",
		`An HPROF dump of the JVM's live objects (Eclipse MAT and VisualVM open
it), written by the JVM in its own /tmp and copied to OUT.`, liveHeapDump},
	{"heapdiff", "[-n N] [-o OUT] A B", "the classes that grew from histogram A to B",
		`The classes whose instances or bytes changed from histogram A (the
earlier) to B, the most grown bytes first: where a leak shows. A and B
are jprof heap or rtdriver heap files (or jmap -histo output).`, heapDiff},
	{"status", "PID|MAIN", "the agent's state in one line",
		`The JVM's agent's state in one line: collecting or not, source,
mode, threads, events, files written.`, liveStatus},
	{"report", "xtree|xarc|xprof [-names FORM] [-prune PCT] [-o OUT] FILE | jlm [-sort KEY] [-o OUT] FILE",
		"the arcflow reports: call tree, callers and callees, flat profile; the lock monitor",
		`The arcflow reports: xtree (the call tree), xarc (each method with
its callers and callees), xprof (flat, by base). -prune folds subtrees
below PCT percent of the total into <pruned>. jlm prints a log-jlm file
(BCI with JLM): per monitor site and class, takes, contended and
recursive ones, hold and wait times, sorted by -sort gets (the default),
slow, miss, hold or wait.`, report},
	{"flame", "[-value V] [-merge] [-names FORM] [-title T] [-o OUT.html] FILE",
		"an interactive HTML flame graph, one self-contained file",
		`One self-contained interactive HTML flame graph (nothing is fetched
when it is viewed): search, click to zoom, calls or any metric, one
tree per thread or all merged, tooltips with self and total values.`, flame},
	{"collapsed", "[-value V] [-merge] [-names FORM] [-o OUT] FILE",
		"collapsed stacks for flamegraph.pl, speedscope and the like",
		`Collapsed stacks, "frame;frame;frame N" per line, for flamegraph.pl,
speedscope and other flame graph tools. V is calls or a metric (default:
the first metric, or calls if there is none); the thread is the first
frame unless -merge. ';' in names is written ','.`, collapsed},
	{"pprof", "[-names FORM] [-prune PCT] [-o OUT.pb.gz] FILE",
		"a profile.proto for go tool pprof",
		`A profile.proto for go tool pprof (top lists, graphs, flame graphs):
go tool pprof -http=: OUT.pb.gz. Each node is a sample that carries its
whole call path, so the file and the memory to write it grow with the
nodes times their depth; -prune folds subtrees below PCT percent of the
total into <pruned> first (a large tree: -prune 0.01). Function names
are in -names's form; the log-rt name, with the JVM's descriptor, is
each function's system name (pprof -raw shows it).`, toPprof},
	{"logrt", "LOGGEN [-o OUT]",
		"rebuild a log-gen's call tree as a log-rt",
		`Rebuild the call tree of a log-gen and write it as a log-rt.`, logrt},
	{"loggen", "LOGGEN [-o OUT]",
		"a log-gen (binary or text) as JProf's text lines",
		`Write a log-gen, the agent's compact binary one (GENFORMAT=binary,
the default) or a text one, as JProf's text lines.`, loggen},
	{"calibrate", "LOGGEN [-table TABLE|none] [-o OUT]",
		"calibrate a RAWGEN log-gen after the run",
		`Calibrate a log-gen written with RAWGEN (raw deltas and sequence
keys) with the final minima of the whole file, or a table's where
lower; writes a calibrated log-gen. The table is by default the one the
agent used, as the log-gen header names it (a built-in table of this
build, or the CALTABLE file); -table none uses the file's minima only.`, calibrate},
	{"pttd", "[-socket PATH] [-mode 0660] [-slots N]",
		"the privileged PTT helper for agents without CAP_BPF",
		`The privileged PTT helper: loads the eBPF programs once (as root, or
with CAP_BPF and CAP_PERFMON) and hands their maps to agents that
cannot load them (agent option PTTD=). -mode is the socket's
permission bits in octal: whoever may connect can read and write every
client's slots. -slots is the number of thread slots of the work area
(0: the eBPF backend's default); threads beyond it fall back to the
clock backend.`, pttd},
	{"help", "[COMMAND]", "this text, or a command's", `This text, or a command's.`, nil},
	{"version", "", "the version and commit of this build",
		`The version and commit of this build (also -version, --version).`, nil},
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage is jprof's usage text.
func usage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s\n", strings.TrimSpace("jprof "+c.name+" "+c.synopsis))
	}
	b.WriteString(`
FILE is a log-rt or a log-gen (told apart by its first line); report jlm reads a log-jlm.
`)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.short)
	}
	b.WriteString("\n" + flagStyle)
	return b.String()
}

const flagStyle = `Method names are Java's by default, java.util.TimSort.mergeLo(int, int);
-names short gives TimSort.mergeLo (overloads keep their parameters),
-names jvm the log-rt's own, J:java/util/TimSort.mergeLo(II)V.

Output goes to standard output unless -o is given. Flags take one dash
or two (-o and --o are the same), before or after FILE; a value follows
its flag or an '=' (-prune 5, -prune=5). jprof COMMAND -h shows a
command's flags.
`

// commandUsage is one command's -h text.
func commandUsage(c *command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", strings.TrimSpace("jprof "+c.name+" "+c.synopsis), c.about)
	if fs != nil {
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			b.WriteString("\nFlags:\n")
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
	}
	return b.String()
}

// Exit statuses.
const (
	exitOK    = 0
	exitInput = 1 // bad or unreadable input, or failed output
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a command line mistake: exit status 2 and the usage text,
// the command's own (cmd, set by dispatch) or, for no or an unknown
// command, jprof's.
type usageError struct{ msg, cmd string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// helpRequested is -h, -help or --help given to a command: its usage
// goes to standard output, and jprof exits 0.
type helpRequested struct{ fs *flag.FlagSet }

func (helpRequested) Error() string { return "help requested" }

// run runs jprof with the arguments after the program name and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	warnings = stderr
	err := dispatch(args, stdout)
	var ue usageError
	var help helpRequested
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &help):
		c := findCommand(help.fs.Name())
		if _, err := io.WriteString(stdout, commandUsage(c, help.fs)); err != nil {
			return exitInput
		}
		return exitOK
	case errors.As(err, &ue):
		if c := findCommand(ue.cmd); c != nil {
			// The command's synopsis, not all of jprof's, so that the
			// error stays in sight.
			fmt.Fprintf(stderr, "jprof: %s\nusage: %s\n(jprof help %s: what it does and its flags)\n",
				ue.msg, strings.TrimSpace("jprof "+c.name+" "+c.synopsis), c.name)
		} else {
			fmt.Fprintf(stderr, "jprof: %s\n%s", ue.msg, usage())
		}
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
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if name == "help" && len(args) > 0 {
			c := findCommand(args[0])
			switch {
			case c == nil:
				return usagef("help: unknown command %q", args[0])
			case c.run != nil:
				return c.run([]string{"-h"}, stdout)
			}
			_, err := io.WriteString(stdout, commandUsage(c, nil))
			return err
		}
		_, err := io.WriteString(stdout, usage())
		return err
	case "version", "-version", "--version":
		_, err := io.WriteString(stdout, buildinfo.String("jprof"))
		return err
	}
	if c := findCommand(name); c != nil && c.run != nil {
		err := c.run(args, stdout)
		if ue, ok := err.(usageError); ok && ue.cmd == "" {
			ue.cmd = c.name
			return ue
		}
		return err
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	if near := nearest.Name(name, names); near != "" {
		return usagef("unknown command %q; did you mean %s?", name, near)
	}
	return usagef("unknown command %q", name)
}

// flagOf is the flag an error of flag.Parse names ("... for flag -d: ..."), or "".
func flagOf(err error) string {
	_, rest, ok := strings.Cut(err.Error(), "for flag -")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ":")
	return name
}

// parse parses flags anywhere among the arguments ("FILE -o OUT" as well
// as "-o OUT FILE") and returns the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, helpRequested{fs}
			}
			if f := fs.Lookup(flagOf(err)); f != nil {
				if g, ok := f.Value.(flag.Getter); ok {
					if _, ok := g.Get().(time.Duration); ok {
						return nil, usagef("%s: %v (a duration has a unit: 30s, 2m, 500ms)", fs.Name(), err)
					}
				}
			}
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
	names := namesFlag(fs)
	prune := pruneFlag(fs)
	out := fs.String("o", "", "output `file`")
	sortBy := fs.String("sort", "gets", "jlm: the rows' `order`: gets, slow, miss, hold or wait")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 2 {
		return usagef("report: extra argument %q: it takes a report name and one file", pos[2])
	}
	if len(pos) != 2 {
		return usagef("report needs a report name and a file")
	}
	if err := checkOutFile(*out, pos[1]); err != nil {
		return err
	}
	if pos[0] == "jlm" {
		return reportJLM(pos[1], *sortBy, *out, stdout)
	}
	if *sortBy != "gets" {
		return usagef("-sort is for report jlm")
	}
	write := map[string]func(io.Writer, *reports.Profile) error{
		"xtree": reports.WriteXTree,
		"xarc":  reports.WriteXArc,
		"xprof": reports.WriteXProf,
	}[pos[0]]
	if write == nil {
		return usagef("unknown report %q: want xtree, xarc, xprof or jlm", pos[0])
	}
	if err := checkPrune(*prune); err != nil {
		return err
	}
	p, _, err := load(pos[1])
	if err != nil {
		return err
	}
	p = pruned(reports.Rename(p, *names), *prune)
	return output(*out, stdout, func(w io.Writer) error { return write(w, p) })
}

// reportJLM prints a log-jlm file as JProf's JLM report did.
func reportJLM(path, sortBy, out string, stdout io.Writer) error {
	sortBy = strings.ToLower(sortBy)
	if _, ok := reports.JLMSorts[sortBy]; !ok {
		return usagef("report jlm: -sort %q: want gets, slow, miss, hold or wait", sortBy)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return reportJLMFile(f, sortBy, out, stdout)
}

// reportJLMFile is reportJLM of a file open already (f.Name() its path).
func reportJLMFile(f *os.File, sortBy, out string, stdout io.Writer) error {
	path := f.Name()
	j, err := reports.ReadJLM(f)
	if err != nil {
		dir, base := filepath.Split(path)
		if sib := filepath.Join(dir, strings.Replace(base, "log-rt.", "log-jlm.", 1)); sib != path {
			if _, serr := os.Stat(sib); serr == nil {
				return fmt.Errorf("%s: %w; the lock monitor's counts are beside it: %s", path, err, sib)
			}
		}
		if strings.HasPrefix(base, "log-jlm.") {
			return fmt.Errorf("%s: %w", path, err)
		}
		return fmt.Errorf("%s: %w (report jlm reads the log-jlm.N_<pid> an agent with JLM writes beside each log-rt)", path, err)
	}
	if j.Unended {
		fmt.Fprintf(warnings, "jprof: warning: %s has no closing \"End of log-jlm\" line: an agent before that line wrote it, or a copy of it was cut short, its last rows lost\n", path)
	}
	return output(out, stdout, func(w io.Writer) error { return reports.WriteJLMReport(w, j, sortBy) })
}

// namesFlag is -names FORM, the form of method names of every command
// that shows them to people (see reports.NameForm).
func namesFlag(fs *flag.FlagSet) *reports.NameForm {
	f := new(reports.NameForm)
	fs.Var(f, "names", "`FORM` of method names: java (the default: a.B.f(int, String)),\n"+
		"short (B.f; overloads keep their parameters) or jvm (as in log-rt: J:a/B.f(ILjava/lang/String;)V)")
	return f
}

// pruneFlag is -prune PCT; checkPrune its check, pruned what it does.
func pruneFlag(fs *flag.FlagSet) *float64 {
	return fs.Float64("prune", 0, "fold subtrees below `PCT` percent of the total")
}

func checkPrune(pct float64) error {
	// Written so that NaN, which compares false with everything, fails
	// too: it would prune nothing and say it pruned at NaN%.
	if !(pct >= 0 && pct <= 100) {
		return usagef("-prune %v: want a percentage from 0 to 100", pct)
	}
	return nil
}

func pruned(p *reports.Profile, pct float64) *reports.Profile {
	if pct <= 0 {
		return p
	}
	p = reports.Prune(p, pct)
	p.Notes = append(p.Notes, fmt.Sprintf("pruned: subtrees below %v%% of the total are folded into %s", pct, reports.PrunedName))
	return p
}

func toPprof(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.pb.gz)")
	names := namesFlag(fs)
	prune := pruneFlag(fs)
	in, p, _, err := loadOne(fs, args, "file", func(in string) error {
		if err := checkOutFile(*out, in); err != nil {
			return err
		}
		return checkPrune(*prune)
	})
	if err != nil {
		return err
	}
	pp, err := reports.ToPprof(pruned(p, *prune), *names)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return output(*out, stdout, pp.Write)
}

func flame(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("flame", flag.ContinueOnError)
	out := fs.String("o", "", "output `file` (.html)")
	value := fs.String("value", "", "`V`, the value shown first: calls or a metric name (default: the first metric)")
	merge := fs.Bool("merge", false, "open with all threads merged")
	names := namesFlag(fs)
	title := fs.String("title", "", "page title `T` (default: the file name and pid)")
	in, p, _, err := loadOne(fs, args, "file", func(in string) error { return checkOutFile(*out, in) })
	if err != nil {
		return err
	}
	if *title == "" {
		*title = fmt.Sprintf("%s (pid %d)", filepath.Base(in), p.PID)
	}
	o := reports.FlameOptions{Value: *value, MergeThreads: *merge, Title: *title, Names: *names}
	if _, err := reports.SelectValue(p, o.Value); err != nil {
		return usagef("flame -value: %v", err)
	}
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteFlame(w, p, o) })
}

func collapsed(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("collapsed", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	value := fs.String("value", "", "`V`, the value of each line: calls or a metric name (default: the first metric)")
	merge := fs.Bool("merge", false, "leave the thread out of the stacks")
	names := namesFlag(fs)
	_, p, _, err := loadOne(fs, args, "file", func(in string) error { return checkOutFile(*out, in) })
	if err != nil {
		return err
	}
	o := reports.CollapsedOptions{Value: *value, MergeThreads: *merge, Names: *names}
	if _, err := reports.SelectValue(p, o.Value); err != nil {
		return usagef("collapsed -value: %v", err)
	}
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteCollapsed(w, p, o) })
}

func logrt(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("logrt", flag.ContinueOnError)
	out := fs.String("o", "", "output `file`")
	in, p, format, err := loadOne(fs, args, "log-gen file", func(in string) error { return checkOutFile(*out, in) })
	if err != nil {
		return err
	}
	if format != reports.FormatLogGen {
		return fmt.Errorf("%s is a %s, not a log-gen", in, format)
	}
	p.Notes = append(p.Notes,
		fmt.Sprintf("rebuilt by jprof logrt from log-gen %s", filepath.Base(in)),
		"log-gen has no DELTA, DS or IN: they read 0")
	return output(*out, stdout, func(w io.Writer) error { return reports.WriteLogRT(w, p) })
}

// loadOne parses fs's flags in args, wants one positional argument, a
// file of the kind what names, runs check (if any) on the flags and that
// file's name, and reads the file.
func loadOne(fs *flag.FlagSet, args []string, what string, check func(in string) error) (string, *reports.Profile, reports.Format, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return "", nil, 0, err
	}
	if len(pos) > 1 {
		return "", nil, 0, usagef("%s: extra argument %q: it takes one %s", fs.Name(), pos[1], what)
	}
	if len(pos) != 1 {
		return "", nil, 0, usagef("%s needs one %s", fs.Name(), what)
	}
	if check != nil {
		if err := check(pos[0]); err != nil {
			return "", nil, 0, err
		}
	}
	p, format, err := load(pos[0])
	return pos[0], p, format, err
}

// load reads a log-rt or log-gen; errors name the file.
func load(path string) (*reports.Profile, reports.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return loadFile(f)
}

// loadFile is load of a file open already (f.Name() its path).
func loadFile(f *os.File) (*reports.Profile, reports.Format, error) {
	path := f.Name()
	p, format, err := reports.ReadProfile(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if p.Truncated != "" {
		p.Notes = append(p.Notes, warnTruncated(path, p.Truncated))
	}
	if p.SizeLimited != "" {
		p.Notes = append(p.Notes, warnSizeLimited(path, p.SizeLimited))
	}
	return p, format, nil
}

// warnings is where jprof warns (run's stderr).
var warnings io.Writer = os.Stderr

// warnTruncated says on stderr that path was cut short by a write error
// in the agent, and returns the note that says it in what is made of it.
func warnTruncated(path, line string) string {
	fmt.Fprintf(warnings, "jprof: warning: %s is truncated: %s; what follows covers only what was written before\n", path, line)
	return fmt.Sprintf("Warning: %s is truncated (%s): only what was written before is here", filepath.Base(path), line)
}

// warnSizeLimited says on stderr that the log-gen path reached its size
// limit (GENMAX), and returns the note that says it in what is made of
// it: the file is whole, so nothing else would tell that its tree lacks
// every call past the limit.
func warnSizeLimited(path, line string) string {
	fmt.Fprintf(warnings, "jprof: warning: %s holds only its first events: %s; what follows covers only the events before the limit\n", path, line)
	return fmt.Sprintf("Warning: %s holds only its first events (%s): the calls past the limit are not here", filepath.Base(path), line)
}
