package ptttest

import (
	"errors"
	"os"
	"testing"

	"github.com/libjprof/libjprof/ptt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// BenchmarkRead reports ns per PTT read for each backend beside bare
// clock reads. Each b.N reads run in one C loop, so the cgo call is
// amortised: ns/op is the cost of one read.
func BenchmarkRead(b *testing.B) {
	for _, base := range []Baseline{VDSOMonotonic, RDTSC, ThreadCPUTime} {
		b.Run(base.String(), func(b *testing.B) {
			b.ReportMetric(BaselineCost(base, b.N), "ns/read")
		})
	}
	for _, be := range []ptt.Backend{ptt.Clock, ptt.Perf, ptt.BPF} {
		b.Run(be.String(), func(b *testing.B) {
			_, err := ptt.Setup(ptt.Config{Metrics: []ptt.Metric{ptt.Time}, Force: be})
			if errors.Is(err, os.ErrPermission) {
				b.Skipf("backend %s not loadable here: %v", be, err)
			}
			require.NoError(b, err)
			defer ptt.Close()
			b.ResetTimer()
			ns, err := ReadCost(be, b.N)
			require.NoError(b, err)
			b.ReportMetric(ns, "ns/read")
		})
	}
}

func TestReadCost(t *testing.T) {
	_, err := ReadCost(ptt.BPF, 10)
	assert.Error(t, err, "no backend configured")

	costs := MeasureReadCosts(20000)
	names := map[string]bool{}
	for _, c := range costs {
		names[c.Name] = true
		if errors.Is(c.Err, os.ErrPermission) {
			continue
		}
		require.NoError(t, c.Err, c.Name)
		assert.Greater(t, c.NsPerRead, 0.0, c.Name)
		t.Logf("%-15s %7.1f ns/read", c.Name, c.NsPerRead)
	}
	for _, n := range []string{"vdso-monotonic", "rdtsc", "thread-cputime", "clock", "perf", "bpf"} {
		assert.True(t, names[n], n)
	}
}
