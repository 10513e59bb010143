package calibration

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleTable() *Table {
	t := NewTable(Provenance{
		JVM:        "OpenJDK 64-Bit Server VM",
		JVMVersion: "17.0.15+6-Debian-1deb12u1",
		Arch:       "amd64",
		Metric:     "PTT_TIME",
		Backend:    "bpf",
		CPU:        "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
		Date:       time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Runs:       3,
		Tool:       "libjprof trainer 1",
		EnvSource:  EnvTrainer,
		Notes:      []string{"first note", "keys seen: 3: of 480"},
	})
	t.Entries[MakeKey(Interp, En, InterpStatic, Ex, Interp)] = Entry{Min: 182, Env: 14, Excess: 9, Count: 40000}
	t.Entries[MakeKey(InterpStatic, Ex, Native, Xx, Other)] = Entry{Min: Unseen, Env: 0, Count: 0}
	t.Entries[MakeKey(NativeStatic, Xx, InterpStatic, En, Native)] = Entry{Min: 0, Env: 3, Count: 1}
	return t
}

const sampleText = `# libjprof calibration table 1
# jvm: OpenJDK 64-Bit Server VM
# jvm-version: 17.0.15+6-Debian-1deb12u1
# arch: amd64
# metric: PTT_TIME
# backend: bpf
# cpu: Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz
# date: 2026-03-01T10:00:00Z
# runs: 3
# tool: libjprof trainer 1
# env: trainer
# note: first note
# note: keys seen: 3: of 480
#
# sequence                                 min        env     excess        count
interp-Ex-Native-Xx-Other                    -          0          0            0
Interp-En-interp-Ex-Interp                 182         14          9        40000
native-Xx-interp-En-Native                   0          3          0            1
`

// A table written before the excess column reads with no excess.
func TestTableWithoutExcess(t *testing.T) {
	old := strings.Replace(sampleText, "# sequence                                 min        env     excess        count\n", "", 1)
	old = strings.Replace(old, "182         14          9        40000", "182 14 40000", 1)
	old = strings.Replace(old, "-          0          0            0", "- 0 0", 1)
	old = strings.Replace(old, "0          3          0            1", "0 3 1", 1)
	tab, err := Parse(strings.NewReader(old))
	require.NoError(t, err)
	want := sampleTable()
	k := MakeKey(Interp, En, InterpStatic, Ex, Interp)
	e := want.Entries[k]
	e.Excess = 0
	want.Entries[k] = e
	assert.Equal(t, want, tab)
	assert.Equal(t, uint64(182-14), tab.Entries[k].Overhead())
	assert.Equal(t, uint64(182-14+9), sampleTable().Entries[k].Overhead(), "the excess is removed too")
}

func TestTableWrite(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, sampleTable().Write(&b))
	assert.Equal(t, sampleText, b.String())
}

func TestTableRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		tab  *Table
	}{
		{"sample", sampleTable()},
		{"empty", NewTable(Provenance{})},
		{"no provenance", func() *Table {
			t := NewTable(Provenance{})
			t.Entries[0] = Entry{Min: 1, Env: 1, Count: 1}
			return t
		}()},
		{"every key", func() *Table {
			t := NewTable(Provenance{Metric: "PTT_INSTS", Notes: []string{""}})
			for k := Key(0); k < NKeys; k++ {
				t.Entries[k] = Entry{Min: uint64(k) * 1e12, Env: uint64(k), Excess: uint64(k) / 2, Count: Unseen}
			}
			return t
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tc.tab.Write(&b))
			got, err := Parse(bytes.NewReader(b.Bytes()))
			require.NoError(t, err)
			assert.Equal(t, tc.tab, got)
			var b2 bytes.Buffer
			require.NoError(t, got.Write(&b2))
			assert.Equal(t, b.String(), b2.String())
		})
	}
}

func TestParseLenient(t *testing.T) {
	// Letters for keys, comments anywhere, CRLF, blank lines, extra blanks.
	in := "# libjprof calibration table 1\r\n" +
		"# metric:   PTT_INSTS  \r\n" +
		"# a comment: with a colon\n" +
		"\n" +
		"I-En-i-Ex-I   5 1 7\n" +
		"# trailing comment\n"
	got, err := Parse(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, "PTT_INSTS", got.Metric)
	assert.Equal(t, map[Key]Entry{MakeKey(Interp, En, InterpStatic, Ex, Interp): {Min: 5, Env: 1, Count: 7}}, got.Entries)
}

