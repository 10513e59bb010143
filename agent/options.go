package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/internal/sourceopts"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/ptt"
)

// Mode is what log-rt holds.
type Mode int

const (
	// ModeCallTree: the call tree with counts only (CALLTREE).
	ModeCallTree Mode = iota + 1
	// ModeRTArcf: the call tree with metrics (RTARCF, or METRICS= alone).
	ModeRTArcf
	// ModeCallFlow: the call tree with instructions and cycles (CALLFLOW).
	ModeCallFlow
)

func (m Mode) String() string {
	switch m {
	case ModeCallTree:
		return "CALLTREE"
	case ModeRTArcf:
		return "RTARCF"
	case ModeCallFlow:
		return "CALLFLOW"
	}
	return "?"
}

// Options is the parsed agent option string (-agentpath:libjprof.so=OPTIONS
// plus $JPROFOPTS).
type Options struct {
	Mode Mode
	// Metrics asked for with METRICS=; empty when the mode's default applies.
	Metrics []ptt.Metric
	// Start collecting at VM start instead of waiting for rtdriver start.
	Start     bool
	LogPath   string
	LogPrefix string
	// LogPathFrom is where LOGPATH= was given (originAgent, originEnv),
	// empty for the default: an unwritable LOGPATH someone asked for
	// stops the JVM, the default one only warns.
	LogPathFrom string
	// PTT forces a backend; ptt.None means choose the best available.
	PTT ptt.Backend
	// NoTSC makes the bpf and perf PTT reads take the vDSO clock each
	// time instead of scaling the TSC.
	NoTSC bool
	// PTTSlots sizes the eBPF work area (0: ptt's default).
	PTTSlots int
	// PTTD is the socket of a jprof pttd to ask for the eBPF work area.
	PTTD string
	// RTDriver listens for rtdriver commands on the UNIX socket
	// /tmp/.libjprof-<uid>/<pid>.sock and, when Port is set, on TCP at
	// Host:Port too, requiring Token when it is set.
	RTDriver bool
	// Quiet: nothing on the JVM's stderr (QUIET).
	Quiet bool
	Host  string
	Port  int
	Token string
	// Generic also writes log-gen, one line per event; with RawGen its
	// values are raw deltas with sequence keys.
	Generic, RawGen bool
	// JitA2N writes log-jita2n, PerfMap /tmp/perf-<pid>.map, ThreadInfo
	// log-jtnm.
	JitA2N, PerfMap, ThreadInfo bool
	// Calibrate removes the profiler's overhead from the metrics (default on).
	Calibrate bool
	// CalTable is a calibration table to start from; CalOut is where to
	// write this run's minima.
	CalTable, CalOut string
	// GenText writes log-gen as JProf's text lines instead of the
	// compact binary records; GenMax bounds its size (0: no bound).
	GenText bool
	GenMax  int64
	// MaxMethods bounds the method registry.
	MaxMethods int
	// VThreads follows virtual threads across their carriers (default on).
	VThreads bool
	// Sample selects the sampling source (SAMPLE=): a sampled tree at
	// production overhead instead of exact method events. nil: method
	// events.
	Sample *jvmti.SampleConfig
	// Alloc, when set, samples allocations instead (ALLOC=); Lock
	// records monitor contention instead (LOCK=).
	Alloc *jvmti.AllocConfig
	Lock  *jvmti.LockConfig
	// SampleNodes is each thread's sampled-tree capacity (SAMPLENODES=).
	SampleNodes int
	// BCI takes events from injected bytecode (the default source)
	// instead of JVMTI method events; Include and Exclude are its package
	// filters. source is the event source named in the options
	// ("BCI", "METHODEVENTS" or "" for the default), which Parse
	// resolves into BCI.
	BCI                     bool
	source                  string
	Include, Exclude, Roots string
	// AllMethods instruments trivial methods too (ALLMETHODS).
	AllMethods bool
	// FFMProbes makes BCI's probes FFM critical downcalls on JDK 22+
	// (FFMPROBES).
	FFMProbes bool
	// BCICacheOn keeps classes rewritten in earlier runs in BCICache
	// (BCICACHE[=dir]; "" when there is no default place for it).
	BCICacheOn bool
	BCICache   string

	// JLM counts, with BCI, every monitor instrumented code takes
	// (log-jlm): JProf's Java Lock Monitor.
	JLM bool
	// LateRead takes a second PTT read at the end of each event
	// (LATEREAD: JProf's Early/Late Read split) instead of one.
	LateRead bool
}

