package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/browsertest"
	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// frameCount is the number of frames a flame graph of the collapsed
// stacks has: one per distinct stack prefix (a node with a non-zero
// total), plus the page's root; the <thread> line of merged stacks is the
// root's own value, no frame.
func frameCount(t *testing.T, collapsed string) int {
	prefixes := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(collapsed, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, line)
		stack := line[:i]
		if stack == reports.ThreadFrame {
			continue
		}
		for j := range len(stack) + 1 {
			if j == len(stack) || stack[j] == ';' {
				prefixes[stack[:j]] = true
			}
		}
	}
	return len(prefixes) + 1
}

func collapsedOf(t *testing.T, args ...string) string {
	code, stdout, stderr := jprof(append([]string{"collapsed"}, args...)...)
	require.Equal(t, 0, code, stderr)
	return stdout
}

// pageState is what the tests read back from the flame graph page.
type pageState struct {
	Drawn   int     `json:"drawn"`
	Narrow  int     `json:"narrow"`
	Matches int     `json:"matches"`
	Matched string  `json:"matched"`
	Crumbs  string  `json:"crumbs"`
	ChartW  float64 `json:"chartW"`
	Texts   []string
}

const stateJS = `(() => {
  const s = document.getElementById('status').dataset;
  return {drawn: +s.drawn, narrow: +s.narrow,
    matches: document.querySelectorAll('#chart .frame.match').length,
    matched: document.getElementById('matched').textContent,
    crumbs: document.getElementById('crumbs').textContent,
    chartW: document.getElementById('chart').getBoundingClientRect().width,
    Texts: [...document.querySelectorAll('#chart .frame')].map(e => e.textContent)};
})()`

func state(b *browsertest.Browser) pageState {
	var s pageState
	b.MustEval(stateJS, &s)
	return s
}

type rect struct{ X, Y, W, H float64 }

// frameRect is the box of the first drawn frame whose text is name.
func frameRect(t *testing.T, b *browsertest.Browser, name string) rect {
	t.Helper()
	var r *rect
	b.MustEval(fmt.Sprintf(`(() => {
  const e = [...document.querySelectorAll('#chart .frame')].find(e => e.textContent === %q);
  if (!e) return null;
  const r = e.getBoundingClientRect();
  return {X: r.x, Y: r.y, W: r.width, H: r.height};
})()`, name), &r)
	require.NotNil(t, r, "no frame %q is drawn", name)
	return *r
}

