package calibration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every shipped table is found again by the ID the agent writes, and the
// header note round-trips.
func TestEmbeddedByIDAndNote(t *testing.T) {
	ts, err := Embedded()
	require.NoError(t, err)
	require.NotEmpty(t, ts)
	ids := map[string]bool{}
	for _, tab := range ts {
		id := tab.ID()
		assert.False(t, ids[id], "two shipped tables with the same ID %s", id)
		ids[id] = true
		got, ok := EmbeddedByID(id)
		require.True(t, ok, id)
		assert.Equal(t, tab.Entries, got.Entries)

		n, ok := ParseNote(Note(tab.Metric, FromBuiltIn, tab, ""))
		require.True(t, ok)
		assert.Equal(t, TableNote{Metric: tab.Metric, From: FromBuiltIn, ID: id}, n)
		n, ok = ParseNote(Note(tab.Metric, FromCALTABLE, tab, "/a dir/t.cal"))
		require.True(t, ok)
		assert.Equal(t, TableNote{Metric: tab.Metric, From: FromCALTABLE, ID: id, File: "/a dir/t.cal"}, n)
	}
	n, ok := ParseNote(" " + Note("PTT_TIME", FromNone, nil, ""))
	require.True(t, ok)
	assert.Equal(t, TableNote{Metric: "PTT_TIME", From: FromNone}, n)
	for _, bad := range []string{"Calibration: final minima", "Calibration table : none", "Calibration table PTT_TIME: elsewhere x", "Calibration table PTT_TIME: built-in "} {
		_, ok := ParseNote(bad)
		assert.False(t, ok, bad)
	}
	_, ok = EmbeddedByID(NewTable(Provenance{JVM: "x", Date: time.Unix(0, 0)}).ID())
	assert.False(t, ok)
}

// The run note round-trips, and a table fits a run by Matches and
// MatchesPath together.
func TestRunNote(t *testing.T) {
	run := Run{JVM: `Open "JDK" VM`, JVMVersion: "17.0.15+6", Metric: "PTT_TIME", Backend: "bpf",
		Path: Path{Source: SourceBCI, Reads: "1", Clock: ClockTSC}}
	got, ok := ParseRunNote(" " + RunNote(run))
	require.True(t, ok, RunNote(run))
	assert.Equal(t, run, got)
	for _, bad := range []string{"Calibration run PTT_TIME: jvm=x", "Calibration run : jvm=\"x\"", "Calibration table PTT_TIME: none", `Calibration run PTT_TIME: jvm="x" what=1`} {
		_, ok := ParseRunNote(bad)
		assert.False(t, ok, bad)
	}
	tab := NewTable(Provenance{JVM: run.JVM, JVMVersion: "17.0.2", Metric: "PTT_TIME", Backend: "bpf", Source: SourceBCI, Reads: "1", Clock: ClockTSC})
	assert.NoError(t, tab.Fits(run))
	assert.Equal(t, run.Path, tab.RunOf().Path)
	tab.Backend = "clock"
	assert.EqualError(t, tab.Fits(run), `calibration table is for backend "clock", this run has "bpf"`)
	tab.Backend, tab.Clock = "bpf", ClockVDSO
	assert.EqualError(t, tab.Fits(run), `calibration table is for clock "vdso", this run has "tsc"`)
}
