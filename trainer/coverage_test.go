package trainer

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libjprof/libjprof/calibration"
)

func TestTargets(t *testing.T) {
	ts := Targets()
	// The 480 valid keys over i, I, n, N; calls from the root
	// (O, En, b, En, c) and (O, En, b, Ex|Xx, O): 4·(4+2); calls after a
	// return to the root (a, Ex|Xx, O, En, c): 4·2·4; returns to the root
	// (a, Ex|Xx, b, Ex|Xx, O): 4·2·4·2.
	assert.Equal(t, 480+4*(4+2)+4*2*4+4*2*4*2, len(ts))
	for _, k := range ts {
		assert.True(t, calibration.Valid(k), k.String())
	}
	tab := calibration.NewTable(calibration.Provenance{})
	seen, missing := Coverage(tab)
	assert.Zero(t, seen)
	assert.Len(t, missing, len(ts))
	tab.Entries[ts[3]] = calibration.Entry{Min: 1, Count: 1}
	tab.Entries[ts[5]] = calibration.Entry{Min: calibration.Unseen, Env: 4}
	seen, missing = Coverage(tab)
	assert.Equal(t, 1, seen)
	assert.Len(t, missing, len(ts)-1)

	assert.Empty(t, ZeroMinima(tab))
	tab.Entries[ts[7]] = calibration.Entry{Min: 0, Count: 3}
	assert.Equal(t, []calibration.Key{ts[7]}, ZeroMinima(tab))
}
