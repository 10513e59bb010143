package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Files the agent cut after a write error are read up to their
// truncation line, in every format, and say so; anything after the
// line is an error.
func TestTruncatedFiles(t *testing.T) {
	metrics := []Metric{{Name: "PTT_TIME", Unit: "ns", Calibrated: true}}
	marker := TruncationLine(1234, "no space left on device\nreally", 56, "events")
	assert.Equal(t, ` *** libjprof: write error after 1234 bytes: no space left on device\nreally; 56 events not written`, marker)
	want := strings.TrimPrefix(marker, " *** ")

	// log-rt cut inside a subtree: its CEE is not checked.
	p := &Profile{PID: 7, Seq: 1, Metrics: metrics}
	var rt bytes.Buffer
	lw, err := NewLogRTWriter(&rt, p)
	require.NoError(t, err)
	require.NoError(t, lw.Row(Row{Level: 0, Callees: 5, Base: []uint64{1}, Name: "00000001_main"}))
	require.NoError(t, lw.Row(Row{Level: 1, Calls: 1, Callees: 9, Base: []uint64{2}, Name: "I:a.b()V"}))
	require.NoError(t, lw.flush())
	rt.WriteString(marker + "\n")
	got, err := ParseLogRT(bytes.NewReader(rt.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, want, got.Truncated)
	require.Len(t, got.Threads, 1)
	assert.Equal(t, "I:a.b()V", got.Threads[0].Children[0].Name)
	_, err = ParseLogRT(strings.NewReader(rt.String() + "   0 1 2 3\n"))
	assert.ErrorContains(t, err, "after the truncation line")

	evs := []Event{
		{Thread: "00000001_main", Kind: Entry, Name: "I:a.b()V", Values: []uint64{3}},
		{Thread: "00000001_main", Kind: Entry, Name: "I:a.c()V", Values: []uint64{4}},
	}
	// Text log-gen.
	text := append(writeLogGen(t, 7, metrics, evs), marker+"\n"...)
	lr, err := NewLogGenReader(bytes.NewReader(text))
	require.NoError(t, err)
	n := 0
	for lr.Next() {
		n++
	}
	require.NoError(t, lr.Err())
	assert.Equal(t, 2, n)
	assert.Equal(t, want, lr.Truncated())
	bp, err := BuildProfile(bytes.NewReader(text))
	require.NoError(t, err)
	assert.Equal(t, want, bp.Truncated)
	assert.Equal(t, "I:a.c()V", bp.Threads[0].Children[0].Children[0].Name)
	_, err = BuildProfile(bytes.NewReader(append(text, "1 > I:x.y()V 00000001_main\n"...)))
	assert.ErrorContains(t, err, "after the truncation line")

	// Binary log-gen: the line where the next frame's tag would be.
	var bin bytes.Buffer
	bw := NewLogGenBinWriter(&bin, 7, metrics, false)
	require.NoError(t, bw.Thread(1, "00000001_main"))
	require.NoError(t, bw.Method(0, []byte("a.b()V")))
	require.NoError(t, bw.Block(1, []byte{0<<0 | 1<<2, 0, 3}))
	require.NoError(t, bw.w.Flush())
	bin.WriteString(marker + "\n")
	bp, err = BuildProfile(bytes.NewReader(bin.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, want, bp.Truncated)
	assert.Equal(t, uint64(1), bp.Threads[0].Children[0].Calls)
	rp, format, err := ReadProfile(bytes.NewReader(bin.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, FormatLogGen, format)
	assert.Equal(t, want, rp.Truncated)
	// Without the line the file is still an error.
	_, err = BuildProfile(bytes.NewReader(bin.Bytes()[:bin.Len()-len(marker)-1]))
	assert.ErrorContains(t, err, "no end frame")
}