// Event sources as the options name them.
const (
	sourceBCI          = "BCI"
	sourceMethodEvents = "METHODEVENTS"
)

// OptionError is a bad option: the JVM must not start.
type OptionError struct {
	Option string // the option as written
	// Origin is where the option came from: originAgent or originEnv, or
	// empty when the error is about the options as a whole.
	Origin string
	Reason string
	// Known: the option is valid, only not here; the list of valid
	// options would say nothing.
	Known bool
}

// Where an option came from, as errors name it.
const (
	originAgent  = "the -agentpath options"
	originEnv    = "JPROFOPTS"
	originAttach = "the attach's options (jprof's -e and -opts)"
)

func (e *OptionError) Error() string {
	from := ""
	if e.Origin != "" {
		from = " (from " + e.Origin + ")"
	}
	if e.Known {
		return fmt.Sprintf("invalid option %q%s: %s", e.Option, from, e.Reason)
	}
	return fmt.Sprintf("invalid option %q%s: %s\nvalid options: %s", e.Option, from, e.Reason, validOptionList())
}

// optionSpec describes one option. Boolean options are set by their name
// and cleared by NO<name>; value options take NAME=value, and NO<name>
// puts back the default.
type optionSpec struct {
	name     string
	hasValue bool
	help     string
	// optValue: the value may be left out (NAME alone means the
	// default value).
	optValue bool
	// notBuilt, when set, is what to tell a user who asks for an option
	// that is recognised but not implemented yet.
	notBuilt string
	set      func(o *Options, value string, on bool) error
}