func TestParseErrors(t *testing.T) {
	head := formatLine + "\n"
	tests := []struct {
		name, in string
		line     int
		want     string
	}{
		{"empty", "", 0, "no table"},
		{"no format line", "Interp-En-interp-Ex-Interp 1 0 1\n", 1, "expected"},
		{"future format", "# libjprof calibration table 2\n", 1, "unsupported format"},
		{"bad key", head + "Interp-En-interp-Ex 1 0 1\n", 2, "want type-transition-type"},
		{"bad type", head + "# metric: PTT_TIME\nInterp-En-interp-Ex-Foo 1 0 1\n", 3, `unknown method type "Foo"`},
		{"fields", head + "Interp-En-interp-Ex-Interp 1 0\n", 2, "want <sequence> <min> <env> <excess> <count>"},
		{"duplicate key", head + "I-En-i-Ex-I 1 0 1\nInterp-En-interp-Ex-Interp 2 0 1\n", 3, "given twice"},
		{"bad min", head + "I-En-i-Ex-I x 0 1\n", 2, "min"},
		{"min is the unseen value", head + "I-En-i-Ex-I 18446744073709551615 0 1\n", 2, "min"},
		{"negative env", head + "I-En-i-Ex-I 1 -1 1\n", 2, "env"},
		{"bad count", head + "I-En-i-Ex-I 1 0 1.5\n", 2, "count"},
		{"count without min", head + "I-En-i-Ex-I - 0 4\n", 2, "no minimum"},
		{"duplicate field", head + "# metric: PTT_TIME\n#\n# metric: PTT_INSTS\n", 4, "metric given twice (first on line 2)"},
		{"bad date", head + "# date: yesterday\n", 2, "RFC 3339"},
		{"bad runs", head + "# runs: -2\n", 2, "runs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			var pe *ParseError
			if tc.line > 0 {
				require.True(t, errors.As(err, &pe), "%v", err)
				assert.Equal(t, tc.line, pe.Line)
				assert.Contains(t, err.Error(), "line ")
			}
		})
	}
}

func TestParseAllAndWriteAll(t *testing.T) {
	a := sampleTable()
	b := NewTable(Provenance{Metric: "PTT_INSTS", Backend: "perf"})
	b.Entries[7] = Entry{Min: 9, Env: 1, Count: 2}
	var buf bytes.Buffer
	require.NoError(t, WriteAll(&buf, a, b))
	got, err := ParseAll(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, []*Table{a, b}, got)

	_, err = Parse(bytes.NewReader(buf.Bytes()))
	assert.ErrorContains(t, err, "holds 2 tables")
}

func TestWriteRefusesLineBreaks(t *testing.T) {
	tab := NewTable(Provenance{CPU: "two\nlines"})
	assert.ErrorContains(t, tab.Write(&bytes.Buffer{}), "line break")
	tab = NewTable(Provenance{Notes: []string{"a\rb"}})
	assert.ErrorContains(t, tab.Write(&bytes.Buffer{}), "line break")
	tab = NewTable(Provenance{})
	tab.Entries[3] = Entry{Min: Unseen, Count: 2}
	assert.ErrorContains(t, tab.Write(&bytes.Buffer{}), "no minimum")
}

func TestTableHelpers(t *testing.T) {
	tab := sampleTable()
	k := MakeKey(Interp, En, InterpStatic, Ex, Interp)
	assert.Equal(t, uint64(182-14+9), tab.Lookup(k).Overhead())
	absent := tab.Lookup(MakeKey(Other, En, Other, En, Other))
	assert.Equal(t, Entry{Min: Unseen}, absent)
	assert.False(t, absent.Seen())
	assert.Zero(t, absent.Overhead())
	assert.Zero(t, Entry{Min: 3, Env: 5}.Overhead(), "env above min removes nothing")
	assert.Equal(t, uint64(13), Entry{Min: 10, Env: 5, Excess: 8}.Overhead(), "an excess above the glue removes more than the minimum")
	insts := NewTable(Provenance{Metric: "PTT_INSTS"})
	assert.Equal(t, uint64(1), insts.Lookup(k).Env, "one instruction for the call or return")

	tab.Observe(k, 100)
	tab.Observe(MakeKey(Other, En, Other, En, Other), 5)
	assert.Equal(t, Entry{Min: 100, Env: 14, Excess: 9, Count: 40001}, tab.Entries[k])
	assert.Equal(t, Entry{Min: 5, Count: 1}, tab.Entries[MakeKey(Other, En, Other, En, Other)])

	mins, kept := tab.Minima(), tab.Kept()
	require.Len(t, mins, NKeys)
	assert.Equal(t, uint64(100), mins[k])
	assert.Equal(t, uint64(Unseen), mins[1])
	assert.Equal(t, int64(14-9), kept[k], "Env less the excess")

	tab.Entries[MakeKey(Interp, En, Native, Ex, InterpStatic)] = Entry{Min: 1}
	assert.Equal(t, []Key{MakeKey(Interp, En, Native, Ex, InterpStatic)}, tab.Invalid())

	c := tab.Clone()
	c.Notes[0] = "changed"
	c.Entries[k] = Entry{}
	assert.Equal(t, "first note", tab.Notes[0])
	assert.Equal(t, uint64(100), tab.Entries[k].Min)
}
