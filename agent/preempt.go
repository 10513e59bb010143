package main

import (
	"runtime/debug"
	"strings"
)

// asyncPreemptOff says whether Go's asynchronous preemption is off in this
// library: the Makefile links it with asyncpreemptoff=1 as the default
// GODEBUG, and $GODEBUG may still override that. With it on, the Go runtime
// may send SIGURG to Java threads that ran Go code.
func asyncPreemptOff() (off bool, why string) {
	for _, kv := range strings.Split(envGODEBUG(), ",") {
		if strings.TrimSpace(kv) == "asyncpreemptoff=0" {
			return false, "GODEBUG=asyncpreemptoff=0 in the environment"
		}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false, "no build information in the library"
	}
	for _, s := range bi.Settings {
		if s.Key == "-ldflags" && strings.Contains(s.Value, "runtime.godebugDefault=asyncpreemptoff=1") {
			return true, ""
		}
	}
	return false, "library built without -X=runtime.godebugDefault=asyncpreemptoff=1 (build it with make)"
}