var optionSpecs = []optionSpec{
	{name: "CALLTREE", help: "call tree in log-rt, counts only", set: setMode(ModeCallTree)},
	{name: "RTARCF", help: "call tree in log-rt with one metric (default instructions, else PTT_TIME)", set: setMode(ModeRTArcf)},
	{name: "CALLFLOW", help: "call tree in log-rt with instructions and cycles (else PTT_TIME)", set: setMode(ModeCallFlow)},
	{name: "METRICS", hasValue: true, help: "metrics to count, a+b+... (PTT_TIME, PTT_INSTS, PTT_CYCLES)", set: setMetrics},
	{name: "BCI", help: "events from bytecode instrumentation that keeps the JIT (the default source): every method outside java.base but trivial ones (see ALLMETHODS), native methods through wrappers; NOBCI is METHODEVENTS", set: func(o *Options, _ string, on bool) error {
		o.source = sourceBCI
		if !on {
			o.source = sourceMethodEvents
		}
		return nil
	}},
	{name: "METHODEVENTS", help: "events from JVMTI method entry and exit instead of BCI: every method, java.base's too, but the code runs interpreted while collecting, so JIT-compiled code's share is distorted", set: func(o *Options, _ string, on bool) error {
		o.source = sourceMethodEvents
		if !on {
			o.source = ""
		}
		return nil
	}},
	{name: "JLM", help: "with BCI: also the exact lock monitor, as JProf's JLM: per monitor class and site, takes, recursive and contended ones, hold time, contended and Object.wait time, in log-jlm beside each log-rt (jprof report jlm)", set: boolOpt(func(o *Options) *bool { return &o.JLM })},
	{name: "ALLMETHODS", help: "with BCI: instrument trivial methods too (default: methods that call nothing but java.base and other trivial methods, have no loop and at most 35 bytes of bytecode (70 with the trivial methods they call), such as getters, setters, one-line delegates to the JDK and chains of them, are left out and their time counts in their callers)", set: boolOpt(func(o *Options) *bool { return &o.AllMethods })},
	{name: "FFMPROBES", help: "with BCI on JDK 22 and later: the injected probes are FFM critical downcalls instead of JNI calls: about a tenth less per event once the program's code is compiled, but more JIT work while it is (see BENCHMARKS.md); for long-running programs. It turns native access on for unnamed modules (as --enable-native-access=ALL-UNNAMED) and adds a compiler directive for every method (C1 does not inline the probes) above any of the program's own; not with ROOTS or log-gen", set: boolOpt(func(o *Options) *bool { return &o.FFMProbes })},
	{name: "BCICACHE", hasValue: true, optValue: true, help: "with BCI: keep rewritten classes in a directory between runs (default $XDG_CACHE_HOME/libjprof/bci, else ~/.cache/libjprof/bci), so that a later run reads a class rewritten before instead of rewriting it: a shorter start-up. The directory must be this user's and not writable by others (it is created so); past " + bciCacheCapText + " the least recently written contexts (JVMs, option sets, libjprof builds) are removed; not used with ROOTS or JLM, or when attaching",
		set: func(o *Options, v string, on bool) error {
			o.BCICacheOn, o.BCICache = on, v
			if on && v == "" {
				o.BCICache = defaultBCICache()
			}
			return nil
		}},
	{name: "INCLUDE", hasValue: true, help: "with BCI: instrument only classes under these package or class name prefixes, a+b+... (default: all outside java.base)",
		set: stringOpt(func(o *Options) *string { return &o.Include }, "", "prefixes a+b+...", nil)},
	{name: "EXCLUDE", hasValue: true, help: "with BCI: never instrument classes under these package or class name prefixes, a+b+...",
		set: stringOpt(func(o *Options) *string { return &o.Exclude }, "", "prefixes a+b+...", nil)},
	{name: "ROOTS", hasValue: true, help: "collect only under these root methods, Class.method+... ('*' any run of characters, dots included; '?' one character; Outer.Inner for Outer$Inner): with BCI, instrument only the methods reachable from them; without, method events only on a thread inside one (the rest keeps the JIT)",
		set: func(o *Options, v string, on bool) error {
			if !on {
				o.Roots = ""
				return nil
			}
			n, err := normalizeRoots(v)
			if err != nil {
				return err
			}
			o.Roots = n
			return nil
		}},
	{name: "START", help: "collect from VM start (default: wait for rtdriver start)", set: boolOpt(func(o *Options) *bool { return &o.Start })},
	{name: "LOGPATH", hasValue: true, help: "directory for the output files (default: current directory; created if missing; one given here that cannot be written stops the JVM)",
		set: stringOpt(func(o *Options) *string { return &o.LogPath }, ".", "a directory", nil)},
	{name: "LOGPREFIX", hasValue: true, help: "file name prefix (default log)",
		set: stringOpt(func(o *Options) *string { return &o.LogPrefix }, "log", "a file name prefix without '/'", func(v string) bool { return !strings.ContainsRune(v, '/') })},
	{name: "PTT", hasValue: true, help: "force the PTT backend: bpf, perf or clock (default: best available)", set: func(o *Options, v string, on bool) error {
		if !on {
			o.PTT = ptt.None
			return nil
		}
		b, err := ptt.ParseBackend(v)
		if err != nil {
			return err
		}
		o.PTT = b
		return nil
	}},
	{name: "TSC", help: "bpf and perf PTT reads scale the TSC when the kernel keeps time with it (default on; NOTSC: a vDSO clock read each time)", set: func(o *Options, v string, on bool) error {
		o.NoTSC = !on
		return nil
	}},
	{name: "PTTSLOTS", hasValue: true, help: "threads the eBPF PTT work area serves at once (default 32768: about 7 MiB of locked kernel memory, 224 bytes a slot); threads past it read the clock, and every report marks them",
		set: intOpt(func(o *Options) *int { return &o.PTTSlots }, 0, 1, 1<<20, "a number of threads")},
	{name: "PTTD", hasValue: true, help: "socket of a jprof pttd to get the eBPF PTT from when the JVM cannot load it (default /run/libjprof-pttd.sock if present)",
		set: stringOpt(func(o *Options) *string { return &o.PTTD }, "", "a socket path", nil)},
	{name: "LATEREAD", help: "two PTT reads per event, at its start and its end (JProf's Early/Late Read split: the event's own work is in no method's delta) instead of one (default: one, the event's work calibrated away with the rest of the overhead)", set: boolOpt(func(o *Options) *bool { return &o.LateRead })},
	{name: "CALIBRATE", help: "remove the profiler's own overhead from metrics (default on; NOCALIBRATE for raw values)", set: boolOpt(func(o *Options) *bool { return &o.Calibrate })},
	{name: "CALTABLE", hasValue: true, help: "calibration table for the environmental overhead and the minima of rarely seen keys (default: a built-in table matching this JVM, metric and backend; none: minima from this run only)",
		set: stringOpt(func(o *Options) *string { return &o.CalTable }, "", "a file", nil)},
	{name: "CALOUT", hasValue: true, help: "write this run's calibration minima as a table at VM death (used by make train)",
		set: stringOpt(func(o *Options) *string { return &o.CalOut }, "", "a file", nil)},
	{name: "GENERIC", help: "also write log-gen: one line per method event", set: boolOpt(func(o *Options) *bool { return &o.Generic })},
	{name: "CALLTRACE", help: "same as GENERIC", set: boolOpt(func(o *Options) *bool { return &o.Generic })},
	{name: "RAWGEN", help: "log-gen with raw deltas and sequence keys, for jprof calibrate (implies GENERIC)", set: func(o *Options, _ string, on bool) error {
		o.RawGen = on
		o.Generic = o.Generic || on
		return nil
	}},
	{name: "GENFORMAT", hasValue: true, help: "log-gen format: binary (compact records; jprof reads and converts them, the default) or text (JProf's lines)", set: func(o *Options, v string, on bool) error {
		switch strings.ToLower(v) {
		case "binary", "":
			o.GenText = false
		case "text":
			o.GenText = on
		default:
			return fmt.Errorf("needs binary or text")
		}
		return nil
	}},
	{name: "GENMAX", hasValue: true, help: "stop writing log-gen past this size (e.g. 500m, 2g; default no limit); events past it are counted and the file says so", set: func(o *Options, v string, on bool) error {
		if !on {
			o.GenMax = 0
			return nil
		}
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		o.GenMax = n
		return nil
	}},
	{name: "MAXMETHODS", hasValue: true, help: "method registry limit (default 4194304); methods past it are reported as <method-limit-reached> and the log-rt header says how many", set: intOpt(func(o *Options) *int { return &o.MaxMethods }, engine.DefaultMaxMethods, 1, 1<<29, "a number of methods")},
	{name: "VTHREADS", help: "virtual threads (JDK 21+) get trees of their own, followed across carriers (default on; NOVTHREADS: only detected, and the header says carriers' trees are not exact)", set: boolOpt(func(o *Options) *bool { return &o.VThreads })},
	{name: "SAMPLE", hasValue: true, optValue: true, help: "sample stacks instead of method events: SAMPLE[=[cpu:|timer:|wall:]period], e.g. SAMPLE, SAMPLE=500us, SAMPLE=wall:10ms (default cpu:1ms: each thread every 1 ms of its CPU time); log-rt holds the sampled tree", set: setSample},
	{name: "ALLOC", hasValue: true, optValue: true, help: "sample allocations instead of method events: ALLOC[=interval], about one sample every interval bytes each thread allocates (default 512k), with its stack and the allocated class as the leaf; log-rt's metrics are the bytes and objects the samples stand for (unbiased estimates)", set: setAlloc},
	{name: "LOCK", hasValue: true, optValue: true, help: "record lock contention instead of method events: LOCK[=threshold], threads blocked entering a contended monitor (synchronized) or waiting in Object.wait for at least threshold (default 10us), with their stacks and the monitor's class as the leaf; log-rt's metrics are the delay (ns) and the contentions", set: setLock},
	{name: "SAMPLENODES", hasValue: true, help: "the most contexts a thread's sampled tree may hold (default 262144, about 100 bytes each); storage for the first 16384 is made at thread start, more as the tree grows; samples past it are counted and shown as <sample-node-limit>", set: intOpt(func(o *Options) *int { return &o.SampleNodes }, defaultSampleNodes, 16, 1<<24, "a number of nodes")},
	{name: "JITA2N", help: "write log-jita2n: JIT-compiled code addresses, sizes, inlining", set: boolOpt(func(o *Options) *bool { return &o.JitA2N })},
	{name: "PERFMAP", help: "write /tmp/perf-<pid>.map so perf can name JIT-compiled Java frames", set: boolOpt(func(o *Options) *bool { return &o.PerfMap })},
	{name: "THREADINFO", help: "write log-jtnm: thread ids, names, start and end times", set: boolOpt(func(o *Options) *bool { return &o.ThreadInfo })},
	{name: "RTDRIVER", help: "listen for rtdriver commands from the JVM's owner and root on the UNIX socket /tmp/.libjprof-<uid>/<pid>.sock (default on; NORTDRIVER: no control channel at all)", set: boolOpt(func(o *Options) *bool { return &o.RTDriver })},
	{name: "QUIET", help: "write nothing on the JVM's stderr: what the agent would say there goes to log-msg, and what it says while loading is left for the command that loaded it (jprof, which loads it so, prints it); an error that stops the JVM, and anything said while there is no log-msg, still go to stderr", set: boolOpt(func(o *Options) *bool { return &o.Quiet })},
	{name: "PORT", hasValue: true, help: "also listen for rtdriver on this TCP port (default: no TCP); a peer on this host is served only if it runs as the JVM's owner or root", set: intOpt(func(o *Options) *int { return &o.Port }, 0, 1, 65535, "a TCP port number")},
	{name: "HOST", hasValue: true, help: "address the rtdriver TCP port listens on (needs PORT=; default 127.0.0.1: loopback only; any other address needs TOKEN=)",
		set: stringOpt(func(o *Options) *string { return &o.Host }, "", "an address", nil)},
	{name: "TOKEN", hasValue: true, help: "shared token every rtdriver command must carry, on every channel (rtdriver -t)",
		set: stringOpt(func(o *Options) *string { return &o.Token }, "", "a token without blanks", func(v string) bool { return !strings.ContainsAny(v, " \t") })},
}

