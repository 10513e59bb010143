package main

import (
	"testing"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// The key JVM tests run again on every other JDK installed (Temurin 25
// beside OpenJDK 17, say): method events, exceptions, threads, rtdriver
// and ROOTS (both ways) must work the same on each.
func TestKeyTestsOnOtherJDKs(t *testing.T) {
	jvmtest.OnOtherJDKs(t, map[string]func(*testing.T){
		"hellop":          TestHellop,
		"exceptions":      TestExceptionsUnwindThreeFrames,
		"threads":         TestManyThreads,
		"rtdriver":        TestRTDriverStartFlushResetEnd,
		"interval":        TestRTDriverIntervalFlush,
		"late-start":      TestLateStartSeedsOpenFrames,
		"state":           TestStateLineAtStart,
		"roots":           TestRootsMethodEventsExact,
		"bci-roots":       TestBCIRootsDispatchExact,
		"bci-ffm":         TestBCIFFMProbes,
		"thread-end":      TestThreadEndRace,
		"fallback":        TestFallbackThreads,
		"other-user":      TestRTDriverOtherUserRefused,
		"full-disk":       TestFullDiskKeepsLogGen,
		"logpath":         TestUnwritableLogPath,
		"no-caps":         TestBPFWithoutCapabilities,
		"sample-recovery": TestSampleRecoversWalks,
		"sample-blocked":  TestSampleBlockedWalks,
	})
}