// TestFlameBrowser loads jprof flame's page of a real hellop run into a
// headless Chromium and uses it as a person would: it must draw every
// frame, zoom into a clicked frame, highlight a search and switch to the
// merged view.
func TestFlameBrowser(t *testing.T) {
	b := browsertest.Start(t)
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,RTARCF,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	logRT := r.File("rt.1")
	// The page shows Java's names (the default), so the expectations
	// come from the profile renamed the same way.
	p := reports.Rename(jvmtest.ParseLogRT(t, logRT), reports.JavaNames)
	dir := t.TempDir()
	page := filepath.Join(dir, "flame.html")
	code, _, stderr := jprof("flame", logRT, "-o", page)
	require.Equal(t, 0, code, stderr)

	b.Navigate("file://"+page, `document.body.dataset.ready === "1"`)
	s := state(b)
	// Every node with a non-zero total is a frame, drawn or too narrow.
	assert.Equal(t, frameCount(t, collapsedOf(t, logRT)), s.Drawn+s.Narrow)
	assert.Positive(t, s.Drawn)
	assert.Contains(t, s.Texts, "all threads")
	main := jvmtest.Threads(p, "main")
	require.Len(t, main, 1)
	assert.Contains(t, s.Texts, main[0].Name)

	// The hot method: the largest own time of the run.
	var hot *reports.Node
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, depth int) {
			if depth > 0 && (hot == nil || n.Base[0] > hot.Base[0]) {
				hot = n
			}
		})
	}
	require.NotNil(t, hot)
	assert.Contains(t, s.Texts, hot.Name, "the hot method is drawn with its name")

	// A click on hellop.main zooms into it: it spans the chart.
	var hm *reports.Node
	var hmDepth int
	main[0].Walk(func(n *reports.Node, depth int) {
		if hm == nil && strings.HasPrefix(n.Name, "hellop.main(") {
			hm, hmDepth = n, depth
		}
	})
	require.NotNil(t, hm, "no hellop.main in the main thread")
	before := frameRect(t, b, hm.Name)
	require.Less(t, before.W, s.ChartW, "hellop.main is narrower than the chart before the zoom")
	b.Click(before.X+before.W/2, before.Y+before.H/2)
	s = state(b)
	after := frameRect(t, b, hm.Name)
	assert.InDelta(t, s.ChartW, after.W, 1, "the clicked frame spans the chart")
	assert.Contains(t, s.Crumbs, "zoomed: all threads \u203a "+main[0].Name+" \u203a "+hm.Name)
	sub := &reports.Profile{Metrics: p.Metrics, Threads: []*reports.Node{hm}}
	var subLog bytes.Buffer
	require.NoError(t, reports.WriteCollapsed(&subLog, sub, reports.CollapsedOptions{}))
	// The subtree's frames, its ancestors (the thread and the root; the
	// subtree's count already has one for the root).
	assert.Equal(t, frameCount(t, subLog.String())+hmDepth, s.Drawn+s.Narrow)

	// A search highlights the matching frames and says their share.
	b.MustEval(`document.getElementById('search').focus()`, nil)
	b.Type("HELLOP.MY")
	s = state(b)
	match := func(n *reports.Node) bool { return strings.Contains(strings.ToLower(n.Name), "hellop.my") }
	want := 0
	hm.Walk(func(n *reports.Node, _ int) {
		if match(n) && subtotal(n) > 0 {
			want++
		}
	})
	// The share counts a match inside another match once.
	var matched uint64
	var outer func(n *reports.Node)
	outer = func(n *reports.Node) {
		if match(n) {
			matched += subtotal(n)
			return
		}
		for _, c := range n.Children {
			outer(c)
		}
	}
	outer(hm)
	require.Positive(t, want, "hellop's tree has hellop.my* methods")
	assert.Equal(t, fmt.Sprintf("matched %.2f%% of PTT_TIME in %d frames", 100*float64(matched)/float64(subtotal(hm)), want), s.Matched)
	// The drawn ones are highlighted (frames too narrow to draw are not).
	assert.Positive(t, s.Matches, "highlighted frames")
	assert.LessOrEqual(t, s.Matches, want)
	assert.Equal(t, s.Matches, countDrawn(b, "hellop.my"), "every drawn match is highlighted")
	var bg string
	b.MustEval(`getComputedStyle(document.querySelector('#chart .frame.match')).backgroundColor`, &bg)
	assert.Equal(t, "rgb(224, 64, 192)", bg, "matches are drawn in the highlight colour")

	// The methods table by self: the zoomed subtree's methods, the one
	// with the largest own time first; a click on a row searches for it.
	selfBy := map[string]uint64{}
	hm.Walk(func(n *reports.Node, _ int) { selfBy[n.Name] += n.Base[0] })
	var names []string
	for n := range selfBy {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := selfBy[names[i]], selfBy[names[j]]
		return a > b || a == b && names[i] < names[j]
	})
	b.MustEval(`(() => { const o = document.getElementById('order'); o.value = 'self';
  o.dispatchEvent(new Event('change')); })()`, nil)
	var rows []string
	b.MustEval(`[...document.querySelectorAll('#methods tbody tr')].map(r => r.cells[5].textContent)`, &rows)
	require.NotEmpty(t, rows)
	assert.Equal(t, names[:min(len(names), len(rows))], rows, "methods by self")
	var second rect
	b.MustEval(`(() => { const r = document.querySelectorAll('#methods tbody tr')[1].getBoundingClientRect();
  return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &second)
	b.Click(second.X+second.W/2, second.Y+second.H/2)
	var term string
	b.MustEval(`document.getElementById('search').value`, &term)
	assert.Equal(t, rows[1], term)
	want = 0
	hm.Walk(func(n *reports.Node, _ int) {
		if strings.Contains(strings.ToLower(n.Name), strings.ToLower(term)) && subtotal(n) > 0 {
			want++
		}
	})
	s = state(b)
	assert.Contains(t, s.Matched, " in "+grouped(want)+" frames", "frames of %s", term)
	assert.Positive(t, s.Matches)
	assert.Equal(t, s.Matches, countDrawn(b, term), "every drawn match of %s is highlighted", term)

	png := b.Screenshot()
	shot := filepath.Join(dir, "flame-zoomed-search.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	checkScreenshot(t, png)
	if d := os.Getenv("JPROF_SCREENSHOTS"); d != "" { // to look at it
		require.NoError(t, os.WriteFile(filepath.Join(d, "flame-zoomed-search.png"), png, 0o644))
	}

	// Esc resets the zoom; the merged view has no thread frames and the
	// merged tree's frames.
	b.Key("Escape")
	s = state(b)
	assert.Equal(t, frameCount(t, collapsedOf(t, logRT)), s.Drawn+s.Narrow)
	assert.NotContains(t, s.Crumbs, "zoomed")
	b.MustEval(`(() => { const v = document.getElementById('view'); v.value = 'merged';
  v.dispatchEvent(new Event('change')); })()`, nil)
	s = state(b)
	assert.Equal(t, frameCount(t, collapsedOf(t, "--merge", logRT)), s.Drawn+s.Narrow)
	assert.Contains(t, s.Texts, "all threads (merged)")
	assert.NotContains(t, s.Texts, main[0].Name)
	png = b.Screenshot()
	checkScreenshot(t, png)
	if d := os.Getenv("JPROF_SCREENSHOTS"); d != "" {
		require.NoError(t, os.WriteFile(filepath.Join(d, "flame-merged.png"), png, 0o644))
	}
}

// countDrawn counts the drawn frames whose method name contains term
// (without regard to case), by their tooltips: a narrow frame has no
// label.
func countDrawn(b *browsertest.Browser, term string) int {
	var n int
	b.MustEval(fmt.Sprintf(`(() => {
  const tip = document.getElementById('tip');
  let n = 0;
  for (const e of document.querySelectorAll('#chart .frame')) {
    const r = e.getBoundingClientRect();
    e.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.x + 0.1, clientY: r.y + 1}));
    if (tip.querySelector('.name').textContent.toLowerCase().includes(%q)) n++;
  }
  return n;
})()`, strings.ToLower(term)), &n)
	return n
}

// subtotal is n's PTT_TIME with its subtree.
func subtotal(n *reports.Node) uint64 {
	var v uint64
	n.Walk(func(c *reports.Node, _ int) { v += c.Base[0] })
	return v
}

// checkScreenshot checks that png is a viewport-sized PNG with a picture
// on it: a blank or broken page has a handful of colours.
func checkScreenshot(t *testing.T, b []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, browsertest.Width, browsertest.Height), img.Bounds())
	colours := map[[4]uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 2 {
		for x := 0; x < img.Bounds().Dx(); x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	assert.Greater(t, len(colours), 50, "distinct colours in the screenshot")
}

// TestFlameBrowserNames checks that names with HTML, script and quote
// characters reach the page as text: nothing of them runs or becomes
// markup.
func TestFlameBrowserNames(t *testing.T) {
	b := browsertest.Start(t)
	names := []string{
		`J:</script><b id="pwn">x</b>.m()V`,
		`I:a<!--b.c(Ljava/lang/String;)V`,
		`N:q"'\` + "`${x}`" + `.r()V`,
		"I:\u2028line\u2029sep&amp;.s()V",
	}
	th := &reports.Node{Name: "00000001_t <i>"}
	for i, n := range names {
		th.Children = append(th.Children, &reports.Node{Name: n, Calls: uint64(i + 1), Base: []uint64{uint64(1000 * (i + 1))}})
	}
	p := &reports.Profile{PID: 1, Seq: 1, Metrics: []reports.Metric{{Name: "PTT_TIME", Unit: "ns"}}, Threads: []*reports.Node{th}}
	for _, form := range []reports.NameForm{reports.JVMNames, reports.JavaNames} {
		page := filepath.Join(t.TempDir(), "names.html")
		var html bytes.Buffer
		require.NoError(t, reports.WriteFlame(&html, p, reports.FlameOptions{Title: `</title><b id="pwn2">`, Names: form}))
		require.NoError(t, os.WriteFile(page, html.Bytes(), 0o644))
		b.Navigate("file://"+page, `document.body.dataset.ready === "1"`)
		var injected bool
		b.MustEval(`!!(document.getElementById('pwn') || document.getElementById('pwn2') || document.querySelector('#chart i'))`, &injected)
		assert.False(t, injected, "a name became markup")
		s := state(b)
		assert.Equal(t, 2+len(names), s.Drawn)
		for _, n := range append(names, th.Name) {
			assert.Contains(t, s.Texts, reports.FormatName(n, form), form)
		}
		var title string
		b.MustEval(`document.title`, &title)
		assert.Equal(t, `</title><b id="pwn2">`, title)
	}
}

