package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jfrPrint is the shape of `jfr print --events jdk.ExecutionSample
// --stack-depth 1` on JDK 17.
const jfrPrint = `jdk.ExecutionSample {
  startTime = 16:45:18.874
  sampledThread = "main" (javaThreadId = 1)
  state = "STATE_RUNNABLE"
  stackTrace = [
    SelfMix.m1(long) line: 12
    ...
  ]
}

jdk.ExecutionSample {
  startTime = 16:45:18.875
  sampledThread = "main" (javaThreadId = 1)
  state = "STATE_RUNNABLE"
  stackTrace = [
    SelfMix.m2(long) line: 13
    ...
  ]
}

jdk.ExecutionSample {
  startTime = 16:45:18.876
  sampledThread = "main" (javaThreadId = 1)
  state = "STATE_RUNNABLE"
  stackTrace = [
    SelfMix.m2(long) line: 13
  ]
}

jdk.ExecutionSample {
  startTime = 16:45:18.877
  sampledThread = "main" (javaThreadId = 1)
  state = "STATE_RUNNABLE"
  stackTrace = [
  ]
}
`

func TestJFRTopFrames(t *testing.T) {
	got, err := jfrTopFrames(strings.NewReader(jfrPrint))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"SelfMix.m1": 1, "SelfMix.m2": 2}, got)
}

func TestAccMethod(t *testing.T) {
	for in, want := range map[string]string{
		"i:SelfMix.m1(J)J":               "SelfMix.m1",
		"I:java/lang/String.hashCode()I": "java.lang.String.hashCode",
		"<GC_active>":                    "<GC_active>",
		"n:java/lang/Object.wait(J)V":    "java.lang.Object.wait",
	} {
		assert.Equal(t, want, accMethod(in), in)
	}
}

func TestAccuracyCompare(t *testing.T) {
	exact := &AccProfile{Config: Config{Key: KeyAccExactBCI}, Self: map[string]float64{}, Raw: map[string]float64{}}
	sampled := &AccProfile{Config: Config{Key: KeyAccSampleJIT}, Self: map[string]float64{}, Samples: 1}
	jfr := &AccProfile{Config: Config{Key: KeyAccJFR}, Self: map[string]float64{}, JFR: true}
	for k := 1; k <= 11; k++ {
		m := "m" + string(rune('a'+k))
		exact.Self[m], exact.Raw[m] = float64(k), float64(k+1)
		sampled.Self[m] = float64(k)
		jfr.Self[m] = float64(k)
	}
	// The sampled profile has its two smallest swapped, JFR two of its
	// top ten.
	sampled.Self["mb"], sampled.Self["mc"] = 2, 1
	jfr.Self["mk"], jfr.Self["ml"] = 11, 10
	for _, pr := range []*AccProfile{exact, sampled, jfr} {
		for m, v := range pr.Self {
			pr.Total += v
			pr.RawTotal += pr.Raw[m]
		}
	}
	p := &SampleAccuracy{Profiles: []*AccProfile{exact, sampled, jfr}}
	assert.Equal(t, []string{"ml", "mk", "mj", "mi", "mh", "mg", "mf", "me", "md", "mc"}, exact.Top())
	d, at, ok := p.MaxDiff(KeyAccExactBCI, KeyAccSampleJIT)
	require.True(t, ok)
	assert.Contains(t, []string{"mb", "mc"}, at) // each off by one unit; mb is only in the sampled top ten
	assert.InDelta(t, 100.0/66, d, 1e-9)
	set, order, ok := p.TopAgree(KeyAccExactBCI, KeyAccJFR)
	assert.True(t, ok)
	assert.True(t, set)
	assert.False(t, order)
	set, _, _ = p.TopAgree(KeyAccExactBCI, KeyAccSampleJIT)
	assert.False(t, set, "mb replaced mc in the sampled top ten")
	assert.Equal(t, 1, exact.rank("ml"))
	assert.Equal(t, 0, exact.rank("nothing"))
	assert.InDelta(t, 100*12.0/77, exact.RawShare("ml"), 1e-9)
}
