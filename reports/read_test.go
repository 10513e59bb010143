package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadProfile(t *testing.T) {
	rt := writeLogRT(t, hellop(2))
	p, f, err := ReadProfile(bytes.NewReader(rt))
	require.NoError(t, err)
	assert.Equal(t, FormatLogRT, f)
	assert.True(t, Equal(hellop(2), p))

	gen := writeLogGen(t, 4242, testMetrics[:2], hellopEvents(2))
	p, f, err = ReadProfile(bytes.NewReader(gen))
	require.NoError(t, err)
	assert.Equal(t, FormatLogGen, f)
	want, err := BuildProfile(bytes.NewReader(gen))
	require.NoError(t, err)
	assert.True(t, Equal(want, p))

	for _, tc := range []struct{ in, want string }{
		{"", "empty file"},
		{"hello\n", `line 1: expected " libjprof log-rt" or " libjprof log-gen", got "hello"`},
		{strings.Repeat("x", 1000), "not a libjprof log-rt or log-gen"},
		{" libjprof log-rt\n", "log-rt line 2: unexpected end of file"},
		{" libjprof log-gen\n", "log-gen line 2: unexpected end of file"},
	} {
		_, _, err := ReadProfile(strings.NewReader(tc.in))
		require.Error(t, err, "%q", tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.Equal(t, "log-gen", FormatLogGen.String())
}
