package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/engine"
	"github.com/libjprof/libjprof/ptt"
)

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts, env string
		want      Options
	}{
		{name: "empty defaults to RTARCF", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "calltree start", opts: "CALLTREE,START", want: Options{Mode: ModeCallTree, Start: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "case-insensitive", opts: "calltree,Start", want: Options{Mode: ModeCallTree, Start: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "NO prefix clears", opts: "START,NOSTART", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "JPROFOPTS appended and wins", opts: "CALLTREE,LOGPREFIX=a", env: "START,LOGPREFIX=b", want: Options{Mode: ModeCallTree, Start: true, LogPath: ".", LogPrefix: "b", Calibrate: true, RTDriver: true}},
		{name: "a later mode replaces an earlier one", opts: "CALLTREE,RTARCF", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "JPROFOPTS mode wins", opts: "RTARCF,START", env: "CALLTREE", want: Options{Mode: ModeCallTree, Start: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "only JPROFOPTS", env: "callflow", want: Options{Mode: ModeCallFlow, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "metrics", opts: "METRICS=ptt_time", want: Options{Mode: ModeRTArcf, Metrics: []ptt.Metric{ptt.Time}, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "two metrics", opts: "RTARCF,METRICS=PTT_TIME+PTT_INSTS", want: Options{Mode: ModeRTArcf, Metrics: []ptt.Metric{ptt.Time, ptt.Insts}, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "NOMETRICS resets", opts: "METRICS=PTT_TIME,NOMETRICS", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "logpath keeps case", opts: "LOGPATH=/tmp/Some/Dir", want: Options{Mode: ModeRTArcf, LogPath: "/tmp/Some/Dir", LogPathFrom: originAgent, LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "NOLOGPATH resets", opts: "LOGPATH=/x,NOLOGPATH", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "spaces and empty items", opts: " CALLTREE , ,START ", want: Options{Mode: ModeCallTree, Start: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "ptt clock", opts: "PTT=clock", want: Options{Mode: ModeRTArcf, PTT: ptt.Clock, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "ptt auto", opts: "PTT=bpf,PTT=auto", want: Options{Mode: ModeRTArcf, PTT: ptt.None, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "generic", opts: "CALLTRACE", want: Options{Mode: ModeRTArcf, Generic: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "jit and threads", opts: "JITA2N,PERFMAP,THREADINFO", want: Options{Mode: ModeRTArcf, JitA2N: true, PerfMap: true, ThreadInfo: true, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "no calibration", opts: "NOCALIBRATE", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", RTDriver: true}},
		{name: "rtdriver settings", opts: "PORT=9000,HOST=0.0.0.0,TOKEN=s3cret", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true, Port: 9000, Host: "0.0.0.0", Token: "s3cret"}},
		{name: "no rtdriver", opts: "NORTDRIVER", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true}},
		{name: "same mode twice", opts: "CALLTREE,CALLTREE", want: Options{Mode: ModeCallTree, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
		{name: "BCI cache", opts: "BCICACHE=/tmp/c", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true, BCICacheOn: true, BCICache: "/tmp/c"}},
		{name: "NOBCICACHE", opts: "BCICACHE=/tmp/c,NOBCICACHE", want: Options{Mode: ModeRTArcf, LogPath: ".", LogPrefix: "log", Calibrate: true, RTDriver: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := ParseOptions(c.opts, c.env)
			require.NoError(t, err)
			want := c.want
			want.LogPath, _ = filepath.Abs(want.LogPath)
			if want.MaxMethods == 0 {
				want.MaxMethods = engine.DefaultMaxMethods
			}
			want.VThreads = true // default on; not varied here
			want.BCI = true      // the default source; TestEventSource varies it
			if want.SampleNodes == 0 {
				want.SampleNodes = defaultSampleNodes
			}
			assert.Equal(t, want, *o)
		})
	}
}

func TestParseOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		opts       string
		wantOption string
		wantReason string
	}{
		{"BOGUS", "BOGUS", "unknown option"},
		{"NOBOGUS", "NOBOGUS", "unknown option"},
		{"SAMPEL", "SAMPEL", "unknown option; did you mean SAMPLE?"},
		{"logpth=/tmp", "logpth=/tmp", "unknown option; did you mean LOGPATH?"},
		{"NOSTRAT", "NOSTRAT", "unknown option; did you mean START?"},
		{"START=1", "START=1", "takes no value"},
		{"NOSTART=1", "NOSTART=1", "takes no value"},
		{"LOGPATH", "LOGPATH", "needs a value"},
		{"LOGPATH=", "LOGPATH=", "needs a directory"},
		{"BCICACHE=", "BCICACHE=", "an empty value: give one, or BCICACHE alone for its default"},
		{"SAMPLE= ", "SAMPLE=", "an empty value"},
		{"NOLOGPATH=/x", "NOLOGPATH=/x", "a NO option takes no value"},
		{"LOGPREFIX=a/b", "LOGPREFIX=a/b", "without '/'"},
		{"METRICS=", "METRICS=", "needs one or more metrics"},
		{"METRICS=PTT_FOO", "METRICS=PTT_FOO", "unknown metric"},
		{"METRICS=PTT_TIME+PTT_TIME", "METRICS=PTT_TIME+PTT_TIME", "given twice"},
		{"CALLTREE,METRICS=PTT_TIME", "METRICS=", "CALLTREE collects no metrics"},
		// With SAMPLE, METRICS= does not apply at all: said first.
		{"SAMPLE,CALLTREE,METRICS=PTT_TIME", "METRICS=", "does not apply with SAMPLE"},
		{"PTT=magic", "PTT=magic", "unknown PTT backend"},
		{"PORT=0", "PORT=0", "1-65535"},
		{"PORT=http", "PORT=http", "1-65535"},
		{"HOST=", "HOST=", "needs an address"},
		{"TOKEN=", "TOKEN=", "without blanks"},
		{"PORT=9000,HOST=0.0.0.0", "HOST", "not loopback: listening beyond this host needs TOKEN="},
		{"PORT=9000,HOST=::", "HOST", "needs TOKEN="},
		{"PORT=9000,HOST=example.com", "HOST", "needs TOKEN="},
		{"HOST=127.0.0.1", "HOST", "needs PORT="},
		{"BCI,ROOTS=nodot", "ROOTS=nodot", "Class.method"},
		{"ROOTS=Foo.bar+.x", "ROOTS=Foo.bar+.x", "Class.method"},
		{"ROOTS=+", "ROOTS=+", "Class.method"},
		{"BCI,ROOTS=Foo.bar(", "ROOTS=Foo.bar(", "Class.method"},
		{"BCI,ROOTS=com.sun..Foo.bar", "ROOTS=com.sun..Foo.bar", "Class.method"},
		{"ROOTS=Foo.bar(I)V", "ROOTS=Foo.bar(I)V", "Class.method"},
		{"ROOTS=Foo. bar", "ROOTS=Foo. bar", "Class.method"},
		{"SAMPLE,ROOTS=Foo.bar", "ROOTS", "sampling has none"},
		{"SAMPLE,BCI", "SAMPLE", "one event source at a time"},
		{"BCI,METHODEVENTS", "METHODEVENTS", "one event source at a time: BCI or METHODEVENTS"},
		{"METHODEVENTS,START,BCI", "BCI", "one event source at a time: BCI or METHODEVENTS"},
		{"BCI,METHODEVENTS,NOMETHODEVENTS", "METHODEVENTS", "one event source at a time: BCI or METHODEVENTS"},
		{"ALLOC,LOCK", "LOCK", "one event source at a time"},
		{"METHODEVENTS,SAMPLE", "SAMPLE", "one event source at a time"},
		{"METHODEVENTS,INCLUDE=a.b", "INCLUDE", "not with METHODEVENTS"},
		{"NOBCI,ALLMETHODS", "ALLMETHODS", "not with METHODEVENTS"},
		{"SAMPLE,EXCLUDE=a.b", "EXCLUDE", "not with SAMPLE"},
	} {
		t.Run(c.opts, func(t *testing.T) {
			_, err := ParseOptions(c.opts, "")
			require.Error(t, err)
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, c.wantOption, oe.Option)
			assert.Contains(t, oe.Reason, c.wantReason)
			assert.Contains(t, err.Error(), "valid options: ")
		})
	}
}

// Errors say whether the option came from -agentpath or JPROFOPTS.
func TestOptionErrorNamesOrigin(t *testing.T) {
	for _, c := range []struct{ opts, env, want string }{
		{"BOGUS", "", `invalid option "BOGUS" (from the -agentpath options): unknown option`},
		{"START", "PORT=http", `invalid option "PORT=http" (from JPROFOPTS): needs a TCP port`},
		{"METRICS=PTT_TIME", "CALLTREE", "(from CALLTREE from JPROFOPTS, METRICS= from the -agentpath options)"},
		{"START", "ALLOC,LOCK", `invalid option "LOCK" (from JPROFOPTS): one event source at a time`},
		{"ALLOC,SAMPLE", "", `invalid option "ALLOC" (from the -agentpath options): one event source at a time`},
		{"ALLOC,JLM", "", `invalid option "JLM" (from the -agentpath options): is an option of bytecode instrumentation`},
		{"JLM", "LOCK", `invalid option "JLM" (from JLM from the -agentpath options, LOCK from JPROFOPTS): is an option of bytecode`},
	} {
		_, err := ParseOptions(c.opts, c.env)
		require.Error(t, err, c.opts+" + "+c.env)
		assert.Contains(t, err.Error(), c.want)
	}
}

// An event source in JPROFOPTS replaces the -agentpath options' (as a
// mode does); the rest of those options stay.
func TestJPROFOPTSSourceWins(t *testing.T) {
	for _, c := range []struct {
		opts, env string
		check     func(*Options) bool
	}{
		{"ALLOC,START", "LOCK", func(o *Options) bool { return o.Lock != nil && o.Alloc == nil && o.Start }},
		{"SAMPLE", "BCI", func(o *Options) bool { return o.BCI && o.Sample == nil }},
		{"LOCK", "METHODEVENTS", func(o *Options) bool { return o.Lock == nil && !o.BCI && o.source == sourceMethodEvents }},
		{"METHODEVENTS", "SAMPLE=10ms", func(o *Options) bool { return o.Sample != nil && !o.BCI }},
		{"SAMPLE", "START", func(o *Options) bool { return o.Sample != nil && o.Start }},
	} {
		o, err := ParseOptions(c.opts, c.env)
		require.NoError(t, err, c.opts+" + "+c.env)
		assert.True(t, c.check(o), c.opts+" + "+c.env)
	}
}

func TestOptionHelpListsEveryOption(t *testing.T) {
	h := OptionHelp()
	for _, s := range optionSpecs {
		assert.Contains(t, h, s.name)
	}
}

func TestMetricPlan(t *testing.T) {
	for _, c := range []struct {
		opts         string
		want, orElse []ptt.Metric
	}{
		{"CALLTREE", nil, nil},
		{"RTARCF", []ptt.Metric{ptt.Insts}, []ptt.Metric{ptt.Time}},
		{"CALLFLOW", []ptt.Metric{ptt.Insts, ptt.Cycles}, []ptt.Metric{ptt.Time}},
		{"METRICS=PTT_INSTS", []ptt.Metric{ptt.Insts}, nil}, // asked for by name: no fallback
		{"CALLFLOW,METRICS=PTT_TIME", []ptt.Metric{ptt.Time}, nil},
	} {
		o, err := ParseOptions(c.opts, "")
		require.NoError(t, err)
		p := o.plan()
		assert.Equal(t, c.want, p.want, c.opts)
		assert.Equal(t, c.orElse, p.fallback, c.opts)
	}
}

// The README's option reference lists every option the parser knows.
func TestREADMEListsEveryOption(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	readme := string(b)
	for _, s := range optionSpecs {
		assert.Contains(t, readme, "`"+s.name, "README.md does not document %s", s.name)
	}
}

func TestValidRoots(t *testing.T) {
	for _, ok := range []string{"Foo.bar", "com.example.*.handle", "Foo.*", "a/b/C.m", "Foo.<init>", "Foo$Inner.run",
		"com.sun.tools.javac.comp.Attr.attribTree+com.sun.tools.javac.jvm.ClassWriter.writeClass", "A.b:C.d", "x?.y", "Überklasse.größe"} {
		assert.True(t, validRoots(ok), ok)
	}
	for _, bad := range []string{"", "+", "Foo", ".bar", "Foo.", "Foo.bar(", "Foo.bar(I)V", "com..Foo.bar", "Foo. bar", "Foo.<foo>", "Foo.bar;"} {
		assert.False(t, validRoots(bad), bad)
	}
}

// BCI is the default source; METHODEVENTS (or NOBCI) and SAMPLE choose
// the others, and a later source option replaces an earlier one.
func TestEventSource(t *testing.T) {
	for _, c := range []struct {
		opts, env string
		bci       bool
		name      string
	}{
		{"", "", true, "BCI"},
		{"RTARCF,START", "", true, "BCI"},
		{"BCI", "", true, "BCI"},
		{"METHODEVENTS", "", false, "METHODEVENTS"},
		{"NOBCI", "", false, "METHODEVENTS"},
		{"METHODEVENTS", "BCI", true, "BCI"}, // JPROFOPTS wins; both in one string: TestParseOptionsErrors
		{"METHODEVENTS", "NOMETHODEVENTS", true, "BCI"},
		{"BCI", "METHODEVENTS", false, "METHODEVENTS"},
		{"SAMPLE", "", false, "SAMPLE"},
		{"ROOTS=a.B.c", "", true, "BCI"},
	} {
		o, err := ParseOptions(c.opts, c.env)
		require.NoError(t, err, c.opts)
		assert.Equal(t, c.bci, o.BCI, "%s / %s", c.opts, c.env)
		assert.Equal(t, c.name, o.sourceName(), "%s / %s", c.opts, c.env)
	}
}

// One PTT read per event with either source unless LATEREAD asks for two.
func TestLateReadOption(t *testing.T) {
	for _, c := range []struct {
		opts string
		late bool
	}{
		{"", false},
		{"METHODEVENTS", false},
		{"LATEREAD", true},
		{"METHODEVENTS,LATEREAD", true},
		{"LATEREAD,NOLATEREAD", false},
		{"SAMPLE", false},
	} {
		o, err := ParseOptions(c.opts, "")
		require.NoError(t, err, c.opts)
		assert.Equal(t, c.late, o.LateRead, c.opts)
	}
}
