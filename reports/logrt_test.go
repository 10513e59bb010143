package reports

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeLogRT(t *testing.T, p *Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteLogRT(&b, p))
	return b.Bytes()
}

func TestLogRTGolden(t *testing.T) {
	for k := range 3 {
		t.Run(fmt.Sprintf("%d metrics", k), func(t *testing.T) {
			p := hellop(k)
			out := writeLogRT(t, p)
			golden(t, fmt.Sprintf("logrt_%d.golden", k), out)

			q, err := ParseLogRT(bytes.NewReader(out))
			require.NoError(t, err)
			require.NoError(t, Compare(p, q, CompareOptions{}))
			assert.Equal(t, out, writeLogRT(t, q), "write → parse → write must be identical")
		})
	}
}

func TestLogRTRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 200 {
		p := randomTree(rng, i%3)
		p.Seq = i
		out := writeLogRT(t, p)
		q, err := ParseLogRT(bytes.NewReader(out))
		require.NoError(t, err, "tree %d", i)
		require.NoError(t, Compare(p, q, CompareOptions{}), "tree %d", i)
		require.Equal(t, out, writeLogRT(t, q), "tree %d", i)
	}
}

func TestLogRTWideAndOddValues(t *testing.T) {
	// Numbers wider than their column, a name with leading and inner
	// spaces, a thread with nothing in it, and nil slices read as zeros.
	p := &Profile{
		PID: 1, Seq: 2, Metrics: testMetrics[:1],
		Threads: []*Node{
			{Name: "  0000b718_ odd  name ", Base: []uint64{1<<64 - 1}, Delta: []uint64{12345678901234},
				Children: []*Node{{Name: "J:x()V", Calls: 1<<64 - 1, DS: 1 << 40}}},
			{Name: "0000b720_idle"},
		},
	}
	out := writeLogRT(t, p)
	q, err := ParseLogRT(bytes.NewReader(out))
	require.NoError(t, err)
	require.NoError(t, Compare(p, q, CompareOptions{}))
	assert.Equal(t, "  0000b718_ odd  name ", q.Threads[0].Name)
	assert.Equal(t, out, writeLogRT(t, q))
}

func TestLogRTEmptyProfile(t *testing.T) {
	for k := range 3 {
		p := &Profile{Metrics: testMetrics[:k]}
		out := writeLogRT(t, p)
		q, err := ParseLogRT(bytes.NewReader(out))
		require.NoError(t, err)
		require.True(t, Equal(p, q))
		assert.Empty(t, q.Threads)
	}
}

func TestLogRTWriteErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Profile
		want string
	}{
		{"empty name", &Profile{Threads: []*Node{{Name: "t", Children: []*Node{{}}}}}, "empty name at level 1"},
		{"metric with space", &Profile{Metrics: []Metric{{Name: "PTT TIME"}}}, "no spaces"},
		{"unit with comma", &Profile{Metrics: []Metric{{Name: "T", Unit: "a,b"}}}, "unit"},
		{"too many values", &Profile{Metrics: testMetrics[:1], Threads: []*Node{{Name: "t", Base: []uint64{1, 2}}}}, "2 base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteLogRT(&bytes.Buffer{}, tc.p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseLogRTErrors(t *testing.T) {
	good := string(writeLogRT(t, hellop(1)))
	lines := strings.SplitAfter(good, "\n")
	// rowLine is the 1-based line number of the first row (the thread).
	rowLine := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "   0 ") {
			rowLine = i + 1
			break
		}
	}
	require.NotZero(t, rowLine)
	replace := func(lineNo int, with string) string {
		c := append([]string(nil), lines...)
		c[lineNo-1] = with
		return strings.Join(c, "")
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "log-rt line 1: not a libjprof log-rt file: empty file"},
		{"foreign", "hello\nworld\n", `log-rt line 1: not a libjprof log-rt file: expected " libjprof log-rt", got "hello"`},
		{"log-gen", " libjprof log-gen\n", `log-rt line 1: not a libjprof log-rt file`},
		{"bad pid", replace(2, " Process_Number_ID=x\n"), "log-rt line 2: expected \" Process_Number_ID=N\""},
		{"header only", strings.Join(lines[:6], ""), "log-rt line 7: unexpected end of file, expected \" Base Values:\""},
		{"bad metric", replace(8, " : 1 = PTT_TIME ns\n"), "log-rt line 8: expected metric"},
		{"bad calibration", replace(8, " : 1 = PTT_TIME (ns, maybe)\n"), "log-rt line 8: expected calibrated or uncalibrated"},
		{"wrong labels", replace(11, " : LV = Level\n"), "log-rt line 11: expected \" : LV = Level of nesting (Call Depth)\""},
		{"short row", replace(rowLine+1, "   1          1          3\n"), fmt.Sprintf("log-rt line %d: expected 8 columns, got 3", rowLine+1)},
		{"no name", replace(rowLine+1, "   1          1          3          0          0          0          0  \n"), fmt.Sprintf("log-rt line %d: expected 8 columns, got 7", rowLine+1)},
		{"not a number", replace(rowLine+1, "   1          1          3         x1          0          0          0  J:a()V\n"), fmt.Sprintf(`log-rt line %d: column 4 (BASE): "x1" is not a number`, rowLine+1)},
		{"digits then letters", replace(rowLine+1, "   1          1          3        5x0          0          0          0  J:a()V\n"), fmt.Sprintf(`log-rt line %d: column 4 (BASE): "5x0" is not a number`, rowLine+1)},
		{"negative level", replace(rowLine+1, "  -1          1          3          0          0          0          0  J:a()V\n"), fmt.Sprintf(`log-rt line %d: column 1 (LV): "-1" is not a number`, rowLine+1)},
		{"negative calls", replace(rowLine+1, "   1         -1          3          0          0          0          0  J:a()V\n"), fmt.Sprintf(`log-rt line %d: column 2 (CALLS): "-1" is not a number`, rowLine+1)},
		{"bad last column", replace(rowLine+1, "   1          1          3          0          0          0         1e3  J:a()V\n"), fmt.Sprintf(`log-rt line %d: column 7 (IN): "1e3" is not a number`, rowLine+1)},
		{"name where a column is missing", replace(rowLine+1, "   1          1          3          0          0          0  J:a()V\n"), fmt.Sprintf("log-rt line %d: expected 8 columns, got 7", rowLine+1)},
		{"level jump", replace(rowLine+1, "   2          1          3          0          0          0          0  J:a()V\n"), fmt.Sprintf("log-rt line %d: level 2 follows level 0", rowLine+1)},
		{"first row not a thread", replace(rowLine, "   1          0          1          0          0          0          0  t\n"), fmt.Sprintf("log-rt line %d: first row has level 1", rowLine)},
		{"overflow", replace(rowLine, "   0 99999999999999999999          1          0          0          0          0  t\n"), fmt.Sprintf("log-rt line %d: column 2", rowLine)},
		{"CEE mismatch", replace(rowLine, "   0          0          2         10          3          1          1  0000b718_main\n"), "has CEE 2 but its callees were called 1 times"},
		{"row count", strings.Replace(good, "End of log-rt: 11 rows", "End of log-rt: 12 rows", 1), `expected " End of log-rt: 11 rows"`},
		{"trailing garbage", good + "more\n", "expected end of file"},
		{"cut in a row", strings.Join(lines[:rowLine], "") + "   1          1", fmt.Sprintf("log-rt line %d: truncated: the file ends in the middle of this line (expected 8 columns, got 2)", rowLine+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLogRT(strings.NewReader(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestParseLogRTTruncated cuts a good file at every byte: every cut but
// the one dropping only the final newline must be an error naming a line.
func TestParseLogRTTruncated(t *testing.T) {
	for k := range 3 {
		good := writeLogRT(t, hellop(k))
		for cut := range len(good) - 1 {
			_, err := ParseLogRT(bytes.NewReader(good[:cut]))
			require.Error(t, err, "%d metrics, cut at %d of %d: %q", k, cut, len(good), good[max(0, cut-20):cut])
			require.Contains(t, err.Error(), "log-rt line ")
		}
	}
}

func TestPadUint(t *testing.T) {
	for _, v := range []uint64{0, 7, 10, 99, 12345, 9999999999, 10000000000, 1<<64 - 1} {
		for _, w := range []int{0, 1, 4, 10} {
			want := fmt.Sprintf("x%*d", w, v)
			assert.Equal(t, want, string(padUint([]byte("x"), v, w)), "v=%d width=%d", v, w)
		}
	}
}
