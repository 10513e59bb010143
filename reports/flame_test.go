package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The browser test of the page is in cmd/jprof (TestFlameBrowser); these
// check what can be checked without a browser.

var flameDataRE = regexp.MustCompile(`(?s)<script id="flame-data" type="application/json">(.*?)</script>`)

func TestWriteFlame(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteFlame(&b, hellop(2), FlameOptions{Value: "calls", MergeThreads: true, Names: JVMNames}))
	page := b.String()
	assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"))
	assert.Contains(t, page, "<title>libjprof pid 4242, log-rt 1</title>")
	// Self-contained: nothing is fetched when the page is viewed.
	for _, ref := range []string{"http:", "https:", "src=", "<link", "@import", "url("} {
		assert.NotContains(t, page, ref)
	}
	assert.NotContains(t, flameJS, "</script", "the script must not end its own element")
	assert.NotContains(t, flameJS, "<!--")

	m := flameDataRE.FindStringSubmatch(page)
	require.NotNil(t, m)
	var d flameData
	require.NoError(t, json.Unmarshal([]byte(m[1]), &d))
	assert.Equal(t, []flameValue{{"PTT_TIME", "ns"}, {"PTT_INSTS", "instructions"}, {"calls", ""}}, d.Values)
	assert.Equal(t, 2, d.Value, "calls is the last value")
	assert.True(t, d.Merged)
	got := unflatten(t, d)
	want := hellop(2)
	require.Len(t, got, len(want.Threads))
	for i := range got {
		assertSameTree(t, want.Threads[i], got[i])
	}
	assert.Len(t, d.Names, 11, "each name once")
	assert.Equal(t, "J", d.Types[slices.Index(d.Names, "J:hellop.myA()V")])
	assert.Equal(t, "", d.Types[slices.Index(d.Names, "0000b718_main")])
	assert.Equal(t, "jit-compiled", d.TypeNames["J"])
	assert.Equal(t, "native static", d.TypeNames["n"])

	// Java's names by default, and the types of a merged frame.
	p := hellop(1)
	main := p.Threads[0].Children[0]
	main.Children = append(main.Children, n("I:hellop.myA()V", 2, 1, 4, n("I:hellop.myC()V", 2, 1, 7)))
	b.Reset()
	require.NoError(t, WriteFlame(&b, p, FlameOptions{}))
	d = flameData{}
	require.NoError(t, json.Unmarshal([]byte(flameDataRE.FindStringSubmatch(b.String())[1]), &d))
	got = unflatten(t, d)
	myA := got[0].Path("hellop.main(String[])", "hellop.myA()")
	require.NotNil(t, myA, "%v", d.Names)
	assert.Equal(t, uint64(1002), myA.Calls)
	assert.Equal(t, []uint64{110 + 40}, myA.Base)
	assert.Len(t, got[0].Children[0].Children, 3, "myA's two types are one frame")
	assert.Equal(t, "JI", d.Types[slices.Index(d.Names, "hellop.myA()")])
	assert.Equal(t, "O", d.Types[slices.Index(d.Names, "java.lang.ref.Reference.waitForReferencePendingList()")])
	assert.NotContains(t, d.Names, "J:hellop.myA()V")

	_, err := SelectValue(hellop(0), "PTT_TIME")
	require.Error(t, err)
	assert.Error(t, WriteFlame(&b, hellop(0), FlameOptions{Value: "PTT_TIME"}))
}

// TestWriteFlameNames checks that names cannot break out of the data
// element, and that the title is escaped.
func TestWriteFlameNames(t *testing.T) {
	evil := `</script><script>alert(1)</script><!--&amp;` + "\u2028"
	p := &Profile{Threads: []*Node{{Name: evil, Children: []*Node{{Name: "I:" + evil, Calls: 1}}}}}
	var b bytes.Buffer
	require.NoError(t, WriteFlame(&b, p, FlameOptions{Title: evil}))
	page := b.String()
	assert.NotContains(t, page, "alert(1)</script>")
	assert.Equal(t, 2, strings.Count(page, "</script>"), "only the page's own two script elements end")
	assert.Contains(t, page, "<title>"+html.EscapeString(evil)+"</title>")
	m := flameDataRE.FindStringSubmatch(page)
	require.NotNil(t, m)
	var d flameData
	require.NoError(t, json.Unmarshal([]byte(m[1]), &d))
	got := unflatten(t, d)
	assert.Equal(t, evil, got[0].Name, "the name comes back whole")
	assert.Equal(t, "I:"+evil, got[0].Children[0].Name)
}

// unflatten rebuilds the thread trees of the page's data: names, calls
// and base values.
func unflatten(t *testing.T, d flameData) []*Node {
	t.Helper()
	w := len(d.Values) + 2
	require.Zero(t, len(d.Nodes)%w)
	var all, roots []*Node
	for o := 0; o < len(d.Nodes); o += w {
		n := &Node{Name: d.Names[d.Nodes[o]], Base: d.Nodes[o+2 : o+w-1], Calls: d.Nodes[o+w-1]}
		if parent := d.Nodes[o+1]; parent == 0 {
			roots = append(roots, n)
		} else {
			require.Less(t, int(parent-1), len(all), "a parent comes first")
			all[parent-1].Children = append(all[parent-1].Children, n)
		}
		all = append(all, n)
	}
	return roots
}

func assertSameTree(t *testing.T, want, got *Node) {
	t.Helper()
	assert.Equal(t, want.Name, got.Name)
	assert.Equal(t, want.Calls, got.Calls, want.Name)
	assert.Equal(t, want.Base, got.Base, want.Name)
	require.Len(t, got.Children, len(want.Children), want.Name)
	for i := range want.Children {
		assertSameTree(t, want.Children[i], got.Children[i])
	}
}

// TestWriteFlameRandom checks the flat tree on random profiles.
func TestWriteFlameRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(41))
	for range 20 {
		p := randomTree(rng, 1+rng.Intn(2))
		var b bytes.Buffer
		require.NoError(t, WriteFlame(&b, p, FlameOptions{}))
		m := flameDataRE.FindStringSubmatch(b.String())
		require.NotNil(t, m)
		var d flameData
		require.NoError(t, json.Unmarshal([]byte(m[1]), &d))
		got := unflatten(t, d)
		require.Len(t, got, len(p.Threads))
		for i := range got {
			assertSameTree(t, p.Threads[i], got[i])
		}
	}
}
