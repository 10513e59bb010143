package calibration

import (
	"bytes"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every table shipped in tables/ must parse and be usable: a bad one
// would be skipped silently at run time.
func TestEmbedded(t *testing.T) {
	ts, err := Embedded()
	require.NoError(t, err)
	for _, tab := range ts {
		assert.NotEmpty(t, tab.Metric, "shipped tables name their metric")
		assert.NotEmpty(t, tab.Backend, "shipped tables name their backend")
		assert.NotEmpty(t, tab.JVMVersion, "shipped tables name their JVM version")
		assert.Empty(t, tab.Invalid(), "shipped tables hold only valid keys")
	}
	// With no table for it, there is no default.
	_, ok := Default("No Such VM", "99", "PTT_TIME", "bpf")
	assert.False(t, ok)
}

func calFile(t *testing.T, tabs ...*Table) *fstest.MapFile {
	var b bytes.Buffer
	require.NoError(t, WriteAll(&b, tabs...))
	return &fstest.MapFile{Data: b.Bytes()}
}

func TestPick(t *testing.T) {
	mk := func(version, metric, backend string, runs, day int) *Table {
		tab := NewTable(Provenance{JVM: "OpenJDK 64-Bit Server VM", JVMVersion: version, Metric: metric,
			Backend: backend, Runs: runs, Date: time.Date(2026, 1, day, 0, 0, 0, 0, time.UTC)})
		tab.Entries[kA] = Entry{Min: uint64(runs*100 + day), Count: 1}
		return tab
	}
	fsys := fstest.MapFS{
		"tables/README.txt": {Data: []byte("not a table")},
		"tables/a.cal": calFile(t,
			mk("17.0.15+6", "PTT_TIME", "bpf", 3, 1),
			mk("17.0.15+6", "PTT_INSTS", "bpf", 3, 1)),
		"tables/b.cal": calFile(t, mk("17.0.9+1", "PTT_TIME", "bpf", 9, 5)),
		"tables/c.cal": calFile(t, mk("17.0.9+1", "PTT_TIME", "bpf", 9, 6)),
		"tables/d.cal": calFile(t, mk("21.0.1+12", "PTT_TIME", "perf", 1, 1)),
	}
	ts, err := loadFS(fsys, "tables")
	require.NoError(t, err)
	require.Len(t, ts, 5)

	tests := []struct {
		name, version, metric, backend string
		wantMin                        uint64 // 0: no table
	}{
		{"exact version wins", "17.0.15+6", "PTT_TIME", "bpf", 301},
		{"then most runs, then newest", "17.0.2+8", "PTT_TIME", "bpf", 906},
		{"metric", "17.0.15+6", "PTT_INSTS", "bpf", 301},
		{"backend", "21.0.3", "PTT_TIME", "perf", 101},
		{"no backend table", "17.0.15+6", "PTT_TIME", "clock", 0},
		{"no release table", "11.0.2", "PTT_TIME", "bpf", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pick(ts, "OpenJDK 64-Bit Server VM", tc.version, tc.metric, tc.backend)
			if tc.wantMin == 0 {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.wantMin, got.Entries[kA].Min)
			got.Entries[kA] = Entry{}
			again, _ := pick(ts, "OpenJDK 64-Bit Server VM", tc.version, tc.metric, tc.backend)
			assert.Equal(t, tc.wantMin, again.Entries[kA].Min, "Default returns a copy")
		})
	}

	bad := fstest.MapFS{"tables/x.cal": {Data: []byte("garbage\n")}}
	_, err = loadFS(bad, "tables")
	assert.ErrorContains(t, err, "tables/x.cal")
}

// DefaultFor chooses from the tables' headers and returns the chosen
// table whole: the same as choosing among every table parsed.
func TestDefaultForHeaders(t *testing.T) {
	all, err := Embedded()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for _, tab := range all {
		p := tab.Provenance
		path := p.Path()
		var same []*Table
		for _, u := range all {
			if u.MatchesPath(path) == nil {
				same = append(same, u)
			}
		}
		want, ok := pick(same, p.JVM, p.JVMVersion, p.Metric, p.Backend)
		require.True(t, ok)
		got, ok := DefaultFor(path, p.JVM, p.JVMVersion, p.Metric, p.Backend)
		require.True(t, ok, "%+v", p)
		assert.Equal(t, want, got, "%+v", p)
		assert.NotEmpty(t, got.Entries)
	}
}