// TestFlameBrowserTypes: in the java form a method that ran compiled and
// interpreted is one frame, whose tooltip names both types; in the jvm
// form they are two frames, each of one type.
func TestFlameBrowserTypes(t *testing.T) {
	b := browsertest.Start(t)
	th := &reports.Node{Name: "00000001_main", Children: []*reports.Node{
		{Name: "J:a/B.f(I)V", Calls: 3, Base: []uint64{3000}},
		{Name: "I:a/B.f(I)V", Calls: 1, Base: []uint64{1000}},
		{Name: "n:a/B.g()V", Calls: 1, Base: []uint64{1000}},
	}}
	p := &reports.Profile{PID: 1, Seq: 1, Metrics: []reports.Metric{{Name: "PTT_TIME", Unit: "ns"}}, Threads: []*reports.Node{th}}
	tips := func(form reports.NameForm) map[string]string {
		var html bytes.Buffer
		require.NoError(t, reports.WriteFlame(&html, p, reports.FlameOptions{Names: form}))
		page := filepath.Join(t.TempDir(), "types.html")
		require.NoError(t, os.WriteFile(page, html.Bytes(), 0o644))
		b.Navigate("file://"+page, `document.body.dataset.ready === "1"`)
		got := map[string]string{}
		b.MustEval(`(() => {
  const tip = document.getElementById('tip');
  const out = {};
  for (const e of document.querySelectorAll('#chart .frame')) {
    const r = e.getBoundingClientRect();
    e.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.x + 1, clientY: r.y + 1}));
    const type = tip.querySelector('.type');
    out[tip.querySelector('.name').textContent] = (type ? type.textContent : '') + ' ' + getComputedStyle(e).backgroundColor;
  }
  return out;
})()`, &got)
		return got
	}
	java := tips(reports.JavaNames)
	require.Contains(t, java, "a.B.f(int)")
	assert.True(t, strings.HasPrefix(java["a.B.f(int)"], "jit-compiled, interpreted rgb("), java["a.B.f(int)"])
	assert.True(t, strings.HasPrefix(java["a.B.g()"], "native static rgb("), java["a.B.g()"])
	assert.NotContains(t, java, "J:a/B.f(I)V")
	jvm := tips(reports.JVMNames)
	assert.True(t, strings.HasPrefix(jvm["J:a/B.f(I)V"], "jit-compiled rgb("), jvm["J:a/B.f(I)V"])
	assert.True(t, strings.HasPrefix(jvm["I:a/B.f(I)V"], "interpreted rgb("), jvm["I:a/B.f(I)V"])
	assert.NotEqual(t, jvm["J:a/B.f(I)V"][len("jit-compiled "):], jvm["I:a/B.f(I)V"][len("interpreted "):], "each type its colour")
	assert.NotEqual(t, java["a.B.f(int)"], jvm["J:a/B.f(I)V"])
}

