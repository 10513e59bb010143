// Package jvmti is libjprof's binding to the JVM Tool Interface and the
// event sources built on it.
//
// binding.c sets up the JVMTI environment and the lifecycle callbacks;
// methodevents.c is the method-event source, which hands every
// MethodEntry and MethodExit to the engine (package engine) keyed by
// jmethodID; methodids.c names those methods in the engine's registry;
// jit.c records compiled code; sampling.c is the sampling source
// (SAMPLE=), whose signal handler walks stacks with AsyncGetCallTrace
// into the engine's sampled trees; bci.c (with bci_classes.c) is the bytecode-instrumentation
// source (option BCI): a ClassFileLoadHook hands class files to the ASM
// transformer in java/agent, whose injected calls to static natives feed
// the engine with no method event enabled, so the JIT stays on. Go sets
// the binding up, switches the source, and takes the JIT records.
package jvmti
