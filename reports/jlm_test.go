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
		"empty":        "",
		"other file":   " libjprof log-rt\n",
		"few fields":   " libjprof log-jlm\n\n1 2 3\n",
		"not a number": " libjprof log-jlm\n\n1 x 0 0 0 0 0 C a.B.m\n",
		"rec > gets":   " libjprof log-jlm\n\n1 2 0 0 0 0 0 C a.B.m\n",
		"bad lost":     " libjprof log-jlm\n Lost=x\n",
	} {
		_, err := ReadJLM(strings.NewReader(in))
		assert.Error(t, err, name)
	}
}

func TestJLMClass(t *testing.T) {
	assert.Equal(t, "java.lang.Object", JLMClass("Ljava/lang/Object;"))
	assert.Equal(t, "int[][]", JLMClass("[[I"))
	assert.Equal(t, "(other)", JLMClass("(other)"))
}
