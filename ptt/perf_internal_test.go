package ptt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Dispatch counts come from PTT_TIME's switch records: a perf set-up
// with hardware metrics only must not claim them (the header would
// show DS columns of zeros as if no thread was ever dispatched).
func TestPerfCountsDispatchesOnlyWithTime(t *testing.T) {
	assert.False(t, perfCountsDispatches([]Metric{Insts}))
	assert.False(t, perfCountsDispatches([]Metric{Insts, Cycles}))
	assert.True(t, perfCountsDispatches([]Metric{Cycles, Time}))
	assert.True(t, perfCountsDispatches([]Metric{Time}))
}
