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
	"unsafe"
)

// main is never run: this package is built as a c-shared library.
func main() {}

// jpGoOnLoad is Agent_OnLoad (onload.c). A non-zero return makes the JVM
// stop at startup, after we have said why on stderr.
//
//export jpGoOnLoad
func jpGoOnLoad(vm unsafe.Pointer, options *C.char) C.int {
	var opts string
	if options != nil {
		opts = C.GoString(options)
	}
	if _, err := newAgent(vm, opts, os.Getenv("JPROFOPTS")); err != nil {
		fmt.Fprintf(os.Stderr, "libjprof: %v\n", err)
		return 1
	}
	return 0
}
