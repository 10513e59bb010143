// Package jvmti is libjprof's binding to the JVM Tool Interface and its
// per-event hot path.
//
// The hot path (hotpath.c) is C: MethodEntry and MethodExit callbacks
// update a per-thread call tree reached through a __thread pointer, read
// the PTT metrics first and last (Early and Late Read), and never call Go.
// Go (this package's exported functions) sets the agent up, turns method
// events on and off, and reads the trees back for the reports.
package jvmti
