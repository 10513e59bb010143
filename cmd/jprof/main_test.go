package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	logRT  = "testdata/log-rt.1_4242"
	logGen = "testdata/log-gen_4242"
)

// jprof runs the command and returns its status, stdout and stderr.
func jprof(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign")
	require.NoError(t, os.WriteFile(foreign, []byte("hello\n"), 0o644))
	good, err := os.ReadFile(logGen)
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut")
	require.NoError(t, os.WriteFile(cut, good[:len(good)-10], 0o644))

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings expected on stdout
		stderr []string // and on stderr
	}{
		{"help", []string{"help"}, 0, []string{"usage:", "jprof report xtree|xarc|xprof"}, nil},
		{"no command", nil, 2, nil, []string{"jprof: no command", "usage:"}},
		{"unknown command", []string{"frob"}, 2, nil, []string{`unknown command "frob"`}},
		{"xtree of a log-rt", []string{"report", "xtree", logRT}, 0,
			[]string{" libjprof xtree", "      hellop.myA()\n", "    hellop.main(String[])\n", "total 72220"}, nil},
		{"xtree jvm names", []string{"report", "xtree", "-names", "jvm", logRT}, 0,
			[]string{" libjprof xtree", "      J:hellop.myA()V\n", "total 72220"}, nil},
		{"xtree short names", []string{"report", "xtree", "--names=SHORT", logRT}, 0,
			[]string{"      hellop.myA\n", "Object.<init>\n", "PrintStream.println\n"}, nil},
		{"xarc of a log-gen", []string{"report", "xarc", logGen}, 0,
			[]string{" libjprof xarc", "java.lang.ref.Reference.waitForReferencePendingList()\n", reports.Spontaneous}, nil},
		{"xarc jvm names", []string{"report", "xarc", logGen, "-names", "jvm"}, 0,
			[]string{"O:java/lang/ref/Reference.waitForReferencePendingList()V\n"}, nil},
		{"pruned xprof", []string{"report", "--prune", "5", "xprof", logRT}, 0,
			[]string{"hellop.myC()\n", reports.PrunedName, "pruned: subtrees below 5%"}, nil},
		{"bad names", []string{"report", "xprof", "-names", "javap", logRT}, 2, nil,
			[]string{`report: invalid value "javap" for flag -names: unknown name form "javap": want java, short or jvm`}},
		{"flag after the file", []string{"report", "xprof", logRT, "--prune=50"}, 0, []string{reports.PrunedName}, nil},
		{"unknown report", []string{"report", "xfoo", logRT}, 2, nil, []string{`unknown report "xfoo"`}},
		{"bad prune", []string{"report", "xtree", "--prune", "150", logRT}, 2, nil, []string{"-prune 150"}},
		{"a command's usage only", []string{"report", "xprf", logRT}, 2, nil,
			[]string{`unknown report "xprf"`, "\nusage: jprof report xtree|xarc|xprof", "(jprof help report: "}},
		{"bad flag", []string{"report", "xtree", "--frob", logRT}, 2, nil, []string{"report: flag provided but not defined: -frob"}},
		{"no file", []string{"report", "xtree"}, 2, nil, []string{"report needs a report name and a file"}},
		{"missing file", []string{"report", "xtree", filepath.Join(dir, "nope")}, 1, nil, []string{"no such file"}},
		{"foreign file", []string{"report", "xtree", foreign}, 1, nil, []string{"foreign: line 1: expected", "not a libjprof log-rt or log-gen"}},
		{"cut log-gen", []string{"report", "xtree", cut}, 1, nil, []string{"cut: log-gen line 18: truncated"}},
		{"pprof bad names", []string{"pprof", "-names", "x", logRT}, 2, nil, []string{`unknown name form "x"`}},
		{"logrt of a log-rt", []string{"logrt", logRT}, 1, nil, []string{"is a log-rt, not a log-gen"}},
		{"collapsed of a log-rt", []string{"collapsed", logRT}, 0,
			[]string{"0000b718_main;hellop.main(String[]);hellop.myA();hellop.myC() 70040\n"}, nil},
		{"collapsed jvm names", []string{"collapsed", "-names", "jvm", logRT}, 0,
			[]string{"0000b718_main;J:hellop.main([Ljava/lang/String,)V;J:hellop.myA()V;J:hellop.myC()V 70040\n"}, nil},
		{"collapsed calls merged", []string{"collapsed", "--merge", "-value=CALLS", logGen}, 0,
			[]string{"\nhellop.main(String[]);hellop.myA() 2\n"}, nil},
		{"collapsed short names", []string{"collapsed", "--merge", "-names", "short", logGen}, 0,
			[]string{"\nhellop.main;hellop.myA;hellop.myC "}, nil},
		{"collapsed bad names", []string{"collapsed", "-names", "", logRT}, 2, nil, []string{`unknown name form ""`}},
		{"collapsed bad value", []string{"collapsed", "-value", "PTT_INSTS", logRT}, 2, nil,
			[]string{`collapsed -value: no value "PTT_INSTS" in this profile: want one of calls, PTT_TIME`}},
		{"flame to stdout", []string{"flame", logRT}, 0,
			[]string{"<!DOCTYPE html>", "<title>log-rt.1_4242 (pid 4242)</title>", `"hellop.myC()"`}, nil},
		{"flame jvm names", []string{"flame", "-names", "jvm", logRT}, 0, []string{`"J:hellop.myC()V"`}, nil},
		{"flame bad names", []string{"flame", "-names", "java,short", logRT}, 2, nil, []string{`flame: invalid value "java,short" for flag -names`}},
		{"flame bad value", []string{"flame", "-value", "frob", logRT}, 2, nil, []string{`flame -value: no value "frob"`}},
		{"flame two files", []string{"flame", logRT, logGen}, 2, nil, []string{`flame: extra argument "` + logGen + `": it takes one file`}},
		{"report extra argument", []string{"report", "xtree", logRT, "extra"}, 2, nil, []string{`report: extra argument "extra": it takes a report name and one file`}},
		{"calibrate extra argument", []string{"calibrate", logGen, "extra"}, 2, nil, []string{`calibrate: extra argument "extra"`}},
		{"loggen extra argument", []string{"loggen", logGen, "extra"}, 2, nil, []string{`loggen: extra argument "extra"`}},
		{"heapdiff extra argument", []string{"heapdiff", "a", "b", "c"}, 2, nil, []string{`heapdiff: extra argument "c"`}},
		{"profile extra argument", []string{"profile", "1", "extra"}, 2, nil, []string{`profile: extra argument "extra": it takes one pid or main class name`}},
		{"start extra argument", []string{"start", "-e", "cpu", "1", "extra"}, 2, nil, []string{`start: extra argument "extra": it takes one pid`}},
		{"stop extra argument", []string{"stop", "1", "extra"}, 2, nil, []string{`stop: extra argument "extra": it takes one pid`}},
		{"flush extra argument", []string{"flush", "1", "extra"}, 2, nil, []string{`flush: extra argument "extra": it takes one pid`}},
		{"status extra argument", []string{"status", "1", "extra"}, 2, nil, []string{`status: extra argument "extra": it takes one pid`}},
		{"heap extra argument", []string{"heap", "1", "extra"}, 2, nil, []string{`heap: extra argument "extra": it takes one pid`}},
		{"heapdump extra argument", []string{"heapdump", "1", "extra"}, 2, nil, []string{`heapdump: extra argument "extra": it takes one pid`}},
		{"prune NaN", []string{"report", "xtree", "-prune", "NaN", logRT}, 2, nil, []string{"-prune NaN: want a percentage from 0 to 100"}},
		{"pprof prune NaN", []string{"pprof", "-prune", "nan", logRT}, 2, nil, []string{"-prune NaN: want a percentage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := jprof(tc.args...)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr)
			for _, s := range tc.stdout {
				assert.Contains(t, stdout, s)
			}
			for _, s := range tc.stderr {
				assert.Contains(t, stderr, s)
			}
			if tc.code != 0 {
				assert.Empty(t, stdout)
			}
		})
	}
}

func TestPprofCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prof.pb.gz")
	for _, in := range []string{logRT, logGen} {
		code, stdout, stderr := jprof("pprof", in, "-o", out)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stdout)
		f, err := os.Open(out)
		require.NoError(t, err)
		pp, err := profile.Parse(f)
		f.Close()
		require.NoError(t, err)
		require.NoError(t, pp.CheckValid())
		assert.Equal(t, "ptt_time", pp.SampleType[0].Type)
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")

	// -prune folds small subtrees first: fewer samples, <pruned> among
	// the functions, the same total, and the fold said in the comments.
	read := func(args ...string) *profile.Profile {
		code, _, stderr := jprof(append([]string{"pprof"}, args...)...)
		require.Equal(t, 0, code, stderr)
		f, err := os.Open(out)
		require.NoError(t, err)
		defer f.Close()
		pp, err := profile.Parse(f)
		require.NoError(t, err)
		return pp
	}
	total := func(pp *profile.Profile) (sum int64) {
		for _, s := range pp.Sample {
			sum += s.Value[0]
		}
		return sum
	}
	whole := read(logRT, "-o", out)
	pruned := read("-prune", "5", logRT, "-o", out)
	assert.Less(t, len(pruned.Sample), len(whole.Sample))
	assert.Equal(t, total(whole), total(pruned))
	var names []string
	for _, f := range pruned.Function {
		names = append(names, f.Name)
	}
	assert.Contains(t, names, reports.PrunedName)
	assert.Contains(t, strings.Join(pruned.Comments, "\n"), "pruned: subtrees below 5% of the total")
	code, _, stderr := jprof("pprof", "-prune", "-1", logRT, "-o", out)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want a percentage")
}