// boolOpt sets a flag: NAME turns it on, NONAME off.
func boolOpt(field func(*Options) *bool) func(*Options, string, bool) error {
	return func(o *Options, _ string, on bool) error {
		*field(o) = on
		return nil
	}
}

// stringOpt sets a string option to a non-empty value that passes ok (if
// given); NONAME puts back def. what names the value in errors.
func stringOpt(field func(*Options) *string, def, what string, ok func(string) bool) func(*Options, string, bool) error {
	return func(o *Options, v string, on bool) error {
		if !on {
			*field(o) = def
			return nil
		}
		if v == "" || (ok != nil && !ok(v)) {
			return fmt.Errorf("needs %s", what)
		}
		*field(o) = v
		return nil
	}
}

// intOpt sets an integer option to a value in [lo, hi]; NONAME puts back
// def. what names the value in errors.
func intOpt(field func(*Options) *int, def, lo, hi int, what string) func(*Options, string, bool) error {
	return func(o *Options, v string, on bool) error {
		if !on {
			*field(o) = def
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("needs %s %d-%d", what, lo, hi)
		}
		*field(o) = n
		return nil
	}
}

func setMode(m Mode) func(*Options, string, bool) error {
	return func(o *Options, _ string, on bool) error {
		if !on {
			if o.Mode == m {
				o.Mode = 0
			}
			return nil
		}
		// A later mode replaces an earlier one, as any later option
		// does: JPROFOPTS=CALLTREE overrides -agentpath:...=RTARCF.
		o.Mode = m
		return nil
	}
}

