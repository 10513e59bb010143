package jvmti

/*
#include "jvmtiagent.h"
*/
import "C"

// VirtualThreadMode says how virtual threads are profiled.
type VirtualThreadMode int

const (
	// NoVirtualThreads: the JVM has none (JDK 17 and older).
	NoVirtualThreads VirtualThreadMode = C.JP_VT_NONE
	// VirtualThreadsDetected: the JVM has them but tells no mount or
	// unmount: their frames land on their carriers' trees.
	VirtualThreadsDetected VirtualThreadMode = C.JP_VT_DETECTED
	// VirtualThreadsTracked: each has a tree of its own, followed across
	// carriers through HotSpot's mount/unmount events.
	VirtualThreadsTracked VirtualThreadMode = C.JP_VT_TRACKED
	// VirtualThreadsSampled: the sampling source counts them; each
	// sample is in the tree of the carrier it was taken on.
	VirtualThreadsSampled VirtualThreadMode = C.JP_VT_SAMPLED
)

// VirtualThreads reports the mode and how many virtual threads started.
func VirtualThreads() (VirtualThreadMode, uint64) {
	return VirtualThreadMode(C.jp_vt_mode), uint64(C.jp_vt_started())
}
