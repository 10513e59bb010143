package trainer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// The accuracy measurement runs end to end on a real JVM and yields sane
// rows. How accurate calibration is, is a benchmark result
// (BENCHMARKS.md), not a test threshold.
func TestAccuracyRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two JVMs")
	}
	jvmtest.Build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rows, err := Accuracy(ctx, AccuracyConfig{Agent: jvmtest.Agent(), ClassPath: jvmtest.Root() + "/build/java"})
	require.NoError(t, err)
	require.Len(t, rows, 6)
	for _, r := range rows {
		assert.Positive(t, r.KnownNS, "size %d", r.Size)
		assert.Positive(t, r.CalNS, "size %d", r.Size)
		assert.GreaterOrEqual(t, r.RawNS, r.CalNS, "calibration only removes")
	}
	// Bigger leaves cost more, measured either way.
	assert.Greater(t, rows[5].KnownNS, rows[0].KnownNS)
	assert.Greater(t, rows[5].CalNS, rows[0].CalNS)
	for _, r := range rows {
		t.Logf("size %3d: known %7.1f ns  raw %7.1f (%+.0f%%)  calibrated %7.1f (%+.0f%%)", r.Size, r.KnownNS, r.RawNS, 100*r.RawErr(), r.CalNS, 100*r.CalErr())
	}
}
