package main

/*
#cgo CFLAGS: -I/usr/lib/jvm/java-17-openjdk-amd64/include -I/usr/lib/jvm/java-17-openjdk-amd64/include/linux
#cgo CFLAGS: -I/usr/lib/jvm/default-java/include -I/usr/lib/jvm/default-java/include/linux
#include <jni.h>
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/libjprof/libjprof/jvmti"
)

// main is never run: this package is built as a c-shared library.
func main() {}

// loaded is the agent of this process, once one has loaded: a JVM calls
// Agent_OnAttach again when the library is loaded again.
var (
	loadMu sync.Mutex
	loaded *agent
)

// jpGoOnLoad is Agent_OnLoad (onload.c). A non-zero return makes the JVM
// stop at startup, after we have said why on stderr.
//
//export jpGoOnLoad
func jpGoOnLoad(vm unsafe.Pointer, options *C.char) C.int {
	defer jvmti.EnterFromJVM()()
	loadMu.Lock()
	defer loadMu.Unlock()
	opts, env := goString(options), os.Getenv("JPROFOPTS")
	said.beginLoad(quietAsked(opts, env), true, false)
	defer said.endLoad()
	a, err := newAgent(vm, opts, env, false)
	if err != nil {
		// QUIET or not: the JVM stops, and stderr is the only place
		// where the user sees why.
		fmt.Fprintf(os.Stderr, "libjprof: %v\n", err)
		return 1
	}
	loaded = a
	return 0
}

// jpGoOnAttach is Agent_OnAttach: libjprof loaded into a running JVM. A
// non-zero return is reported to the command that loaded it; the JVM
// runs on either way.
//
//export jpGoOnAttach
func jpGoOnAttach(vm unsafe.Pointer, options *C.char) C.int {
	defer jvmti.EnterFromJVM()()
	loadMu.Lock()
	defer loadMu.Unlock()
	opts := goString(options)
	said.beginLoad(quietAsked(opts), loaded == nil, true)
	defer said.endLoad()
	if loaded != nil {
		if err := loaded.attachAgain(opts); err != nil {
			sayAttachError(err)
			return 1
		}
		return 0
	}
	// JPROFOPTS is the environment the JVM started with, not the
	// attaching user's: only the options given now count.
	a, err := newAgent(vm, opts, "", true)
	if err != nil {
		sayAttachError(err)
		return 1
	}
	loaded = a
	return 0
}

func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}
