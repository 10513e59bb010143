package jvmti

/*
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"time"
	"unsafe"
)

// BCIConfig selects the bytecode-instrumentation source (option BCI)
// instead of JVMTI method events.
type BCIConfig struct {
	// Include and Exclude are comma-separated package (or class name)
	// prefixes; an empty Include means every class outside java.base.
	Include, Exclude string
	// Roots, when set, instruments only the methods reachable from these
	// root methods, in the normalized form of agent/roots.go ("a.B.m+c.D.*").
	Roots string
	// AllMethods instruments trivial methods too (see Trivial.java:
	// loop-free methods of at most 35 bytes of bytecode that call
	// nothing but java.base and other trivial methods).
	AllMethods bool
	// FFMProbes makes the probes FFM critical downcalls on JDK 22 and
	// later instead of JNI natives (bci.c).
	FFMProbes bool
	// Natives wraps native methods so that they are seen (JVMTI's native
	// method prefix); classes loaded before collection starts and, with
	// ROOTS, every class keep their natives unseen.
	Natives bool
	// JLM counts the monitors instrumented code takes (jlm.c).
	JLM bool
	// CacheFD is the open directory of classes rewritten in earlier runs
	// (BCICACHE), -1 for none (the zero value: none), checked by the
	// caller; CacheDir its name, for messages; CacheBudget the bytes this
	// run may add to it.
	CacheFD     int
	CacheDir    string
	CacheBudget int64
}

func configureBCI(c *BCIConfig) error {
	ci, ce, cr, cc := C.CString(c.Include), C.CString(c.Exclude), C.CString(c.Roots), C.CString(c.CacheDir)
	defer C.free(unsafe.Pointer(cc))
	defer C.free(unsafe.Pointer(cr))
	defer C.free(unsafe.Pointer(ci))
	defer C.free(unsafe.Pointer(ce))
	var errbuf [256]C.char
	var flags C.int
	if c.AllMethods {
		flags |= C.JP_BCI_ALL_METHODS
	}
	if c.Natives {
		flags |= C.JP_BCI_NATIVES
	}
	if c.JLM {
		flags |= C.JP_BCI_JLM
	}
	if c.FFMProbes {
		flags |= C.JP_BCI_FFM
	}
	cfd := C.int(-1)
	if c.CacheDir != "" {
		cfd = C.int(c.CacheFD)
	}
	if C.jp_bci_configure(ci, ce, cr, cc, cfd, C.int64_t(c.CacheBudget), flags, &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("%s", C.GoString(&errbuf[0]))
	}
	return nil
}

// BCI is the bytecode-instrumentation source. Start instruments (the
// first time: classes loaded before are retransformed, later ones are
// rewritten as they load) and turns collection on; Stop turns it off, and
// the injected calls then return at once. Both need a thread attached to
// the VM (VMThread).
type BCI struct{}

// Name implements the agent's source interface.
func (BCI) Name() string { return "bci" }

// Start implements the agent's source interface.
func (BCI) Start() error {
	if C.jp_bci_set(1) != 0 {
		return ErrDead
	}
	return nil
}

// Stop implements the agent's source interface.
func (BCI) Stop() error {
	C.jp_bci_set(0)
	return nil
}

// Detach stops collecting and retransforms the instrumented classes back
// to their own bytes; Start instruments again.
func (BCI) Detach() error { return detach() }

// WarnObsolete says in log-msg which loops run in a method version a
// retransformation replaced (interpreted until they return), each once,
// and returns those running now ("pkg.Cls.m on thread \"T\"", ", "
// between them). Attached agents only; the caller must be a thread
// attached to the VM, a while after the retransformation.
func (BCI) WarnObsolete() (n int, names string) {
	var buf [1024]C.char
	n = int(C.jp_bci_warn_obsolete(&buf[0], C.int(len(buf))))
	return n, C.GoString(&buf[0])
}

// StartKept names the classes the last start left as they were (a loop
// of each was running), as the program spells them, ", " between them.
// The caller must be a thread attached to the VM.
func (BCI) StartKept() string {
	var buf [512]C.char
	C.jp_bci_start_kept_names(&buf[0], C.int(len(buf)))
	return C.GoString(&buf[0])
}

// RestoreKept gives the classes the last detach left instrumented (a loop
// of theirs was running) their own bytes back once their loops have
// returned, and says how many are still kept. The caller must be a
// thread attached to the VM.
func (BCI) RestoreKept() int { return int(C.jp_bci_restore_kept()) }

// SetRoots changes the roots of selective instrumentation ("" or "all":
// every method) and re-instruments the loaded classes. The caller must be
// a thread attached to the VM.
func (BCI) SetRoots(roots string) error {
	cs := C.CString(roots)
	defer C.free(unsafe.Pointer(cs))
	var errbuf [256]C.char
	if C.jp_bci_roots(cs, &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("%s", C.GoString(&errbuf[0]))
	}
	return nil
}

// BCIStats is what the source did to classes.
type BCIStats struct {
	Rewritten uint64        // class files rewritten (each retransformation counts again)
	Failed    uint64        // classes the transformer or the VM refused: left as they were
	Hooks     uint64        // class file hooks that ran the transformer
	HookTime  time.Duration // their total time, on the loading threads
	// KeptRunning counts the classes the last start's retransformation
	// left as they were because one of their methods was running a loop:
	// HotSpot never compiles a method version a redefinition replaced, so
	// that loop would have run interpreted until it returned.
	KeptRunning uint64
	// KeptAtDetach counts the classes the last detach left instrumented
	// for the same reason: restored, the loop would run interpreted;
	// instrumented, it runs compiled, its probes returning at once.
	KeptAtDetach uint64
	// Retransforms counts RetransformClasses calls (each walks every
	// class and compiled method of the VM at a safepoint), and
	// RetransformTime their total time, hooks included.
	Retransforms    uint64
	RetransformTime time.Duration
	// Selective instrumentation: Expands counts the first runs of
	// methods inside a root whose calls were followed, and ExpandTime
	// their total time (the retransformations they made included).
	Expands    uint64
	ExpandTime time.Duration
	// Roots counts the root methods instrumented since the roots were
	// set: 0 while no loaded class has a method ROOTS matches.
	Roots uint64
	// IdleCalls counts probe calls while not collecting, in steps of
	// 1024 per thread: instrumented code that still runs after a stop.
	// After a detach it grows only with the classes left instrumented.
	IdleCalls uint64
}

// Stats reads the source's counters.
func (BCI) Stats() BCIStats {
	var v [12]C.uint64_t
	C.jp_bci_stats(&v[0])
	return BCIStats{Rewritten: uint64(v[0]), Failed: uint64(v[1]), Hooks: uint64(v[2]), HookTime: time.Duration(v[3]),
		Retransforms: uint64(v[4]), RetransformTime: time.Duration(v[5]),
		Expands: uint64(v[6]), ExpandTime: time.Duration(v[7]), Roots: uint64(v[8]), IdleCalls: uint64(v[9]),
		KeptRunning: uint64(v[10]), KeptAtDetach: uint64(v[11])}
}

// RootMethods is how many methods are roots now (see BCIStats.Roots).
func (b BCI) RootMethods() int { return int(b.Stats().Roots) }

// Instrumenting says whether classes are being rewritten (collection
// started once): before, no root is instrumented yet.
func (BCI) Instrumenting() bool { return C.jp_bci_instrumenting() != 0 }

// BCISizes is how big the transformer's maps are: they hold the classes
// of the loaders alive (and of the JDK), and at most MAXMETHODS method
// names.
type BCISizes struct {
	MethodNames   uint64 // method names registered with the engine
	Classes       uint64 // classes known to selective instrumentation (ROOTS)
	Declared      uint64 // method names+descriptors those classes declare
	Reached       uint64 // methods calls inside a root reached
	ClassesForgot uint64 // classes forgotten as their loaders were collected
	// TrivialLeft counts the trivial methods left uninstrumented and
	// NativesWrapped the native methods wrapped, at their classes' first
	// loads.
	TrivialLeft, NativesWrapped uint64
	// CacheHits counts the classes read from BCICACHE, CacheMisses those
	// it did not hold, CacheStored those added to it.
	CacheHits, CacheMisses, CacheStored uint64
}

// NativesRefused is the JVMTI error that kept native methods from being
// wrapped (the VM refused a native method prefix), -1 when the agent was
// attached to a running JVM (natives are then left alone), 0 if none.
func (BCI) NativesRefused() int { return int(C.jp_bci_natives_refused()) }

// Probes says what the injected probes call: FFM critical downcalls or
// JNI natives, and why. Known once the VM is initialized.
func (BCI) Probes() string { return C.GoString(C.jp_bci_probes()) }

// AssertsOff says whether every assertion is off by the command line, as
// VM init found it: then assert statements' code does not keep a method
// from being trivial.
func (BCI) AssertsOff() bool { return C.jp_bci_no_asserts() != 0 }

// Sizes reads them; false if the transformer cannot be asked. The caller
// must be a thread attached to the VM.
func (BCI) Sizes() (BCISizes, bool) {
	var v [C.JP_BCI_NSIZES]C.uint64_t
	if C.jp_bci_sizes(&v[0]) != 0 {
		return BCISizes{}, false
	}
	return BCISizes{MethodNames: uint64(v[0]), Classes: uint64(v[1]), Declared: uint64(v[2]), Reached: uint64(v[3]),
		ClassesForgot: uint64(v[4]), TrivialLeft: uint64(v[5]), NativesWrapped: uint64(v[6]),
		CacheHits: uint64(v[7]), CacheMisses: uint64(v[8]), CacheStored: uint64(v[9])}, true
}

// JLMRow is one row of the exact lock monitor (JLM): a site where
// monitors are taken and the class of the monitors' objects.
type JLMRow struct {
	Site, Class           string // Class as a JVM signature (Ljava/lang/Object;)
	Gets, Recursive, Slow uint64
	Wait, Hold            time.Duration
	ObjectWaits           uint64
	ObjectWait            time.Duration
}

//export jpGoJLMRow
func jpGoJLMRow(h C.uintptr_t, site, cls *C.char, v *C.uint64_t) {
	rows := cgo.Handle(h).Value().(*[]JLMRow)
	x := unsafe.Slice(v, 7)
	*rows = append(*rows, JLMRow{Site: C.GoString(site), Class: C.GoString(cls),
		Gets: uint64(x[0]), Recursive: uint64(x[1]), Slow: uint64(x[2]), Wait: time.Duration(x[3]),
		Hold: time.Duration(x[4]), ObjectWaits: uint64(x[5]), ObjectWait: time.Duration(x[6])})
}

// ReadJLM reads the exact lock monitor's rows, in the order their sites
// were first instrumented, and the takes it could not count.
func ReadJLM() (rows []JLMRow, lost uint64) {
	h := cgo.NewHandle(&rows)
	defer h.Delete()
	C.jp_jlm_read_go(C.uintptr_t(h))
	return rows, uint64(C.jp_jlm_overflow())
}

// ResetJLM zeroes the exact lock monitor's counts.
func ResetJLM() { C.jp_jlm_reset() }
