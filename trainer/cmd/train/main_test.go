package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
)

func TestArgs(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Error(t, run([]string{"-nosuchflag"}, &out, &errb))
	assert.ErrorContains(t, run([]string{"extra"}, &out, &errb), "unexpected arguments")
	err := run([]string{"-q", "-java", filepath.Join(t.TempDir(), "nojava")}, &out, &errb)
	assert.ErrorContains(t, err, "-XshowSettings:properties")
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.cal")
	tab := calibration.NewTable(calibration.Provenance{Metric: "PTT_TIME", Backend: "bpf"})
	tab.Entries[5] = calibration.Entry{Min: 9, Count: 1}
	require.NoError(t, writeFile(path, tab))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := calibration.Parse(f)
	require.NoError(t, err)
	assert.Equal(t, tab, got)
	left, err := filepath.Glob(filepath.Join(dir, ".train-*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file left")
}