// TestFlameBrowserDeep loads a call chain deeper than a JavaScript stack
// would allow a recursive walk (a Java StackOverflowError leaves one):
// the page must draw it, and its search must count every frame.
func TestFlameBrowserDeep(t *testing.T) {
	const depth = 15000 // a recursive walk of the page overflowed at 10000
	b := browsertest.Start(t)
	root := &reports.Node{Name: "00000001_deep"}
	n := root
	for i := range depth {
		c := &reports.Node{Name: fmt.Sprintf("I:R.f%d()V", i%3), Calls: 1, Base: []uint64{10}}
		n.Children = []*reports.Node{c}
		n = c
	}
	p := &reports.Profile{PID: 1, Seq: 1, Metrics: []reports.Metric{{Name: "PTT_TIME", Unit: "ns"}}, Threads: []*reports.Node{root}}
	var html bytes.Buffer
	require.NoError(t, reports.WriteFlame(&html, p, reports.FlameOptions{}))
	page := filepath.Join(t.TempDir(), "deep.html")
	require.NoError(t, os.WriteFile(page, html.Bytes(), 0o644))
	b.Navigate("file://"+page, `document.body.dataset.ready === "1"`)
	s := state(b)
	assert.Equal(t, depth+2, s.Drawn+s.Narrow, "the root, the thread and the chain")
	// One input event (typing is TestFlameBrowser's): each render of the
	// chain takes a while.
	b.MustEval(`(() => { const e = document.getElementById('search'); e.value = 'f1(';
  e.dispatchEvent(new Event('input')); })()`, nil)
	s = state(b)
	// The outermost f1 holds all but the first frame's time.
	assert.Equal(t, "matched 99.99% of PTT_TIME in 5,000 frames", s.Matched)
}

// grouped writes n as the page does (toLocaleString: 1,090).
func grouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
