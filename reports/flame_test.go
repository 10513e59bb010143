package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
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
	require.NoError(t, WriteFlame(&b, hellop(2), FlameOptions{Value: "calls", MergeThreads: true}))
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
	require.Len(t, d.Threads, 2)
	myC := d.Threads[0].Children[0].Children[0].Children[0]
	assert.Equal(t, "J:hellop.myC()V", myC.Name)
	assert.Equal(t, []uint64{70040, 7004000, 1000}, myC.Self)

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
	assert.Equal(t, evil, d.Threads[0].Name, "the name comes back whole")
	assert.Equal(t, "I:"+evil, d.Threads[0].Children[0].Name)
}