// TestPprofStdout: without -o, jprof pprof writes the profile to
// standard output, as every command does.
func TestPprofStdout(t *testing.T) {
	code, stdout, stderr := jprof("pprof", logRT)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	pp, err := profile.Parse(strings.NewReader(stdout))
	require.NoError(t, err)
	require.NoError(t, pp.CheckValid())
	assert.Equal(t, "ptt_time", pp.SampleType[0].Type)
	// The same profile as with -o.
	out := filepath.Join(t.TempDir(), "prof.pb.gz")
	code, _, stderr = jprof("pprof", "-o", out, logRT)
	require.Equal(t, 0, code, stderr)
	file, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, file, []byte(stdout))
}

// TestPprofCommandNames: function names in each form, the log-rt name
// always the system name.
func TestPprofCommandNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		name string // the function of J:hellop.main([Ljava/lang/String;)V
	}{
		{nil, "hellop.main(String[])"},
		{[]string{"-names", "java"}, "hellop.main(String[])"},
		{[]string{"-names", "short"}, "hellop.main"},
		{[]string{"-names", "jvm"}, "hellop.main([Ljava/lang/String;)V"},
	} {
		code, stdout, stderr := jprof(append([]string{"pprof", logRT}, tc.args...)...)
		require.Equal(t, 0, code, stderr)
		pp, err := profile.Parse(strings.NewReader(stdout))
		require.NoError(t, err)
		sys := map[string]string{}
		for _, f := range pp.Function {
			sys[f.SystemName] = f.Name
		}
		assert.Equal(t, tc.name, sys["J:hellop.main([Ljava/lang/String;)V"], "%v", tc.args)
	}
}

func TestLogRTCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "log-rt.0_4242")
	code, _, stderr := jprof("logrt", logGen, "-o", out)
	require.Equal(t, 0, code, stderr)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	golden := "testdata/logrt_rebuilt.golden"
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	assert.Contains(t, string(got), " Note: rebuilt by jprof logrt from log-gen log-gen_4242\n")

	// The same tree as BuildProfile, and to stdout without -o.
	f, err := os.Open(logGen)
	require.NoError(t, err)
	defer f.Close()
	built, err := reports.BuildProfile(f)
	require.NoError(t, err)
	parsed, err := reports.ParseLogRT(strings.NewReader(string(got)))
	require.NoError(t, err)
	require.NoError(t, reports.Compare(built, parsed, reports.CompareOptions{IgnoreHeader: true}))
	code, stdout, _ := jprof("logrt", logGen)
	require.Equal(t, 0, code)
	assert.Equal(t, string(got), stdout)
}

