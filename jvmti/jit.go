package jvmti

/*
#include "jvmtiagent.h"
*/
import "C"

import "unsafe"

// JITKind says what a JIT record is.
type JITKind int

const (
	JITLoad    JITKind = C.JP_JIT_LOAD    // a method was compiled
	JITUnload  JITKind = C.JP_JIT_UNLOAD  // compiled code was freed
	JITDynamic JITKind = C.JP_JIT_DYNAMIC // VM-generated code (stubs, interpreter)
)

// JITRecord is one piece of code the JVM made or freed.
type JITRecord struct {
	Kind    JITKind
	TS      uint64 // CLOCK_MONOTONIC ns
	Addr    uint64
	Size    uint64
	Name    string   // class/Name.method(sig) or the stub's name
	Inlined []string // methods inlined into it (loads only)
}

// TakeJIT returns the JIT records made since the last call, oldest first.
func TakeJIT() []JITRecord {
	var out []JITRecord
	for r := C.jp_jit_take(); r != nil; {
		next := r.next
		rec := JITRecord{
			Kind: JITKind(r.kind),
			TS:   uint64(r.ts),
			Addr: uint64(r.addr),
			Size: uint64(r.size),
			Name: C.GoString(r.name),
		}
		if r.ninlined > 0 {
			for _, p := range unsafe.Slice(r.inlined, int(r.ninlined)) {
				rec.Inlined = append(rec.Inlined, C.GoString(p))
			}
		}
		out = append(out, rec)
		C.jp_jit_free(r)
		r = next
	}
	return out
}
