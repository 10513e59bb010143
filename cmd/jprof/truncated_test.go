package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/reports"
)

// A log-gen the agent cut after a write error: every command reads it up
// to its truncation line and warns once on stderr; loggen's copy ends
// with the same line, a report's header says so.
func TestTruncatedInput(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	lw := reports.NewLogGenWriter(&b, 5, nil)
	require.NoError(t, lw.Write(reports.Event{Thread: "00000001_main", Kind: reports.Entry, Name: "I:a.b()V"}))
	require.NoError(t, lw.Flush())
	line := reports.TruncationLine(int64(b.Len()), "no space left on device", 9, "events")
	in := filepath.Join(dir, "log-gen_5")
	require.NoError(t, os.WriteFile(in, []byte(b.String()+line+"\n"), 0o644))

	code, out, stderr := jprof("loggen", in)
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasSuffix(out, line+"\n"), out)
	assert.Equal(t, "jprof: warning: "+in+" is truncated: "+strings.TrimPrefix(line, " *** ")+"; what follows covers only what was written before\n", stderr)

	code, out, stderr = jprof("report", "xtree", in)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "is truncated")
	assert.Contains(t, out, "log-gen_5 is truncated (libjprof: write error after")
	assert.Contains(t, out, "  a.b()\n") // the Java-style name
}

// A log-gen that reached GENMAX is whole, so only its last line says it
// holds the first events alone: every command that reads it warns once on
// stderr, says so in its output's header (report, logrt, flame, pprof)
// and, for a log-gen copy (loggen, calibrate), ends it with the same line.
func TestSizeLimitedInput(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	lw := reports.NewLogGenWriter(&b, 5, []reports.Metric{{Name: "PTT_TIME", Unit: "ns"}})
	require.NoError(t, lw.Write(reports.Event{Thread: "00000001_main", Kind: reports.Entry, Name: "I:a.b()V", Values: []uint64{500}, HasKey: true}))
	line := reports.SizeLimitLine(4096, 9)
	require.NoError(t, lw.SizeLimited(strings.TrimPrefix(line, " *** ")))
	require.NoError(t, lw.Flush())
	in := filepath.Join(dir, "log-gen_5")
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	warning := "jprof: warning: " + in + " holds only its first events: " + strings.TrimPrefix(line, " *** ") + "; what follows covers only the events before the limit\n"
	note := "Warning: log-gen_5 holds only its first events (libjprof: size limit (GENMAX) of 4096 bytes reached; 9 events not written)"

	for _, args := range [][]string{{"report", "xtree"}, {"report", "xprof"}, {"logrt"}, {"flame"}, {"collapsed"}} {
		code, out, stderr := jprof(append(args, in)...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, warning, stderr, "%v", args)
		if args[0] != "collapsed" { // no header
			assert.Contains(t, out, note, "%v", args)
		}
	}
	code, out, stderr := jprof("pprof", in)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, warning, stderr)
	prof, err := profile.Parse(strings.NewReader(out))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(prof.Comments, "\n"), note)

	for _, args := range [][]string{{"loggen", in}, {"calibrate", "-table", "none", in}} {
		code, out, stderr := jprof(args...)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, warning, stderr, args[0])
		assert.True(t, strings.HasSuffix(out, "\n"+line+"\n"), "%s: %s", args[0], out)
	}
}

// A log-gen cut short is refused by loggen before it prints anything:
// standard output cannot be taken back, and the copy is written as the
// events are read (here more than its output buffer holds).
func TestLogGenCutPrintsNothing(t *testing.T) {
	var b strings.Builder
	lw := reports.NewLogGenWriter(&b, 5, nil)
	for i := 0; i < 20000; i++ {
		require.NoError(t, lw.Write(reports.Event{Thread: "00000001_main", Kind: reports.Entry, Name: "I:a.b()V"}))
		require.NoError(t, lw.Write(reports.Event{Thread: "00000001_main", Kind: reports.Exit, Name: "I:a.b()V"}))
	}
	require.NoError(t, lw.Flush())
	whole := b.String()
	require.Greater(t, len(whole), 256<<10)
	in := filepath.Join(t.TempDir(), "log-gen_5")
	require.NoError(t, os.WriteFile(in, []byte(whole), 0o644))
	code, out, stderr := jprof("loggen", in)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, whole, out)

	require.NoError(t, os.WriteFile(in, []byte(whole[:len(whole)-5]), 0o644))
	code, out, stderr = jprof("loggen", in)
	assert.Equal(t, 1, code)
	assert.NotEmpty(t, stderr)
	assert.Empty(t, out, "what loggen printed before it found the file cut")
}

// A log-jlm without its closing line (an older agent's, or a copy cut
// short) is reported with a warning; one whose count is wrong is refused.
func TestLogJLMUnended(t *testing.T) {
	j := &reports.JLM{Rows: []reports.JLMRow{{Gets: 3, Class: "java.lang.Object", Site: "a.B.m (block 1, line 2)"}}}
	var b strings.Builder
	require.NoError(t, reports.WriteJLM(&b, j))
	whole := b.String()
	end := strings.LastIndex(whole, " End of log-jlm")
	require.Positive(t, end)
	in := filepath.Join(t.TempDir(), "log-jlm.1_5")
	require.NoError(t, os.WriteFile(in, []byte(whole[:end]), 0o644))
	code, out, stderr := jprof("report", "jlm", in)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "a.B.m (block 1, line 2)")
	assert.Contains(t, stderr, "has no closing \"End of log-jlm\" line")

	require.NoError(t, os.WriteFile(in, []byte(strings.Replace(whole, "1 rows", "2 rows", 1)), 0o644))
	code, out, stderr = jprof("report", "jlm", in)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, `expected " End of log-jlm: 1 rows"`)
	assert.NotContains(t, stderr, "report jlm reads", "the file is a log-jlm")
}
