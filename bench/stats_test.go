package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"one", []float64{3}, Summary{N: 1, Median: 3, Min: 3, Max: 3, Q1: 3, Q3: 3}},
		{"odd, unsorted", []float64{5, 1, 3}, Summary{N: 3, Median: 3, Min: 1, Max: 5, Q1: 2, Q3: 4}},
		{"even: median between the middle two", []float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Min: 1, Max: 4, Q1: 1.75, Q3: 3.25}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			assert.Equal(t, tc.want, Summarize(tc.in))
			assert.Equal(t, in, tc.in, "input left unsorted")
		})
	}
}

func TestSummaryScale(t *testing.T) {
	s := Summary{N: 2, Median: 2, Min: 1, Max: 3, Q1: 1.5, Q3: 2.5}
	assert.Equal(t, Summary{N: 2, Median: 4, Min: 2, Max: 6, Q1: 3, Q3: 5}, s.Scale(2))
	assert.Equal(t, Summary{N: 2, Median: -2, Min: -3, Max: -1, Q1: -2.5, Q3: -1.5}, s.Scale(-1), "min stays below max")
	assert.Equal(t, "1.0–3.0", s.Range("%.1f"))
	assert.Equal(t, "1.5–2.5", s.IQR("%.1f"))
}

func TestWorkloadDiff(t *testing.T) {
	w := &Workload{Calls: 50, Rows: []*WorkloadRow{
		{Config: Config{Key: "a"}, Samples: []Sample{{Round: 0, PhaseNs: 1000}, {Round: 1, PhaseNs: 3000}, {Round: 2, PhaseNs: 900}}},
		{Config: Config{Key: "b"}, Samples: []Sample{{Round: 1, PhaseNs: 2000}, {Round: 0, PhaseNs: 500}}},
	}}
	d, ok := w.Diff("a", "b", Wall)
	assert.True(t, ok)
	// Round 0: (1000-500)/100 = 5; round 1: (3000-2000)/100 = 10;
	// round 2 has no b and does not count.
	assert.Equal(t, Summary{N: 2, Median: 7.5, Min: 5, Max: 10, Q1: 6.25, Q3: 8.75}, d)
	d, ok = w.Diff("a", "b", CPU)
	assert.True(t, ok)
	assert.Equal(t, 0.0, d.Median, "no CPU times in these samples")
	_, ok = w.Diff("a", "missing", Wall)
	assert.False(t, ok)
}

func TestGroup(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		assert.Equal(t, want, group(in), in)
	}
}
