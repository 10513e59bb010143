package reports

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pprofTotals sums each sample value over pp.
func pprofTotals(pp *profile.Profile) []int64 {
	t := make([]int64, len(pp.SampleType))
	for _, s := range pp.Sample {
		for i, v := range s.Value {
			t[i] += v
		}
	}
	return t
}

func TestToPprof(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	profiles := []*Profile{hellop(0), hellop(1), hellop(2)}
	for range 30 {
		profiles = append(profiles, randomTree(rng, rng.Intn(3)))
	}
	for i, p := range profiles {
		pp, err := ToPprof(p)
		require.NoError(t, err)
		k := len(p.Metrics)
		require.Len(t, pp.SampleType, k+1)
		assert.Equal(t, profile.ValueType{Type: "calls", Unit: "count"}, *pp.SampleType[k])
		if k > 0 {
			assert.Equal(t, profile.ValueType{Type: "ptt_time", Unit: "ns"}, *pp.SampleType[0])
		}

		// Totals equal the log-rt totals.
		tot := totals(p)
		want := make([]int64, k+1)
		for m := range k {
			want[m] = int64(tot.Base[m])
		}
		want[k] = int64(tot.Calls)
		assert.Equal(t, want, pprofTotals(pp), "profile %d", i)

		// Written and parsed back, it is the same and valid.
		var b bytes.Buffer
		require.NoError(t, pp.Write(&b))
		back, err := profile.Parse(&b)
		require.NoError(t, err)
		require.NoError(t, back.CheckValid())
		assert.Equal(t, want, pprofTotals(back))
		assert.Len(t, back.Sample, len(pp.Sample))
	}
}

// TestToPprofPaths checks that each sample's stack is the node's path,
// leaf first, with the thread root outermost.
func TestToPprofPaths(t *testing.T) {
	pp, err := ToPprof(hellop(1))
	require.NoError(t, err)
	var stacks []string
	for _, s := range pp.Sample {
		var st string
		for _, l := range s.Location {
			st += l.Line[0].Function.Name + ";"
		}
		stacks = append(stacks, fmt.Sprintf("%s=%v", st, s.Value))
	}
	assert.Contains(t, stacks, "J:hellop.myC()V;J:hellop.myA()V;J:hellop.main([Ljava/lang/String;)V;0000b718_main;=[70040 1000]")
	assert.Contains(t, stacks, "0000b718_main;=[10 0]")
	// One sample per node: none has only zero values.
	assert.Len(t, stacks, 11)
	pp, err = ToPprof(&Profile{Threads: []*Node{{Name: "idle"}}})
	require.NoError(t, err)
	assert.Empty(t, pp.Sample, "a node with only zeros is no sample")
}

func TestToPprofErrors(t *testing.T) {
	_, err := ToPprof(&Profile{Metrics: testMetrics[:1], Threads: []*Node{{Name: "t", Base: []uint64{1 << 63}}}})
	assert.ErrorContains(t, err, "overflows int64")
	_, err = ToPprof(&Profile{Threads: []*Node{{Name: "t", Base: []uint64{1}}}})
	assert.ErrorContains(t, err, "1 base values for 0 metrics")
}

// TestGoToolPprof runs `go tool pprof -top` on a converted profile, as a
// user would. It builds pprof the first time, which takes a while.
func TestGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("builds go tool pprof")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	pp, err := ToPprof(hellop(1))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "prof.pb.gz")
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, pp.Write(f))
	require.NoError(t, f.Close())

	out, err := exec.Command(goBin, "tool", "pprof", "-top", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "J:hellop.myC()V")
	assert.Contains(t, string(out), "Type: ptt_time")
}
