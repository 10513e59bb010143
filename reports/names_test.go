package reports

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEscapeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0000b718_main", "0000b718_main"},
		{"J:a/b/C.m(Ljava/lang/String;)V", "J:a/b/C.m(Ljava/lang/String;)V"},
		{"J:Foo$$Lambda+0x0000/0x1234.run()V", "J:Foo$$Lambda+0x0000/0x1234.run()V"},
		{"0000b71c_Reference Handler", `0000b71c_Reference Handler`},
		{" edge spaces ", `\x20edge spaces\x20`},
		{"evil\nname with spaces\tand\\slash", `evil\nname with spaces\tand\\slash`},
		{"cr\rdel\x7fnul\x00", `cr\rdel\x7fnul\x00`},
		{"héllo wörld 日本", `héllo wörld 日本`},
		{"bad\xffutf8\xc3", `bad\xffutf8\xc3`},
		{"nel\u0085ls\u2028nbsp\u00a0", `nel\xc2\x85ls\xe2\x80\xa8nbsp\xc2\xa0`},
		{`\x41`, `\\x41`},
	} {
		got := EscapeName(tc.in)
		assert.Equal(t, tc.want, got, "EscapeName(%q)", tc.in)
		assert.Equal(t, tc.want, string(AppendEscapedName([]byte("pre"), tc.in)[3:]))
		back, err := UnescapeName(got)
		require.NoError(t, err)
		assert.Equal(t, tc.in, back)
	}
	assert.Equal(t, `a note\nwith spaces`, escapeNote("a note\nwith spaces"))
}

