package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
