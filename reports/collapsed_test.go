package reports

import (
	"bytes"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func collapsed(t *testing.T, p *Profile, o CollapsedOptions) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteCollapsed(&b, p, o))
	return b.String()
}

func TestWriteCollapsed(t *testing.T) {
	for _, tc := range []struct {
		k    int
		o    CollapsedOptions
		want []string // lines expected among the output
	}{
		{2, CollapsedOptions{}, []string{
			"0000b718_main 10",
			"0000b718_main;hellop.main(String[]);hellop.myA();hellop.myC() 70040",
			"0000b71c_Reference Handler;java.lang.ref.Reference.processPendingReferences() 170",
		}},
		{2, CollapsedOptions{Names: JVMNames}, []string{
			"0000b718_main 10",
			"0000b718_main;J:hellop.main([Ljava/lang/String,)V;J:hellop.myA()V;J:hellop.myC()V 70040",
			"0000b71c_Reference Handler;I:java/lang/ref/Reference.processPendingReferences()V 170",
		}},
		{2, CollapsedOptions{Names: ShortNames}, []string{
			"0000b718_main;hellop.main;hellop.myA;hellop.myC 70040",
			"0000b718_main;hellop.main;StringBuffer.<init>;Object.<init> 30",
		}},
		{2, CollapsedOptions{Value: "ptt_insts"}, []string{
			"0000b718_main;hellop.main(String[]);hellop.myA();hellop.myC() 7004000",
		}},
		{1, CollapsedOptions{Value: "calls"}, []string{
			"0000b718_main;hellop.main(String[]);hellop.myA() 1000",
			"0000b71c_Reference Handler;java.lang.ref.Reference.waitForReferencePendingList() 1",
		}},
		{0, CollapsedOptions{MergeThreads: true}, []string{ // calls: no metric
			"hellop.main(String[]) 1",
			"java.lang.ref.Reference.processPendingReferences() 3",
		}},
		{0, CollapsedOptions{MergeThreads: true, Names: JVMNames}, []string{
			"J:hellop.main([Ljava/lang/String,)V 1",
			"I:java/lang/ref/Reference.processPendingReferences()V 3",
		}},
		{1, CollapsedOptions{MergeThreads: true}, []string{ThreadFrame + " 30"}},
	} {
		got := collapsed(t, hellop(tc.k), tc.o)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		for _, w := range tc.want {
			assert.Contains(t, lines, w, "k=%d %+v", tc.k, tc.o)
		}
	}
	// Zero own values are no line: the waiting method spent no time, and
	// thread roots have no calls.
	got := collapsed(t, hellop(1), CollapsedOptions{})
	assert.NotContains(t, got, "waitForReferencePendingList")
	assert.NotContains(t, collapsed(t, hellop(1), CollapsedOptions{Value: "calls"}), "0000b718_main ")

	_, err := SelectValue(hellop(1), "PTT_INSTS")
	assert.ErrorContains(t, err, `no value "PTT_INSTS" in this profile: want one of calls, PTT_TIME`)
	assert.Error(t, WriteCollapsed(&bytes.Buffer{}, hellop(1), CollapsedOptions{Value: "frob"}))
}

// TestWriteCollapsedTotals checks on random trees that the lines add up
// to the profile's totals, merged or not, with one line per stack.
func TestWriteCollapsedTotals(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	for range 30 {
		k := rng.Intn(3)
		p := randomTree(rng, k)
		tot := totals(p)
		want := tot.Calls
		if k > 0 {
			want = tot.Base[0]
		}
		for _, merge := range []bool{false, true} {
			var sum uint64
			seen := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSuffix(collapsed(t, p, CollapsedOptions{MergeThreads: merge}), "\n"), "\n") {
				if line == "" {
					continue
				}
				i := strings.LastIndexByte(line, ' ')
				v, err := strconv.ParseUint(line[i+1:], 10, 64)
				require.NoError(t, err, line)
				assert.NotZero(t, v, line)
				assert.False(t, seen[line[:i]], "stack %q twice", line[:i])
				seen[line[:i]] = true
				sum += v
				assert.Equal(t, merge, !strings.HasPrefix(line, "0000"), line)
			}
			assert.Equal(t, want, sum, "merge=%v", merge)
		}
	}
}

func TestCollapsedFrameEscapes(t *testing.T) {
	p := &Profile{Threads: []*Node{{Name: "t;1", Children: []*Node{{Name: "I:a(Lb;Lc;)V\nx\r", Calls: 2}}}}}
	assert.Equal(t, "t,1;I:a(Lb,Lc,)V x  2\n", collapsed(t, p, CollapsedOptions{}))
	p = &Profile{Threads: []*Node{{Name: "t", Children: []*Node{{Name: "I:a/B.f(Lb;Lc;)V", Calls: 2}}}}}
	assert.Equal(t, "t;I:a/B.f(Lb,Lc,)V 2\n", collapsed(t, p, CollapsedOptions{Names: JVMNames}))
	assert.Equal(t, "t;a.B.f(b, c) 2\n", collapsed(t, p, CollapsedOptions{}))
}
