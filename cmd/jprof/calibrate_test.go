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
