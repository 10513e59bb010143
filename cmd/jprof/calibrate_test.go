package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
)

// rawGen is a RAWGEN log-gen whose header names the table the agent used.
func rawGen(t *testing.T, note string) string {
	gen := " libjprof log-gen\n Process_Number_ID=7\n Note: " + note + "\n Units :: PTT_TIME\n : 1 = PTT_TIME (ns, uncalibrated)\n" +
		"500 s0 > i:A.a()V 00000001_main\n700 s0 < i:A.a()V 00000001_main\n"
	p := filepath.Join(t.TempDir(), "log-gen_7")
	require.NoError(t, os.WriteFile(p, []byte(gen), 0o644))
	return p
}

// jprof calibrate takes the table the header names: a built-in one of
// this build is used, one it does not have is an error that says what to
// do, and -table none calibrates with the file's minima alone.
func TestCalibrateTableFromHeader(t *testing.T) {
	ts, err := calibration.Embedded()
	require.NoError(t, err)
	require.NotEmpty(t, ts)
	in := rawGen(t, calibration.Note(ts[0].Metric, calibration.FromBuiltIn, ts[0], ""))
	out := filepath.Join(t.TempDir(), "cal.gen")
	code, _, stderr := jprof("calibrate", in, "-o", out)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), "built-in table "+ts[0].ID())

	missing := calibration.NewTable(calibration.Provenance{JVM: "No Such VM", JVMVersion: "1", Metric: "PTT_TIME", Backend: "bpf"})
	in = rawGen(t, calibration.Note("PTT_TIME", calibration.FromBuiltIn, missing, ""))
	code, _, stderr = jprof("calibrate", in, "-o", out)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "a built-in table this jprof does not have")
	assert.Contains(t, stderr, "-table none")

	code, _, stderr = jprof("calibrate", in, "-table", "none", "-o", out)
	require.Equal(t, 0, code, stderr)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(b), "built-in table"), string(b))
}

// jprof calibrate -table takes only a table that fits the log-gen's run,
// by the agent's rule for CALTABLE (calibration.Table.Fits): a table of
// another backend, event source or reads per event is refused, naming
// the field, and nothing is written; one that fits is used. A log-gen
// from before the run note is checked against the table the agent used.
func TestCalibrateTableMustFitRun(t *testing.T) {
	run := calibration.Run{JVM: "OpenJDK 64-Bit Server VM", JVMVersion: "17.0.15+6", Metric: "PTT_TIME", Backend: "bpf",
		Path: calibration.Path{Source: calibration.SourceBCI, Reads: "1", Clock: calibration.ClockTSC}}
	table := func(t *testing.T, mod func(*calibration.Provenance)) string {
		p := calibration.Provenance{JVM: run.JVM, JVMVersion: "17.0.2+8", Metric: "PTT_TIME", Backend: "bpf",
			Source: calibration.SourceBCI, Reads: "1", Clock: calibration.ClockTSC, Runs: 1}
		mod(&p)
		tab := calibration.NewTable(p)
		tab.Entries[0] = calibration.Entry{Min: 100, Env: 50}
		path := filepath.Join(t.TempDir(), "t.cal")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, calibration.WriteAll(f, tab))
		require.NoError(t, f.Close())
		return path
	}
	in := rawGen(t, calibration.RunNote(run))
	for _, c := range []struct {
		name string
		mod  func(*calibration.Provenance)
		want string
	}{
		{"backend", func(p *calibration.Provenance) { p.Backend = "clock" }, `calibration table is for backend "clock", this run has "bpf"`},
		{"source", func(p *calibration.Provenance) { p.Source = calibration.SourceJVMTI }, `calibration table is for source "jvmti-method-events", this run has "bci"`},
		{"reads", func(p *calibration.Provenance) { p.Reads = "2" }, `calibration table is for reads "2", this run has "1"`},
		{"jdk", func(p *calibration.Provenance) { p.JVMVersion = "25+36" }, `calibration table is for jvm-version "25+36", this run has "17.0.15+6"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cal.gen")
			code, _, stderr := jprof("calibrate", in, "-table", table(t, c.mod), "-o", out)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "no table for this run")
			assert.Contains(t, stderr, c.want)
			assert.NoFileExists(t, out)
		})
	}
	out := filepath.Join(t.TempDir(), "cal.gen")
	code, _, stderr := jprof("calibrate", in, "-table", table(t, func(*calibration.Provenance) {}), "-o", out)
	require.Equal(t, 0, code, stderr)
	assert.FileExists(t, out)

	// Without the run note: the built-in table the agent used stands for
	// the run; with neither, no table can be checked and none is taken.
	ts, err := calibration.Embedded()
	require.NoError(t, err)
	builtin := ts[0]
	old := rawGen(t, calibration.Note(builtin.Metric, calibration.FromBuiltIn, builtin, ""))
	code, _, stderr = jprof("calibrate", old, "-table", table(t, func(p *calibration.Provenance) {
		p.Backend = "nosuch"
	}), "-o", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `calibration table is for backend "nosuch"`)
	code, _, stderr = jprof("calibrate", rawGen(t, "nothing"), "-table", table(t, func(*calibration.Provenance) {}), "-o", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "-table none")
}
