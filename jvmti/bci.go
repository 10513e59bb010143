package jvmti

/*
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// BCIConfig selects the bytecode-instrumentation source (option BCI)
// instead of JVMTI method events.
type BCIConfig struct {
	// Include and Exclude are comma-separated package (or class name)
	// prefixes; an empty Include means every class outside java.base.
	Include, Exclude string
	// Roots, when set, instruments only the methods reachable from these
	// root methods ("a.B.m+c.D.*", globs with *).
	Roots string
	// Note receives what log-msg should say: classes or methods left as
	// they were, and why. Called from Java threads; must not block long.
	Note func(string)
}

var (
	bciNoteMu sync.Mutex
	bciNote   func(string)
)

func configureBCI(c *BCIConfig) error {
	ci, ce, cr := C.CString(c.Include), C.CString(c.Exclude), C.CString(c.Roots)
	defer C.free(unsafe.Pointer(cr))
	defer C.free(unsafe.Pointer(ci))
	defer C.free(unsafe.Pointer(ce))
	bciNoteMu.Lock()
	bciNote = c.Note
	bciNoteMu.Unlock()
	var errbuf [256]C.char
	if C.jp_bci_configure(ci, ce, cr, &errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("%s", C.GoString(&errbuf[0]))
	}
	return nil
}

//export jpGoBCINote
func jpGoBCINote(msg *C.char) {
	s := C.GoString(msg)
	bciNoteMu.Lock()
	f := bciNote
	bciNoteMu.Unlock()
	if f != nil {
		f(s)
	}
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

// BCITransformed is how many classes the source has rewritten (each
// retransformation counts again).
func BCITransformed() uint64 { return uint64(C.jp_bci_transformed()) }
