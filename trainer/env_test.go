package trainer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
)

func TestParseEnv(t *testing.T) {
	in := `# libjprof trainer env: OpenJDK 64-Bit Server VM 17.0.15 (interpreted mode), 7 trials
trainer: some other line
env i I Ex 12.50
env I n Xx 640.25

env N i Ex -1.5
`
	got, err := ParseEnv(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []EnvPattern{
		{Caller: calibration.InterpStatic, Callee: calibration.Interp, Exit: calibration.Ex, NS: 12.5},
		{Caller: calibration.Interp, Callee: calibration.NativeStatic, Exit: calibration.Xx, NS: 640.25},
		{Caller: calibration.Native, Callee: calibration.InterpStatic, Exit: calibration.Ex, NS: -1.5},
	}, got)
}

func TestParseEnvErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "# nothing\n", "no env lines"},
		{"fields", "env i I Ex\n", "line 1"},
		{"caller", "env x I Ex 1\n", `caller "x"`},
		{"callee", "env i interp Ex 1\n", "type letters"},
		{"exit", "env i I En 1\n", `exit "En"`},
		{"ns", "# c\nenv i I Ex fast\n", "line 2"},
		{"nan", "env i I Ex NaN\n", "not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnv(strings.NewReader(tc.in))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestApplyEnv(t *testing.T) {
	tab := calibration.NewTable(calibration.Provenance{Metric: "PTT_TIME"})
	entry := calibration.MakeKey(calibration.Interp, calibration.Ex, calibration.InterpStatic, calibration.En, calibration.Native)
	tab.Entries[entry] = calibration.Entry{Min: 300, Count: 9}
	n := ApplyEnv(tab, []EnvPattern{
		{Caller: calibration.InterpStatic, Callee: calibration.Native, Exit: calibration.Ex, NS: 40.4},
		{Caller: calibration.InterpStatic, Callee: calibration.Native, Exit: calibration.Xx, NS: 1040.6},
		{Caller: calibration.Interp, Callee: calibration.InterpStatic, Exit: calibration.Xx, NS: 500}, // no Ex pattern: all of it
		{Caller: calibration.Interp, Callee: calibration.Interp, Exit: calibration.Ex, NS: -3},        // noise
	})
	// Entry keys: 8 types × 3 transitions per Ex pattern; exception keys:
	// 8 × 2 + 1 valid per Xx pattern.
	assert.Equal(t, 2*24+2*17, n)

	// The call's cost on the entry keys, Min and Count kept.
	assert.Equal(t, calibration.Entry{Min: 300, Env: 40, Count: 9}, tab.Entries[entry])
	k := calibration.MakeKey(calibration.Other, calibration.En, calibration.InterpStatic, calibration.En, calibration.Native)
	assert.Equal(t, calibration.Entry{Min: calibration.Unseen, Env: 40}, tab.Entries[k])
	// The exception's extra cost on the exception-exit keys of the callee.
	k = calibration.MakeKey(calibration.Interp, calibration.Ex, calibration.Native, calibration.Xx, calibration.InterpStatic)
	assert.Equal(t, uint64(1000), tab.Entries[k].Env)
	k = calibration.MakeKey(calibration.InterpStatic, calibration.En, calibration.Native, calibration.Xx, calibration.InterpStatic)
	assert.Equal(t, uint64(1000), tab.Entries[k].Env)
	k = calibration.MakeKey(calibration.Interp, calibration.Ex, calibration.InterpStatic, calibration.Xx, calibration.Interp)
	assert.Equal(t, uint64(500), tab.Entries[k].Env)
	k = calibration.MakeKey(calibration.Native, calibration.Xx, calibration.Interp, calibration.En, calibration.Interp)
	assert.Equal(t, uint64(0), tab.Entries[k].Env)
	assert.Empty(t, tab.Invalid(), "only valid keys get values")
}

func TestMedianEnv(t *testing.T) {
	p := func(callee calibration.Type, exit calibration.Transition, ns float64) EnvPattern {
		return EnvPattern{Caller: calibration.Interp, Callee: callee, Exit: exit, NS: ns}
	}
	ex, xx := calibration.Ex, calibration.Xx
	runs := [][]EnvPattern{
		{p(calibration.Interp, ex, 79), p(calibration.Interp, xx, 900)},
		{p(calibration.Interp, ex, 123), p(calibration.Interp, xx, 950), p(calibration.Native, ex, 10)},
		{p(calibration.Interp, ex, 81), p(calibration.Interp, xx, 1200)},
	}
	assert.Equal(t, []EnvPattern{
		p(calibration.Interp, ex, 81),  // one JVM's drift does not move it
		p(calibration.Interp, xx, 950), //
		p(calibration.Native, ex, 10),  // seen by one run only
	}, MedianEnv(runs))
	assert.Empty(t, MedianEnv(nil))
}
