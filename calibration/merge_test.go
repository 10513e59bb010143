package calibration

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	kA = MakeKey(Interp, En, InterpStatic, Ex, Interp)
	kB = MakeKey(InterpStatic, En, Native, Xx, InterpStatic)
	kC = MakeKey(Other, En, Interp, En, NativeStatic)
)

func runTable(date int, entries map[Key]Entry) *Table {
	t := NewTable(Provenance{
		JVM: "OpenJDK 64-Bit Server VM", JVMVersion: "17.0.15+6", Arch: "amd64",
		Metric: "PTT_TIME", Backend: "bpf", Runs: 1, EnvSource: EnvDefault,
		Date:  time.Date(2026, 3, date, 0, 0, 0, 0, time.UTC),
		Notes: []string{"agent run"},
	})
	for k, e := range entries {
		t.Entries[k] = e
	}
	return t
}

func TestMerge(t *testing.T) {
	r1 := runTable(1, map[Key]Entry{kA: {Min: 200, Count: 10}, kB: {Min: 900, Count: 1}})
	r2 := runTable(3, map[Key]Entry{kA: {Min: 180, Count: 5}, kC: {Min: 300, Count: 2}})
	r3 := runTable(2, map[Key]Entry{kA: {Min: 190, Count: 1}})
	r3.CPU = "Some CPU"
	r3.Tool = "agent 2"

	got, err := Merge(r1, r2, r3)
	require.NoError(t, err)
	assert.Equal(t, map[Key]Entry{
		kA: {Min: 180, Count: 16},
		kB: {Min: 900, Count: 1},
		kC: {Min: 300, Count: 2},
	}, got.Entries)
	assert.Equal(t, 3, got.Runs)
	assert.Equal(t, time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), got.Date)
	assert.Equal(t, "Some CPU", got.CPU, "fields one table lacks are taken from the others")
	assert.Equal(t, "agent 2", got.Tool)
	assert.Equal(t, []string{"agent run"}, got.Notes)
	assert.Equal(t, EnvDefault, got.EnvSource)

	// Inputs are not changed.
	assert.Equal(t, uint64(200), r1.Entries[kA].Min)

	one, err := Merge(r1)
	require.NoError(t, err)
	assert.Equal(t, r1, one)
	assert.NotSame(t, r1, one)
}

func TestMergeEnv(t *testing.T) {
	agent1 := runTable(1, map[Key]Entry{kA: {Min: 200, Env: 0, Count: 10}, kB: {Min: 50, Env: 0, Count: 1}})
	measured := runTable(1, map[Key]Entry{kA: {Min: Unseen, Env: 12}, kC: {Min: Unseen, Env: 7}})
	measured.EnvSource = EnvTrainer
	measured2 := runTable(1, map[Key]Entry{kA: {Min: Unseen, Env: 9}})
	measured2.EnvSource = EnvTrainer
	agent2 := runTable(1, map[Key]Entry{kA: {Min: 210, Env: 0, Count: 3}})

	got, err := Merge(agent1, measured, agent2, measured2)
	require.NoError(t, err)
	assert.Equal(t, EnvTrainer, got.EnvSource)
	assert.Equal(t, map[Key]Entry{
		kA: {Min: 200, Env: 9, Count: 13}, // measured wins, smallest measured
		kB: {Min: 50, Env: 0, Count: 1},
		kC: {Min: Unseen, Env: 7},
	}, got.Entries)

	// Order does not matter.
	got2, err := Merge(measured2, agent2, measured, agent1)
	require.NoError(t, err)
	assert.Equal(t, got.Entries, got2.Entries)
}

func TestMergeRefuses(t *testing.T) {
	tests := []struct {
		field  string
		change func(*Table)
	}{
		{"metric", func(t *Table) { t.Metric = "PTT_INSTS" }},
		{"backend", func(t *Table) { t.Backend = "perf" }},
		{"jvm", func(t *Table) { t.JVM = "Eclipse OpenJ9 VM" }},
		{"jvm-version", func(t *Table) { t.JVMVersion = "17.0.16+8" }},
		{"arch", func(t *Table) { t.Arch = "aarch64" }},
		{"cpu", func(t *Table) { t.CPU = "other" }},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			a := runTable(1, nil)
			a.CPU = "cpu"
			b := a.Clone()
			tc.change(b)
			_, err := Merge(a, b)
			var me *MismatchError
			require.True(t, errors.As(err, &me), "%v", err)
			assert.Equal(t, tc.field, me.Field)
			assert.ErrorContains(t, err, "table 1")
		})
	}
	a := runTable(1, nil)
	b := a.Clone()
	b.Metric, b.Backend = "ptt_time", "BPF"
	_, err := Merge(a, b)
	assert.NoError(t, err, "metric and backend names are case-insensitive")

	_, err = Merge()
	assert.Error(t, err)
	_, err = Merge(a, nil)
	assert.Error(t, err)
}

func TestMatches(t *testing.T) {
	tab := runTable(1, nil)
	tests := []struct {
		name                          string
		jvm, version, metric, backend string
		field                         string // "" when it matches
	}{
		{"same", "OpenJDK 64-Bit Server VM", "17.0.15+6", "PTT_TIME", "bpf", ""},
		{"other update", "OpenJDK 64-Bit Server VM", "17.0.16+8-Debian", "PTT_TIME", "bpf", ""},
		{"case", "OpenJDK 64-Bit Server VM", "17", "ptt_time", "BPF", ""},
		{"unchecked", "", "", "", "", ""},
		{"other release", "OpenJDK 64-Bit Server VM", "21.0.2+13", "PTT_TIME", "bpf", "jvm-version"},
		{"other jvm", "Eclipse OpenJ9 VM", "17.0.15+6", "PTT_TIME", "bpf", "jvm"},
		{"other metric", "OpenJDK 64-Bit Server VM", "17.0.15+6", "PTT_INSTS", "bpf", "metric"},
		{"other backend", "OpenJDK 64-Bit Server VM", "17.0.15+6", "PTT_TIME", "perf", "backend"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tab.Matches(tc.jvm, tc.version, tc.metric, tc.backend)
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			var me *MismatchError
			require.True(t, errors.As(err, &me), "%v", err)
			assert.Equal(t, tc.field, me.Field)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	bare := NewTable(Provenance{Metric: "PTT_TIME"})
	err := bare.Matches("", "", "PTT_TIME", "bpf")
	assert.EqualError(t, err, `calibration table has no backend (this run: "bpf")`)
	err = tab.Matches("", "", "", "clock")
	assert.EqualError(t, err, `calibration table is for backend "bpf", this run has "clock"`)
}

func TestJavaMajor(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"17.0.15+6-Debian-1deb12u1", 17, true},
		{"21-ea+5", 21, true},
		{"1.8.0_392", 8, true},
		{"25", 25, true},
		{"", 0, false},
		{"abc", 0, false},
	}
	for _, tc := range tests {
		got, ok := JavaMajor(tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