func setMetrics(o *Options, v string, on bool) error {
	o.Metrics = nil
	if !on {
		return nil
	}
	if v == "" {
		return fmt.Errorf("needs one or more metrics joined by '+'")
	}
	seen := map[ptt.Metric]bool{}
	for _, name := range strings.Split(v, "+") {
		m, err := ptt.ParseMetric(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if seen[m] {
			return fmt.Errorf("metric %s given twice", m)
		}
		seen[m] = true
		o.Metrics = append(o.Metrics, m)
	}
	if len(o.Metrics) > ptt.MaxMetrics {
		return fmt.Errorf("%d metrics given, at most %d", len(o.Metrics), ptt.MaxMetrics)
	}
	return nil
}

// ParseOptions parses the agent's option string followed by the value of
// JPROFOPTS (either may be empty). Options are comma-separated and
// case-insensitive; later options override earlier ones (a later mode
// replaces an earlier one), so JPROFOPTS wins. Errors say which of the two
// an option came from.
func ParseOptions(agentOpts, envOpts string) (*Options, error) {
	o := &Options{LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true, MaxMethods: engine.DefaultMaxMethods, VThreads: true,
		SampleNodes: defaultSampleNodes}
	// from remembers where each option was last set, modeFrom and
	// sourceFrom where the mode and the event source were (each has
	// several names), for the errors that name them.
	from := map[string]string{}
	var modeFrom, sourceFrom string
	for _, part := range []struct{ opts, origin string }{{agentOpts, originAgent}, {envOpts, originEnv}} {
		// An event source named in JPROFOPTS replaces the -agentpath
		// options' (JPROFOPTS wins); two in one string are a mistake,
		// which the checks below name.
		if part.origin == originEnv && sourceopts.Named(part.opts) {
			o.source, o.Sample, o.Alloc, o.Lock = "", nil, nil, nil
		}
		named := "" // BCI or METHODEVENTS as this string left it
		for _, raw := range strings.Split(part.opts, ",") {
			tok := strings.TrimSpace(raw)
			if tok == "" {
				continue
			}
			spec, err := parseOne(o, tok)
			if err != nil {
				err.Origin = part.origin
				return nil, err
			}
			if spec.name == sourceBCI || spec.name == sourceMethodEvents {
				src := o.source
				if src == "" {
					src = sourceBCI // NOMETHODEVENTS: the default
				}
				if named != "" && src != named {
					return nil, &OptionError{Option: tok, Origin: part.origin, Reason: "one event source at a time: BCI or METHODEVENTS"}
				}
				named = src
			}
			from[spec.name] = part.origin
			switch {
			case spec.name == "LOGPATH":
				o.LogPathFrom = part.origin
				if strings.HasPrefix(strings.ToUpper(tok), "NO") {
					o.LogPathFrom = "" // NOLOGPATH: the default again
				}
			case spec.name == "CALLTREE" || spec.name == "RTARCF" || spec.name == "CALLFLOW":
				modeFrom = part.origin
			case sourceopts.Names[spec.name]:
				sourceFrom = part.origin
			}
		}
	}
	// The source's checks first: with SAMPLE, ALLOC or LOCK, METRICS=
	// does not apply at all, whatever the mode says.
	for _, check := range []func() error{o.checkEventSource, o.checkSample} {
		if err := check(); err != nil {
			if oe, ok := err.(*OptionError); ok && oe.Origin == "" {
				// The option named: one that does not apply with
				// the source (METRICS=, PTT=, CALLFLOW), or the source.
				oe.Origin = sourceFrom
				if f, ok := from[strings.TrimSuffix(oe.Option, "=")]; ok {
					oe.Origin = f
				}
			}
			return nil, err
		}
	}
	if o.Mode == ModeCallTree && len(o.Metrics) > 0 {
		origin := from["METRICS"]
		if origin != modeFrom {
			origin = "CALLTREE from " + modeFrom + ", METRICS= from " + origin
		}
		return nil, &OptionError{Option: "METRICS=", Origin: origin, Reason: "CALLTREE collects no metrics; use RTARCF with METRICS="}
	}
	if o.Mode == 0 {
		o.Mode = ModeRTArcf
	}
	o.BCI = o.Sample == nil && o.Alloc == nil && o.Lock == nil && o.source != sourceMethodEvents
	if !o.BCI {
		for _, f := range []struct {
			name string
			set  bool
		}{{"INCLUDE", o.Include != ""}, {"EXCLUDE", o.Exclude != ""}, {"ALLMETHODS", o.AllMethods}, {"JLM", o.JLM}, {"FFMPROBES", o.FFMProbes}, {"BCICACHE", o.BCICacheOn}} {
			if f.set {
				// Both origins: the user must see which string gave
				// which (JLM in -agentpath, LOCK in JPROFOPTS).
				origin := f.name + " from " + from[f.name] + ", " + o.sourceName() + " from " + sourceFrom
				if from[f.name] == sourceFrom {
					origin = from[f.name]
				}
				return nil, &OptionError{Option: f.name, Origin: origin, Reason: "is an option of bytecode instrumentation (BCI, the default source): not with " + o.sourceName()}
			}
		}
	}
	if err := o.checkControl(); err != nil {
		return nil, err
	}
	// Files are named in log-msg and rtdriver replies: make them absolute.
	if abs, err := filepath.Abs(o.LogPath); err == nil {
		o.LogPath = abs
	}
	return o, nil
}

// parseOne applies one option token to o.
func parseOne(o *Options, tok string) (*optionSpec, *OptionError) {
	name, value, hasEq := strings.Cut(tok, "=")
	upper := strings.ToUpper(strings.TrimSpace(name))
	spec, on := lookupOption(upper)
	if spec == nil {
		reason := "unknown option"
		if near := nearestOption(upper); near != "" {
			reason += "; did you mean " + near + "?"
		}
		return nil, &OptionError{Option: tok, Reason: reason}
	}
	if spec.notBuilt != "" {
		return nil, &OptionError{Option: tok, Reason: "recognised but not available in this version: " + spec.notBuilt}
	}
	switch {
	case spec.hasValue && on && !hasEq && !spec.optValue:
		return nil, &OptionError{Option: tok, Reason: fmt.Sprintf("needs a value: %s=...", spec.name)}
	case !spec.hasValue && hasEq:
		return nil, &OptionError{Option: tok, Reason: "takes no value"}
	case !on && hasEq:
		return nil, &OptionError{Option: tok, Reason: "a NO option takes no value"}
	case spec.optValue && hasEq && strings.TrimSpace(value) == "":
		// BCICACHE=$DIR with DIR unset, say: not the default unasked.
		return nil, &OptionError{Option: tok, Reason: fmt.Sprintf("an empty value: give one, or %s alone for its default", spec.name)}
	}
	if err := spec.set(o, value, on); err != nil {
		return nil, &OptionError{Option: tok, Reason: err.Error()}
	}
	return spec, nil
}

// sourceName is the event source as the options name it.
func (o *Options) sourceName() string {
	switch {
	case o.Sample != nil:
		return "SAMPLE"
	case o.Alloc != nil:
		return "ALLOC"
	case o.Lock != nil:
		return "LOCK"
	case o.BCI:
		return sourceBCI
	}
	return sourceMethodEvents
}

// genMode is what the log-gen records hold.
func (o *Options) genMode() jvmti.LogGen {
	switch {
	case !o.Generic:
		return jvmti.NoLogGen
	case o.RawGen && o.Calibrate && o.Mode != ModeCallTree:
		return jvmti.GenRaw
	}
	return jvmti.GenOnline
}

// metricPlan is what to ask the PTT for: the metrics, and what to use
// instead if the machine cannot count them (nil: no fallback, an error).
type metricPlan struct {
	want     []ptt.Metric
	fallback []ptt.Metric
}

// plan says which metrics the options ask for. Metrics named with
// METRICS= must be counted or the JVM does not start; a mode's implied
// default falls back to thread time.
func (o *Options) plan() metricPlan {
	switch {
	case o.Mode == ModeCallTree:
		return metricPlan{}
	case o.Sample != nil:
		// The column the handler adds each sample's time to.
		return metricPlan{want: []ptt.Metric{ptt.Time}}
	case o.Alloc != nil || o.Lock != nil:
		// Two columns for the events' two values (bytes and objects;
		// delay and contentions); no PTT is read.
		return metricPlan{want: []ptt.Metric{ptt.Time, ptt.Time}}
	case len(o.Metrics) > 0:
		return metricPlan{want: o.Metrics}
	case o.Mode == ModeCallFlow:
		return metricPlan{want: []ptt.Metric{ptt.Insts, ptt.Cycles}, fallback: []ptt.Metric{ptt.Time}}
	default:
		return metricPlan{want: []ptt.Metric{ptt.Insts}, fallback: []ptt.Metric{ptt.Time}}
	}
}

// parseSize reads a byte count with an optional k, m or g suffix (powers
// of 1024).
func parseSize(v string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "g"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("needs a size such as 500m or 2g")
	}
	return n * mult, nil
}
