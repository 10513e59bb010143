package jvmti

/*
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// VMThread runs functions on one OS thread attached to the JVM (as a
// daemon named "libjprof control"). JVMTI functions such as
// SetEventNotificationMode and ForceGarbageCollection need a thread the
// JVM knows; goroutines move between OS threads, so this one is locked.
type VMThread struct {
	once sync.Once
	work chan func()
	err  error
}

// Do runs f on the attached thread and returns its error.
func (v *VMThread) Do(f func() error) error {
	v.once.Do(v.start)
	if v.err != nil {
		return v.err
	}
	done := make(chan error, 1)
	v.work <- func() { done <- f() }
	return <-done
}

func (v *VMThread) start() {
	ready := make(chan error)
	v.work = make(chan func())
	go func() {
		runtime.LockOSThread() // for good: the thread stays attached
		name := C.CString("libjprof control")
		rc := C.jp_attach_current(name)
		C.free(unsafe.Pointer(name))
		if rc != 0 {
			ready <- fmt.Errorf("jvmti: AttachCurrentThread failed: JNI error %d", int(rc))
			return
		}
		ready <- nil
		for f := range v.work {
			f()
		}
	}()
	v.err = <-ready
}