// TestPprofNamesReal converts the log-rt of a real hellop run and reads it
// with `go tool pprof -top` and -traces at their defaults: every method
// of the hellop class, and the JDK's charAt([BI)C, comes out whole, in
// Java's form.
func TestPprofNamesReal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM and go tool pprof")
	}
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,RTARCF,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	logRT := r.File("rt.1")
	out := filepath.Join(t.TempDir(), "hellop.pb.gz")
	code, _, stderr := jprof("pprof", logRT, "-o", out)
	require.Equal(t, 0, code, stderr)
	top, err := exec.Command("go", "tool", "pprof", "-top", "-nodefraction=0", out).CombinedOutput()
	require.NoError(t, err, "%s", top)
	traces, err := exec.Command("go", "tool", "pprof", "-traces", out).CombinedOutput()
	require.NoError(t, err, "%s", traces)

	want := map[string]bool{}
	for _, th := range jvmtest.ParseLogRT(t, logRT).Threads {
		th.Walk(func(n *reports.Node, _ int) {
			if strings.Contains(n.Name, ":hellop.") || strings.HasSuffix(n.Name, ".charAt([BI)C") {
				// i:java/lang/StringLatin1.charAt([BI)C is java.lang.StringLatin1.charAt(byte[], int)
				want[reports.FormatName(n.Name, reports.JavaNames)] = true
			}
		})
	}
	require.Contains(t, want, "hellop.myC()")
	require.Contains(t, want, "hellop.main(String[])")
	require.Contains(t, want, "java.lang.StringLatin1.charAt(byte[], int)")
	for name := range want {
		assert.Contains(t, string(top), "  "+name+"\n", "-top")
		assert.Contains(t, string(traces), " "+name+"\n", "-traces")
	}
}

// -o naming an input file (by its name, through a symbolic link or a
// hard link) is refused before anything is read or written, for every
// command that reads files, and the input is left as it was; -o naming a
// directory is refused so too, rather than failing at the rename after
// the work with a temporary file's name.
func TestOutputNotInput(t *testing.T) {
	dir := t.TempDir()
	copyIn := func(src, name string) string {
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	rt, gen := copyIn(logRT, "log-rt.1_4242"), copyIn(logGen, "log-gen_4242")
	raw := rawGen(t, "a note")
	hist := filepath.Join(dir, "h1")
	require.NoError(t, os.WriteFile(hist, []byte(" libjprof heap histogram\n Process_Number_ID=1\n\n num     #instances         #bytes  class name (module)\n-------------------------------------------------------\n   1:             2             32  java.lang.String (java.base@17)\n Total             2             32\n"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(rt, link))
	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(gen, hard))
	cases := []struct {
		in   string
		args []string
	}{
		{rt, []string{"report", "xtree", rt}},
		{rt, []string{"report", "jlm", rt}},
		{rt, []string{"flame", rt}},
		{rt, []string{"collapsed", rt}},
		{rt, []string{"pprof", rt}},
		{gen, []string{"logrt", gen}},
		{gen, []string{"loggen", gen}},
		{raw, []string{"calibrate", raw}},
		{hist, []string{"heapdiff", hist, hist}},
	}
	for _, c := range cases {
		before, err := os.ReadFile(c.in)
		require.NoError(t, err)
		outs := []string{c.in, filepath.Dir(c.in) + "/./" + filepath.Base(c.in) /* another name */}
		if c.in == rt {
			outs = append(outs, link)
		}
		if c.in == gen {
			outs = append(outs, hard)
		}
		for _, out := range outs {
			code, _, stderr := jprof(append(append([]string(nil), c.args...), "-o", out)...)
			assert.Equal(t, 2, code, "%v -o %s", c.args, out)
			assert.Contains(t, stderr, "is the input file", "%v -o %s", c.args, out)
			after, err := os.ReadFile(c.in)
			require.NoError(t, err)
			assert.Equal(t, before, after, "%v -o %s changed its input", c.args, out)
		}
		sub := t.TempDir()
		code, _, stderr := jprof(append(append([]string(nil), c.args...), "-o", sub)...)
		assert.Equal(t, 2, code, "%v -o DIR", c.args)
		assert.Contains(t, stderr, "-o "+sub+" is a directory", "%v", c.args)
		left, err := os.ReadDir(sub)
		require.NoError(t, err)
		assert.Empty(t, left, "%v -o DIR left files", c.args)
	}
	// The table of calibrate is an input too.
	code, _, stderr := jprof("calibrate", raw, "-table", hist, "-o", hist)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "is the input file")
}

// refines: -opts that only sets what -e leaves open is not a replacement.
func TestRefines(t *testing.T) {
	for _, c := range []struct {
		ev, by string
		want   bool
	}{
		{"ALLOC", "ALLOC=64k", true},
		{"SAMPLE=cpu", "SAMPLE=cpu:500us", true},
		{"SAMPLE=cpu", "SAMPLE=wall", false},
		{"LOCK", "ALLOC=64k", false},
		{"BCI,RTARCF", "SAMPLE", false},
	} {
		if got := refines(c.ev, c.by); got != c.want {
			t.Errorf("refines(%q, %q) = %v, want %v", c.ev, c.by, got, c.want)
		}
	}
}
