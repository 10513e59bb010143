// Package engine is libjprof's profiling core: per-thread call trees,
// the method registry, a PTT reading at each event (two with LATEREAD,
// JProf's Early/Late Read), calibration minima and per-node sequence
// counts, and the log-gen record buffers.
//
// Event sources (JVMTI method events, injected bytecode calls) feed it
// from C through jp_event (engine.h); the sampling source
// adds whole stacks with jp_pcct_add, signal-safe, to a tree of the same
// layout (sample.c), so the reports read both alike. The
// per-event path is C because a C->Go transition per event would cost
// more than the whole event. This package's Go side sets the engine up
// and reads it back without stopping the threads that write it: thread
// views for the reports (walked in place, never copied whole), the
// minima, and the log-gen buffers. Threads that end are packed into a
// few bytes a node at once, and virtual threads (vthread.c) get records
// of their own that their carriers switch to.
package engine
