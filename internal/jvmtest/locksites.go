package jvmtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CheckLockSites compares a lock profile of LockSites (java/src), as
// collapsed stacks, with what the program measured itself (its line
// "enter_ns=N wait_ns=N park_ns=N"): the waits at each of its three
// sites, with the right leaf, within 10%.
func CheckLockSites(t *testing.T, measured string, collapsed []byte) {
	t.Helper()
	var enter, wait, park float64
	_, err := fmt.Sscanf(strings.TrimSpace(measured), "enter_ns=%g wait_ns=%g park_ns=%g", &enter, &wait, &park)
	require.NoError(t, err, measured)
	var gotEnter, gotWait, gotPark float64
	for _, line := range strings.Split(strings.TrimSpace(string(collapsed)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, "not a collapsed line: %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err)
		switch {
		case strings.HasSuffix(line[:i], ";LockSites.contend();O:lock java.lang.Object"):
			gotEnter += v
		case strings.Contains(line, ";LockSites.await();") && strings.HasSuffix(line[:i], "O:wait java.lang.Object"):
			gotWait += v
		case strings.Contains(line, ";LockSites.contendLock();java.util.concurrent.locks.ReentrantLock.lock();") &&
			strings.HasSuffix(line[:i], "O:park java.util.concurrent.locks.ReentrantLock$NonfairSync"):
			gotPark += v
		}
	}
	assert.InEpsilon(t, park, gotPark, 0.10, "ReentrantLock: the program measured %v ns, LOCK %v", park, gotPark)
	assert.InEpsilon(t, enter, gotEnter, 0.10, "monitor enter: the program measured %v ns, LOCK %v", enter, gotEnter)
	assert.InEpsilon(t, wait, gotWait, 0.10, "Object.wait: the program measured %v ns, LOCK %v", wait, gotWait)
}
