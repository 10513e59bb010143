package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The interval lines round-trip; a file without them (an older agent's)
// has no Interval; bad ones are errors that name the line.
func TestLogRTInterval(t *testing.T) {
	start := time.Date(2026, 11, 26, 17, 20, 1, 123456789, time.UTC)
	p := &Profile{PID: 9, Seq: 2, Notes: []string{"a note"},
		Interval: &Interval{Start: start, End: start.Add(4 * time.Second), StartVM: 1234567890, EndVM: 5234567890, Counts: SinceFlush},
		Threads:  []*Node{{Name: "00000001_main", Children: []*Node{{Name: "I:a.b()V", Calls: 3}}}}}
	var b bytes.Buffer
	require.NoError(t, WriteLogRT(&b, p))
	assert.Contains(t, b.String(), " Sequence=2\n Interval_Start=2026-11-26T17:20:01.123456789Z vm+1.234567890s\n Interval_End=2026-11-26T17:20:05.123456789Z vm+5.234567890s\n Interval_Counts=since-previous-flush\n Note: a note\n")
	got, err := ParseLogRT(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	require.NotNil(t, got.Interval)
	assert.True(t, got.Interval.Start.Equal(p.Interval.Start))
	assert.True(t, got.Interval.End.Equal(p.Interval.End))
	assert.Equal(t, p.Interval.StartVM, got.Interval.StartVM)
	assert.Equal(t, p.Interval.EndVM, got.Interval.EndVM)
	assert.Equal(t, SinceFlush, got.Interval.Counts)

	old := strings.Replace(b.String(), " Interval_Start=2026-11-26T17:20:01.123456789Z vm+1.234567890s\n Interval_End=2026-11-26T17:20:05.123456789Z vm+5.234567890s\n Interval_Counts=since-previous-flush\n", "", 1)
	got, err = ParseLogRT(strings.NewReader(old))
	require.NoError(t, err)
	assert.Nil(t, got.Interval)
	assert.Equal(t, []string{"a note"}, got.Notes)

	_, err = ParseLogRT(strings.NewReader(strings.Replace(b.String(), "since-previous-flush", "forever", 1)))
	assert.ErrorContains(t, err, "log-rt line 6: expected \" Interval_Counts=KIND\"")
	_, err = ParseLogRT(strings.NewReader(strings.Replace(b.String(), " vm+5.234567890s", "", 1)))
	assert.ErrorContains(t, err, "log-rt line 5")
}
