package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJLMRoundTrip(t *testing.T) {
	j := &JLM{Header: []string{"Process_Number_ID=7", "Counts=cumulative-since-start"}, Lost: 3, Rows: []JLMRow{
		{Gets: 10, Recursive: 2, Slow: 4, Wait: 5 * time.Millisecond, Hold: 8 * time.Millisecond, Class: "java.lang.Object", Site: "a.B.m (block 1, line 12)"},
		{Gets: 5, ObjectWaits: 1, ObjectWait: time.Second, Class: "a.B", Site: "a.B.n (synchronized method)"},
	}}
	var b bytes.Buffer
	require.NoError(t, WriteJLM(&b, j))
	got, err := ReadJLM(&b)
	require.NoError(t, err)
	assert.Equal(t, j, got)
	assert.InDelta(t, 50.0, j.Rows[0].Miss(), 1e-9)

	var r bytes.Buffer
	require.NoError(t, WriteJLMReport(&r, got, "wait"))
	out := r.String()
	assert.Less(t, strings.Index(out, "a.B.n (synchronized method)"), strings.Index(out, "a.B.m (block 1"), "by wait: Object.wait's second first\n%s", out)
	assert.Contains(t, out, "Not counted: 3 takes")
	assert.Regexp(t, `(?m)^ +30\.8 +15 +13 +4 +2 +8\.000 +5\.000 +1000\.000 +Total$`, out)
	assert.Error(t, WriteJLMReport(&r, got, "size"))
}

func TestReadJLMErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":         "",
		"other file":    " libjprof log-rt\n",
		"few fields":    " libjprof log-jlm\n\n1 2 3\n",
		"not a number":  " libjprof log-jlm\n\n1 x 0 0 0 0 0 C a.B.m\n",
		"rec > gets":    " libjprof log-jlm\n\n1 2 0 0 0 0 0 C a.B.m\n",
		"bad lost":      " libjprof log-jlm\n Lost=x\n",
		"wrong count":   " libjprof log-jlm\n\n1 0 0 0 0 0 0 C a.B.m\n End of log-jlm: 2 rows\n",
		"row after end": " libjprof log-jlm\n\n End of log-jlm: 0 rows\n1 0 0 0 0 0 0 C a.B.m\n",
	} {
		_, err := ReadJLM(strings.NewReader(in))
		assert.Error(t, err, name)
	}
	// A file cut at a line boundary (its last rows lost) is told from a
	// whole one by its closing line.
	j := &JLM{Rows: []JLMRow{{Gets: 3, Class: "C", Site: "a.B.m (block 1, line 2)"}, {Gets: 1, Class: "D", Site: "a.B.n"}}}
	var b bytes.Buffer
	require.NoError(t, WriteJLM(&b, j))
	whole := b.String()
	_, err := ReadJLM(strings.NewReader(whole))
	require.NoError(t, err)
	lines := strings.SplitAfter(whole, "\n")
	for cut := 1; cut < len(lines)-1; cut++ {
		got, err := ReadJLM(strings.NewReader(strings.Join(lines[:cut], "")))
		if err == nil {
			assert.True(t, got.Unended, "the first %d lines of\n%s", cut, whole)
		}
	}
	got, err := ReadJLM(strings.NewReader(strings.Join(lines[:len(lines)-3], ""))) // the last row and the closing line lost
	require.NoError(t, err)
	assert.True(t, got.Unended)
	assert.Len(t, got.Rows, 1)
}

func TestJLMClass(t *testing.T) {
	assert.Equal(t, "java.lang.Object", JLMClass("Ljava/lang/Object;"))
	assert.Equal(t, "int[][]", JLMClass("[[I"))
	assert.Equal(t, "(other)", JLMClass("(other)"))
}
