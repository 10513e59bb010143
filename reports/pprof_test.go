package reports

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
		pp, err := ToPprof(p, JVMNames)
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
	pp, err := ToPprof(hellop(1), JVMNames)
	require.NoError(t, err)
	var stacks []string
	for _, s := range pp.Sample {
		var st string
		for _, l := range s.Location {
			st += l.Line[0].Function.Name + ";"
		}
		stacks = append(stacks, fmt.Sprintf("%s=%v", st, s.Value))
	}
	assert.Contains(t, stacks, "hellop.myC()V;hellop.myA()V;hellop.main([Ljava/lang/String;)V;0000b718_main;=[70040 1000]")
	assert.Contains(t, stacks, "0000b718_main;=[10 0]")
	// One sample per node: none has only zero values.
	assert.Len(t, stacks, 11)
	for _, f := range pp.Function {
		assert.NotEqual(t, f.Name, f.SystemName, "pprof demangles a function whose names are equal")
	}
	var types []string
	for _, s := range pp.Sample {
		types = append(types, s.Label["type"]...)
	}
	assert.Contains(t, types, "native static")
	assert.Contains(t, types, "jit-compiled")
	// In the java form: Java's names, the log-rt's as system names.
	pp, err = ToPprof(hellop(1), JavaNames)
	require.NoError(t, err)
	sys := map[string]string{}
	for _, f := range pp.Function {
		assert.NotEqual(t, f.Name, f.SystemName, "pprof demangles a function whose names are equal")
		sys[f.Name] = f.SystemName
	}
	assert.Equal(t, "J:hellop.main([Ljava/lang/String;)V", sys["hellop.main(String[])"])
	assert.Equal(t, "-:0000b718_main", sys["0000b718_main"])
	assert.Equal(t, "O:java/lang/ref/Reference.waitForReferencePendingList()V", sys["java.lang.ref.Reference.waitForReferencePendingList()"])
	pp, err = ToPprof(&Profile{Threads: []*Node{{Name: "idle"}}}, JavaNames)
	require.NoError(t, err)
	assert.Empty(t, pp.Sample, "a node with only zeros is no sample")
}

func TestPprofNames(t *testing.T) {
	for name, want := range map[string][2]string{
		"i:java/lang/StringLatin1.charAt([BI)C": {"java.lang.StringLatin1.charAt([BI)C", "i:java/lang/StringLatin1.charAt([BI)C"},
		"J:hellop.myA()V":                       {"hellop.myA()V", "J:hellop.myA()V"},
		"I:a/B$C.<init>(La/B;)V":                {"a.B$C.<init>(La/B;)V", "I:a/B$C.<init>(La/B;)V"},
		"O:x/Y.z":                               {"x.Y.z", "O:x/Y.z"},
		"0000b718_main":                         {"0000b718_main", "-:0000b718_main"},
		PrunedName:                              {PrunedName, "-:" + PrunedName},
	} {
		assert.Equal(t, want[0], pprofName(name), name)
		assert.Equal(t, want[1], systemName(name), name)
	}
}

func TestToPprofErrors(t *testing.T) {
	_, err := ToPprof(&Profile{Metrics: testMetrics[:1], Threads: []*Node{{Name: "t", Base: []uint64{1 << 63}}}}, JavaNames)
	assert.ErrorContains(t, err, "overflows int64")
	_, err = ToPprof(&Profile{Threads: []*Node{{Name: "t", Base: []uint64{1}}}}, JavaNames)
	assert.ErrorContains(t, err, "1 base values for 0 metrics")
}

// TestGoToolPprof runs `go tool pprof -top` and -traces on a converted
// profile, as a user would, with pprof's default symbolization: Java
// names and signatures come out whole. It builds pprof the first time,
// which takes a while.
func TestGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("builds go tool pprof")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	p := hellop(1)
	main := p.Threads[0].Children[0]
	main.Children = append(main.Children, &Node{Name: "i:java/lang/StringLatin1.charAt([BI)C", Calls: 3, Base: []uint64{5000}},
		&Node{Name: "N:x/Y.tpl<T>::op[](I)V", Calls: 1, Base: []uint64{4000}})
	for form, wants := range map[NameForm][]string{
		JVMNames:  {"hellop.myC()V", "java.lang.StringLatin1.charAt([BI)C", "x.Y.tpl<T>::op[](I)V", "hellop.main([Ljava/lang/String;)V"},
		JavaNames: {"hellop.myC()", "java.lang.StringLatin1.charAt(byte[], int)", "x.Y.tpl<T>::op[](I)V", "hellop.main(String[])"},
	} {
		pp, err := ToPprof(p, form)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "prof.pb.gz")
		f, err := os.Create(file)
		require.NoError(t, err)
		require.NoError(t, pp.Write(f))
		require.NoError(t, f.Close())

		for _, mode := range []string{"-top", "-traces"} {
			out, err := exec.Command(goBin, "tool", "pprof", mode, file).CombinedOutput()
			require.NoError(t, err, "%s", out)
			for _, want := range wants {
				assert.Contains(t, string(out), want+"\n", "%s %s", form, mode)
			}
			assert.Contains(t, string(out), "Type: ptt_time", mode)
		}
	}
}

// A log-rt's interval becomes the profile's time and duration, which
// pprof shows; without one they stay unset.
func TestToPprofInterval(t *testing.T) {
	p := hellop(1)
	pp, err := ToPprof(p, JVMNames)
	require.NoError(t, err)
	assert.Zero(t, pp.TimeNanos)
	start := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	p.Interval = &Interval{Start: start, End: start.Add(1500 * time.Millisecond), Counts: CumulativeSinceStart}
	pp, err = ToPprof(p, JVMNames)
	require.NoError(t, err)
	assert.Equal(t, start.UnixNano(), pp.TimeNanos)
	assert.Equal(t, int64(1500*time.Millisecond), pp.DurationNanos)
}
