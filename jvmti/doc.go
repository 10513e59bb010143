// Package jvmti is libjprof's binding to the JVM Tool Interface and the
// event sources built on it.
//
// binding.c sets up the JVMTI environment and the lifecycle callbacks,
// which call each source through its table of lifecycle functions
// (jp_source_ops: set-up, VM init or attach, start and stop, detach,
// thread start and end, VM death; the agent's Go source interface
// mirrors it); threadrecord.c gives a Java thread its engine record;
// vmflags.c sets a HotSpot flag through the VM's exported structure
// table (SAMPLE's DebugNonSafepoints); methodevents.c is the method-event source, which hands every
// MethodEntry and MethodExit to the engine (package engine) keyed by
// jmethodID, and rootevents.c its ROOTS variant, where a breakpoint at a
// root method's start turns those events on for that thread alone until
// the root returns (it also matches ROOTS patterns, with the grammar of
// the agent's roots.go, for the counts rtdriver roots= and the state
// line give with either source); methodids.c names methods in the engine's registry;
// jit.c records compiled code; sampling.c is the sampling source
// (SAMPLE=), whose signal handler walks stacks with AsyncGetCallTrace
// (sampling_timers.c makes its signals)
// into the engine's sampled trees, and sampling_threads.c samples the
// JVM's own threads (GC, JIT compilers) beside the Java ones; bci.c
// (with bci_classes.c) is the bytecode-instrumentation source (option
// BCI, the default): a ClassFileLoadHook hands class files to the ASM
// transformer in java/agent, whose injected calls to static natives feed
// the engine with no method event enabled, so the JIT stays on; native
// methods get wrappers through JVMTI's native method prefix; an
// attached agent leaves alone the classes of loops that run for the
// program's life (bci_loops.c), on every thread, virtual ones included
// (allthreads.c lists those, which JVMTI does not), and names the loops
// a retransformation left interpreted and restores the classes a detach
// kept (bci_kept.c); bci_cache.c
// reads classes rewritten in earlier runs back (BCICACHE), from the pack
// files bci_packs.c keeps; alloc.c
// (ALLOC=) and lock.c (LOCK=) record the stacks of JVMTI's sampled
// allocations and monitor waits into sampled trees (eventstacks.c, what
// the two share); dcmd.c runs the JVM's diagnostic commands (class
// histogram) and its heap dumper. Go sets the binding up, switches the
// source, and takes the JIT records.
package jvmti
