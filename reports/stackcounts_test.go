package reports

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampledTree is a SAMPLE log-rt's tree: 12 samples, CALLS counting the
// samples with a context on the stack. run (12 on the stack) has 1 on
// top; sort recurses (sort → sort), 6 samples in the inner sort's leaf
// swap and 1 in each sort; parse has 1 and 1 in its callee tok; fmt 1.
func sampledTree() *Profile {
	leaf := func(name string, calls, ns uint64, ch ...*Node) *Node {
		return &Node{Name: name, Calls: calls, Base: []uint64{ns}, Delta: []uint64{0}, Children: ch}
	}
	return &Profile{
		PID:     7,
		Seq:     1,
		Metrics: []Metric{{Name: "SAMPLED_CPU_TIME", Unit: "ns"}},
		Notes: []string{"Sampled tree (SAMPLE=cpu:1ms)",
			"CALLS = samples with this context on the stack (CEE: those in its callees; CALLS-CEE: samples with it on top)"},
		Threads: []*Node{leaf("00000001_main", 0, 0,
			leaf("J:W.run()V", 12, 1e6,
				leaf("J:W.sort(I)V", 8, 1e6,
					leaf("J:W.sort(I)V", 7, 1e6,
						leaf("J:W.swap()V", 6, 6e6))),
				leaf("J:W.parse()V", 2, 1e6, leaf("J:W.tok()V", 1, 1e6)),
				leaf("J:W.fmt()V", 1, 1e6)))},
	}
}

func TestStackCounts(t *testing.T) {
	p := sampledTree()
	assert.Equal(t, "samples", p.StackCounts())
	assert.Equal(t, "", hellop(1).StackCounts())

	// pprof: the count type is the samples with the stack on top.
	pp, err := ToPprof(p, JavaNames)
	require.NoError(t, err)
	last := len(pp.SampleType) - 1
	assert.Equal(t, "samples", pp.SampleType[last].Type)
	var sum int64
	for _, s := range pp.Sample {
		sum += s.Value[last]
	}
	assert.EqualValues(t, 12, sum, "every sample once")

	// collapsed: the lines add up to the samples.
	var b bytes.Buffer
	require.NoError(t, WriteCollapsed(&b, p, CollapsedOptions{Value: CallsValue}))
	sum = 0
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		v, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		require.NoError(t, err)
		sum += v
	}
	assert.EqualValues(t, 12, sum, b.String())

	// xprof: per method, the samples with it on top, whatever the recursion.
	byName := map[string]uint64{}
	for _, l := range NewArcflow(p).XProf() {
		byName[l.Name] = l.Calls
	}
	assert.Equal(t, map[string]uint64{"00000001_main": 0, "J:W.run()V": 1, "J:W.sort(I)V": 2, "J:W.swap()V": 6,
		"J:W.parse()V": 1, "J:W.tok()V": 1, "J:W.fmt()V": 1}, byName)
	b.Reset()
	require.NoError(t, WriteXProf(&b, p))
	assert.Contains(t, b.String(), "CALLS here = samples with the method on top")
	assert.NotContains(t, b.String(), "with this context on the stack", "the log-rt's word on CALLS is not xprof's")

	// Prune: the <pruned> row counts the removed subtrees' samples once
	// (parse's 2, tok's among them, and fmt's 1), never more than its
	// parent.
	q := Prune(p, 20)
	run := q.Threads[0].Children[0]
	var pr *Node
	run.Walk(func(n *Node, _ int) {
		if n.Name == PrunedName {
			pr = n
		}
	})
	require.NotNil(t, pr, "something pruned")
	assert.Equal(t, uint64(3), pr.Calls)

	// An exact tree's calls are entries and stay as they are.
	assert.Equal(t, uint64(1000), OwnCalls(hellop(1).Threads[0].Children[0].Children[0], false))
}

// xprof's NS/CALL: an exact tree with a time metric has each method's
// own time per call, marked ~ under ShortCallNs in a BCI profile (the
// probes' cost is most of it there); a sampled tree's CALLS are samples,
// so it has none.
func TestXProfPerCall(t *testing.T) {
	row := func(out, name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasSuffix(l, "  "+name) {
				return l
			}
		}
		return ""
	}
	var b bytes.Buffer
	p := hellop(1) // myC: 70040 ns over 1000 calls
	require.NoError(t, WriteXProf(&b, p))
	assert.Contains(t, b.String(), " NS/CALL  NAME\n")
	assert.Regexp(t, `^ +1000 +70040 +70040 +70  J:hellop.myC\(\)V$`, row(b.String(), "J:hellop.myC()V"), "no mark: not a BCI profile")
	assert.NotContains(t, b.String(), "marked ~")

	p.Notes = append(p.Notes, "Event source: bci")
	b.Reset()
	require.NoError(t, WriteXProf(&b, p))
	assert.Regexp(t, `^ +1000 +70040 +70040 +70~  J:hellop.myC\(\)V$`, row(b.String(), "J:hellop.myC()V"))
	assert.Regexp(t, ` +- +0000b718_main$`, row(b.String(), "0000b718_main"), "a thread's root has no calls")
	assert.Contains(t, b.String(), fmt.Sprintf("marked ~ under %d ns", ShortCallNs))

	// Pruned, the <pruned> row is many methods' sum: no time per call.
	b.Reset()
	require.NoError(t, WriteXProf(&b, Prune(p, 50)))
	assert.Regexp(t, ` +-  `+regexp.QuoteMeta(PrunedName)+`$`, row(b.String(), PrunedName))

	// Uncalibrated, a call's time holds the agent's work too: no mark.
	p.Metrics = []Metric{{Name: "PTT_TIME", Unit: "ns"}}
	b.Reset()
	require.NoError(t, WriteXProf(&b, p))
	assert.Regexp(t, ` +70  J:hellop.myC\(\)V$`, row(b.String(), "J:hellop.myC()V"))
	assert.NotContains(t, b.String(), "marked ~")

	b.Reset()
	require.NoError(t, WriteXProf(&b, hellop(0)))
	assert.NotContains(t, b.String(), "NS/CALL", "no metric")
}

// A sampled report's own word on CALLS replaces the log-rt's first
// clause, not what the note goes on to say of the metrics (ALLOC's, LOCK's).
func TestReportHeaderCallsNote(t *testing.T) {
	p := hellop(1)
	p.Notes = append(p.Notes, "CALLS = samples with this context on the stack; ALLOC_SPACE and ALLOC_OBJECTS = the bytes and objects the samples stand for")
	var b bytes.Buffer
	reportHeader(&b, "xprof", p, p.Metrics, []uint64{1}, "CALLS here = samples with the method on top")
	assert.NotContains(t, b.String(), "with this context on the stack")
	assert.Contains(t, b.String(), " Note: ALLOC_SPACE and ALLOC_OBJECTS = the bytes and objects the samples stand for\n")
	assert.Contains(t, b.String(), " Note: CALLS here = samples with the method on top\n")
}