func TestUnescapeNameErrors(t *testing.T) {
	for _, in := range []string{`a\`, `a\q`, `\x4`, `\xzz`, `\x`} {
		_, err := UnescapeName(in)
		assert.Error(t, err, "%q", in)
	}
	// Upper-case hex is read too, though EscapeName writes lower case.
	got, err := UnescapeName(`\xFF\x0A`)
	require.NoError(t, err)
	assert.Equal(t, "\xff\n", got)
}

// checkEscaped asserts that an escaped name is printable on one line,
// with spaces only inside it, and that as a token it has none.
func checkEscaped(t *testing.T, in, esc string) {
	t.Helper()
	require.True(t, utf8.ValidString(esc), "EscapeName(%q) = %q is not UTF-8", in, esc)
	for i, r := range esc {
		inner := r == ' ' && i > 0 && i < len(esc)-1
		require.False(t, (r <= ' ' && !inner) || r == 0x7f, "EscapeName(%q) = %q has %q", in, esc, r)
	}
	back, err := UnescapeName(esc)
	require.NoError(t, err)
	require.Equal(t, in, back)
	tok := string(AppendEscapedToken(nil, in))
	require.NotContains(t, tok, " ")
	back, err = UnescapeName(tok)
	require.NoError(t, err)
	require.Equal(t, in, back)
}

func TestEscapeNameRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", " ", "\n", "\r", "\t", "\\", "x", "\x00", "\xff", "é", "\xe2\x80", "\u2028", "日", "\\x41"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(4) == 0 {
				b.WriteByte(byte(rng.IntN(256)))
			} else {
				b.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
		}
		checkEscaped(t, b.String(), EscapeName(b.String()))
	}
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"", "main", "a b", "evil\nname", "\\", "\xff", "\\x20"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkEscaped(t, s, EscapeName(s)) })
}

// oddNames are thread and method names with every kind of byte that used
// to break the text formats.
var oddThreads = []string{
	"0000b718_evil\nname with spaces\tand\\slash",
	"0000b71c_Reference Handler",
	"0000b720_crlf\r\n",
	"0000b724_ünïcödé 日本語",
	"0000b728_bad\xff\xfeutf8",
	"0000b72c_\\x41 not an escape",
}

var oddMethods = []string{
	"J:odd.Cls.m(Ljava/lang/String;)V",
	"J:odd.Cls.with space()V",
	"I:odd/Hidden$$Lambda+0x00007f/0x1234.run()V",
	"N:tab\there.m()V",
	"J:new\nline.m()V",
}

// oddProfile is a two-metric profile whose names are oddThreads and
// oddMethods, with a note holding a line break.
func oddProfile() *Profile {
	p := &Profile{PID: 7, Seq: 1, Metrics: testMetrics[:2], Notes: []string{"a note\nwith a break and \\ backslash"}}
	for ti, th := range oddThreads {
		root := &Node{Name: th, Base: v(1, 2), Delta: v(0, 0)}
		parent := root
		for mi, m := range oddMethods {
			c := &Node{Name: m, Calls: uint64(ti + mi + 1), Base: v(uint64(10*mi), uint64(mi)), Delta: v(1, 0), DS: 1}
			parent.Children = append(parent.Children, c)
			if mi%2 == 0 {
				parent = c
			}
		}
		p.Threads = append(p.Threads, root)
	}
	return p
}

func TestOddNamesLogRT(t *testing.T) {
	p := oddProfile()
	out := writeLogRT(t, p)
	q, err := ParseLogRT(bytes.NewReader(out))
	require.NoError(t, err)
	require.NoError(t, Compare(p, q, CompareOptions{}))
	assert.Equal(t, "evil\nname with spaces\tand\\slash", ThreadName(q.Threads[0].Name))
	assert.NotNil(t, q.Thread("evil\nname with spaces\tand\\slash").Path("J:odd.Cls.m(Ljava/lang/String;)V", "J:odd.Cls.with space()V"))
	assert.Contains(t, string(out), "  0000b718_evil\\nname with spaces\\tand\\\\slash\n")
	// A name never spans lines: one line per row.
	rows := 0
	p.Threads[0].Walk(func(*Node, int) { rows++ })
	assert.Equal(t, len(oddThreads)*rows, countRows(out))
	assert.Equal(t, out, writeLogRT(t, q))
}

// countRows counts the rows of log-rt and xtree: lines that start with a
// level right-aligned in 4 columns.
func countRows(out []byte) int { return countNumbered(out, 3) }

// countNumbered counts the lines with a digit at col that ends a number
// right-aligned there.
func countNumbered(out []byte, col int) int {
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) > col+1 && strings.Trim(l[:col+1], " 0123456789") == "" && l[col] != ' ' && l[col+1] == ' ' {
			n++
		}
	}
	return n
}

func TestOddNamesLogGen(t *testing.T) {
	p := oddProfile()
	// Events that rebuild the names of oddProfile's first thread and
	// more: every odd name as thread and as method.
	var evs []Event
	for _, th := range oddThreads {
		for _, m := range oddMethods {
			evs = append(evs, Event{Thread: th, Kind: Entry, Name: m, Values: v(1, 2)})
		}
		for i := len(oddMethods) - 1; i >= 0; i-- {
			kind := Exit
			if i == 0 {
				kind = ExceptionExit
			}
			evs = append(evs, Event{Thread: th, Kind: kind, Name: oddMethods[i], Values: v(3, 4)})
		}
	}
	out := writeLogGen(t, p.PID, p.Metrics, evs, p.Notes...)
	// Title, pid, note, units and 2 metrics, then one line per event.
	assert.Equal(t, 6+len(evs), strings.Count(string(out), "\n"))
	got := readLogGen(t, out)
	require.Len(t, got, len(evs))
	for i := range evs {
		assert.Equal(t, evs[i].Thread, got[i].Thread)
		assert.Equal(t, evs[i].Name, got[i].Name)
		assert.Equal(t, evs[i].Kind, got[i].Kind)
	}
	lr, err := NewLogGenReader(bytes.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, p.Notes, lr.Notes())

	// The fused reader of BuildProfile agrees with a Builder fed the
	// events themselves.
	built, err := BuildProfile(bytes.NewReader(out))
	require.NoError(t, err)
	b := NewBuilder(p.PID, p.Metrics, p.Notes...)
	for _, ev := range evs {
		require.NoError(t, b.Add(ev))
	}
	require.NoError(t, Compare(b.Profile(), built, CompareOptions{}))
	require.Len(t, built.Threads, len(oddThreads))
	for i, th := range oddThreads {
		assert.Equal(t, th, built.Threads[i].Name)
		assert.NotNil(t, built.Threads[i].Path(oddMethods...), "thread %q", th)
	}
}

func TestOddNamesArcflow(t *testing.T) {
	p := oddProfile()
	nodes := 0
	for _, th := range p.Threads {
		th.Walk(func(*Node, int) { nodes++ })
	}
	for _, r := range []struct {
		name  string
		write func(*bytes.Buffer, *Profile) error
		col   int // where the first number of a line ends
		lines int // lines that hold a name
	}{
		{"xtree", func(b *bytes.Buffer, p *Profile) error { return WriteXTree(b, p) }, 3, nodes},
		{"xprof", func(b *bytes.Buffer, p *Profile) error { return WriteXProf(b, p) }, 10, len(oddThreads) + len(oddMethods)},
	} {
		var b bytes.Buffer
		require.NoError(t, r.write(&b, p))
		out := b.String()
		assert.Equal(t, r.lines, countNumbered(b.Bytes(), r.col), r.name)
		for _, n := range append(slices.Clone(oddThreads), oddMethods...) {
			assert.Contains(t, out, "  "+EscapeName(n)+"\n", "%s lacks %q", r.name, n)
		}
		assert.Contains(t, out, " Note: a note\\nwith a break and \\\\ backslash\n")
	}
	var b bytes.Buffer
	require.NoError(t, WriteXArc(&b, p))
	for _, l := range strings.Split(b.String(), "\n") {
		if i := strings.LastIndex(l, "  "); i >= 0 && len(l) > 11 && l[10] >= '0' && l[10] <= '9' && l[11] == ' ' {
			name := strings.TrimLeft(l[i:], " ")
			_, err := UnescapeName(name)
			require.NoError(t, err, "xarc line %q", l)
		}
	}
	for _, n := range oddMethods {
		assert.Contains(t, b.String(), "    "+EscapeName(n)+"\n")
	}
}
