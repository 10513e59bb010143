package reports

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p *Profile)
		opt    CompareOptions
		want   string // "" if still equal
	}{
		{"nothing", func(*Profile) {}, CompareOptions{}, ""},
		{"pid", func(p *Profile) { p.PID++ }, CompareOptions{}, "pid 4242 != 4243"},
		{"pid ignored", func(p *Profile) { p.PID++ }, CompareOptions{IgnoreHeader: true}, ""},
		{"notes", func(p *Profile) { p.Notes = nil }, CompareOptions{}, "notes"},
		{"unit", func(p *Profile) { p.Metrics = []Metric{{Name: "PTT_TIME"}} }, CompareOptions{}, "metric 1"},
		{"unit ignored", func(p *Profile) { p.Metrics = []Metric{{Name: "PTT_TIME"}} }, CompareOptions{IgnoreHeader: true}, ""},
		{"metric name", func(p *Profile) { p.Metrics = []Metric{{Name: "X"}} }, CompareOptions{IgnoreHeader: true}, "metric 1"},
		{"calls", func(p *Profile) { p.Threads[0].Children[0].Children[0].Calls = 7 },
			CompareOptions{}, "0000b718_main > J:hellop.main([Ljava/lang/String;)V > J:hellop.myA()V: calls 1000 != 7"},
		{"base", func(p *Profile) { p.Threads[1].Base[0]++ }, CompareOptions{}, "0000b71c_Reference Handler: base 1 is 20 != 21"},
		{"delta", func(p *Profile) { p.Threads[1].Delta[0]++ }, CompareOptions{}, "delta 1 is 6 != 7"},
		{"delta ignored", func(p *Profile) { p.Threads[1].Delta[0]++ }, CompareOptions{IgnoreDelta: true}, ""},
		{"DS", func(p *Profile) { p.Threads[1].DS++ }, CompareOptions{}, "DS/IN 2/2 != 3/2"},
		{"DS ignored", func(p *Profile) { p.Threads[1].DS++ }, CompareOptions{IgnoreDSIN: true}, ""},
		{"nil is zeros", func(p *Profile) {
			p.Threads[0].Children[0].Children[1].Children[0].Delta = nil
			p.Threads[0].Children[0].Children[1].Children[0].Base = []uint64{30}
		}, CompareOptions{}, "delta 1 is 9 != 0"},
		{"child order", func(p *Profile) { c := p.Threads[1].Children; c[0], c[1] = c[1], c[0] }, CompareOptions{}, "child 0 is"},
		{"missing child", func(p *Profile) { p.Threads = p.Threads[:1] }, CompareOptions{}, "threads: 2 children != 1 children"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := hellop(1), hellop(1)
			tc.change(b)
			err := Compare(a, b, tc.opt)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// Without metrics log-rt has no DS or IN, so they do not count.
	a, b := hellop(0), hellop(0)
	b.Threads[0].DS = 5
	assert.True(t, Equal(a, b))
	b.Threads[0].Base = []uint64{0}
	assert.True(t, Equal(a, b))
}
