package jvmti

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../ptt
#cgo CFLAGS: -I/usr/lib/jvm/java-17-openjdk-amd64/include -I/usr/lib/jvm/java-17-openjdk-amd64/include/linux
#cgo CFLAGS: -I/usr/lib/jvm/default-java/include -I/usr/lib/jvm/default-java/include/linux
#include <stdlib.h>
#include "jp.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"

	_ "github.com/libjprof/libjprof/ptt" // defines the C jp_ptt configuration the hot path reads
)

// Handler receives the VM lifecycle events the agent acts on in Go. Both
// run on a Java thread that is inside a JVMTI callback.
type Handler interface {
	// VMInit runs once the VM is initialised (method events are already
	// on if collection starts at VM start).
	VMInit()
	// VMDeath runs at VM death after method events are off: the last
	// chance to write reports.
	VMDeath()
}

// Setup attaches the agent to the JVM: JVMTI environment, capabilities,
// callbacks, lifecycle events. vm is the JavaVM* given to Agent_OnLoad.
// The PTT (package ptt) must be configured before Setup. With
// startAtInit, method events are turned on at VMInit; with calibrate (and
// at least one metric) the hot path keeps per-sequence minima and counts;
// with loggen it records every event for log-gen (see GenDrainer); with
// jit it records compiled code (see TakeJIT).
// LogGen says what log-gen records hold.
type LogGen int

const (
	NoLogGen  LogGen = 0
	GenOnline LogGen = 1 // values calibrated with the minimum current at the event
	GenRaw    LogGen = 2 // raw deltas, for post-processing calibration
)

func Setup(vm unsafe.Pointer, h Handler, startAtInit, calibrate bool, loggen LogGen, jit bool) error {
	handle := cgo.NewHandle(h)
	var errbuf [256]C.char
	start := C.int(0)
	if startAtInit {
		start = 1
	}
	cal := C.int(0)
	if calibrate {
		cal = 1
	}
	gen := C.int(loggen)
	if C.jp_setup((*C.JavaVM)(vm), C.uintptr_t(handle), start, cal, gen, cbool(jit), &errbuf[0], C.int(len(errbuf))) != 0 {
		handle.Delete()
		return fmt.Errorf("jvmti setup: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

//export jpGoVMInit
func jpGoVMInit(h C.uintptr_t) {
	cgo.Handle(h).Value().(Handler).VMInit()
}

//export jpGoVMDeath
func jpGoVMDeath(h C.uintptr_t) {
	cgo.Handle(h).Value().(Handler).VMDeath()
}

// SetMethodEvents turns MethodEntry/MethodExit on or off for every thread.
// JVMTI requires the caller to be a thread attached to the VM.
func SetMethodEvents(on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	if e := C.jp_set_method_events(v); e != 0 {
		return fmt.Errorf("SetEventNotificationMode(method events, %v): JVMTI error %d", on, int(e))
	}
	return nil
}

// Collecting says whether method events are on.
func Collecting() bool { return C.jp.collecting != 0 }

// ForceGC runs a garbage collection (JVMTI ForceGarbageCollection).
// The caller must be a thread attached to the VM.
func ForceGC() error {
	if e := C.jp_force_gc(); e != 0 {
		return fmt.Errorf("ForceGarbageCollection: JVMTI error %d", int(e))
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// SystemProperty reads a VM system property (java.vm.name, os.arch, ...);
// "" if it is not set. Usable from Agent_OnLoad on.
func SystemProperty(name string) string {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.jp_sysprop(cs)
	if v == nil {
		return ""
	}
	defer C.jp_dealloc(v)
	return C.GoString(v)
}
