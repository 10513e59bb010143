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

// A log-gen that reached GENMAX is whole but partial: its last line, in
// both formats (the binary one's after its end frame), says how many
// events it left out, and the readers keep the count; nothing may follow
// the line. A binary file of an older agent, whose end frame alone has
// the count, still reports it.
func TestSizeLimitedLogGen(t *testing.T) {
	metrics := []Metric{{Name: "PTT_TIME", Unit: "ns", Calibrated: true}}
	line := SizeLimitLine(102400, 92852)
	assert.Equal(t, " *** libjprof: size limit (GENMAX) of 102400 bytes reached; 92852 events not written", line)
	want := strings.TrimPrefix(line, " *** ")
	evs := []Event{
		{Thread: "00000001_main", Kind: Entry, Name: "I:a.b()V", Values: []uint64{3}},
		{Thread: "00000001_main", Kind: Entry, Name: "I:a.c()V", Values: []uint64{4}},
	}
	check := func(t *testing.T, file []byte, wantLine string) {
		t.Helper()
		lr, err := NewLogGenReader(bytes.NewReader(file))
		require.NoError(t, err)
		n := 0
		for lr.Next() {
			n++
		}
		require.NoError(t, lr.Err())
		assert.Equal(t, len(evs), n)
		assert.Equal(t, uint64(92852), lr.NotWritten())
		assert.Equal(t, wantLine, lr.SizeLimited())
		assert.Empty(t, lr.Truncated())
		p, _, err := ReadProfile(bytes.NewReader(file))
		require.NoError(t, err)
		assert.Equal(t, wantLine, p.SizeLimited)
		assert.Equal(t, uint64(92852), p.NotWritten)
		assert.Equal(t, "I:a.c()V", p.Threads[0].Children[0].Children[0].Name)
	}

	// Cut right after its header (a GENMAX below it): no event, read
	// as such, with the count.
	t.Run("text-header-only", func(t *testing.T) {
		var b bytes.Buffer
		lw := NewLogGenWriter(&b, 7, metrics)
		require.NoError(t, lw.SizeLimited(want))
		require.NoError(t, lw.Flush())
		lr, err := NewLogGenReader(bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		assert.False(t, lr.Next())
		require.NoError(t, lr.Err())
		assert.Equal(t, uint64(92852), lr.NotWritten())
		p, _, err := ReadProfile(bytes.NewReader(b.Bytes()))
		require.NoError(t, err)
		assert.Equal(t, want, p.SizeLimited)
	})

	t.Run("text", func(t *testing.T) {
		var b bytes.Buffer
		lw := NewLogGenWriter(&b, 7, metrics)
		for _, ev := range evs {
			require.NoError(t, lw.Write(ev))
		}
		require.NoError(t, lw.SizeLimited(want))
		require.NoError(t, lw.Flush())
		assert.True(t, strings.HasSuffix(b.String(), "\n"+line+"\n"), "the last line")
		check(t, b.Bytes(), want)
		_, err := BuildProfile(bytes.NewReader(append(b.Bytes(), "1 > I:x.y()V 00000001_main\n"...)))
		assert.ErrorContains(t, err, "after the size limit line")
		assert.Error(t, lw.SizeLimited("libjprof: write error after 1 bytes: x; 2 events not written"), "not a size limit line")
	})

	bin := func(limit int64) []byte {
		var b bytes.Buffer
		bw := NewLogGenBinWriter(&b, 7, metrics, false)
		require.NoError(t, bw.Thread(1, "00000001_main"))
		require.NoError(t, bw.Method(0, []byte("a.b()V")))
		require.NoError(t, bw.Method(1, []byte("a.c()V")))
		require.NoError(t, bw.Block(1, []byte{0<<0 | 1<<2, 0, 3, 0<<0 | 1<<2, 1, 4}))
		require.NoError(t, bw.End(2, 92852, limit))
		return b.Bytes()
	}
	t.Run("binary", func(t *testing.T) {
		b := bin(102400)
		assert.True(t, bytes.HasSuffix(b, []byte("\n"+line+"\n")), "the last line, whole")
		check(t, b, want)
		_, err := BuildProfile(bytes.NewReader(append(b, 'x')))
		assert.ErrorContains(t, err, "data after the size limit line")
	})
	t.Run("binary without the line", func(t *testing.T) {
		b := bin(102400)
		b = b[:len(b)-len(line)-2]
		check(t, b, "libjprof: size limit (GENMAX) reached; 92852 events not written")
	})
}
