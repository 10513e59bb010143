package jvmti

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../engine -I${SRCDIR}/../ptt
#cgo CFLAGS: -I/usr/lib/jvm/java-17-openjdk-amd64/include -I/usr/lib/jvm/java-17-openjdk-amd64/include/linux
#cgo CFLAGS: -I/usr/lib/jvm/default-java/include -I/usr/lib/jvm/default-java/include/linux
#include <stdlib.h>
#include "jvmtiagent.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"

	_ "github.com/libjprof/libjprof/engine" // the C engine the sources feed
)

// Handler receives the VM lifecycle events the agent acts on in Go. Both
// run on a Java thread that is inside a JVMTI callback.
type Handler interface {
	// VMInit runs once the VM is initialised.
	VMInit()
	// VMDeath runs at VM death after the source is off for good: the
	// last chance to write reports.
	VMDeath()
}

// LogGen says what log-gen records hold.
type LogGen int

const (
	NoLogGen  LogGen = 0
	GenOnline LogGen = 1 // values calibrated with the minimum current at the event
	GenRaw    LogGen = 2 // raw deltas, for post-processing calibration
)

// Config is what Setup needs besides the VM.
type Config struct {
	Start      bool // method events from Agent_OnLoad on (START)
	Calibrate  bool // keep per-sequence minima and counts (with metrics)
	LogGen     LogGen
	JIT        bool // record compiled code (see TakeJIT)
	MaxMethods int  // method registry limit
	// VThreads follows virtual threads across carriers (JDK 21+): each
	// gets a tree of its own. Off, they are only detected and said.
	VThreads bool
	// EagerThreads makes every thread's record at its start, not at its
	// first event (for log-jtnm).
	EagerThreads bool
	// Sample, when set, makes the sampling source feed the engine
	// instead of method events (Start then starts sampling).
	Sample *SampleConfig
	// Alloc, when set, makes the allocation source feed the engine.
	Alloc *AllocConfig
	// Lock, when set, makes the lock source feed the engine.
	Lock *LockConfig
	// BCI, when set, makes bytecode instrumentation the event source
	// (bci.go) instead of JVMTI method events.
	BCI *BCIConfig
	// Live: the agent is loaded into a running VM (Agent_OnAttach).
	// Method events are refused then; LiveInit does VM init's work.
	Live bool
	// Roots, with method events, turns them on only for a thread inside
	// one of these root methods, in the normalized form of agent/roots.go
	// ("a.B.m+c.D.*").
	Roots string
	// Note receives what log-msg should say from the sources: classes or
	// methods left as they were, and why (a warning), or, prefixed
	// "info: ", what was done, or, prefixed "say: ", a warning the user
	// is also told (stderr). Called from Java threads; must not block
	// long.
	Note func(string)
}

var (
	noteMu sync.Mutex
	note   func(string)
)

// EnterFromJVM is called first by each function the JVM's threads call
// into Go through, and the function it returns last: it wires the
// goroutine to the thread meanwhile (LockOSThread). While a thread that
// C started runs Go code so wired, the Go runtime starts any new thread
// it needs from its template thread, named libjprof-go as the runtime's
// others are (agent/onload.c), instead of cloning the JVM's thread,
// whose name ("java", "Attach Listener") the clone would take, so that
// top -H and perf showed the agent's threads as the JVM's.
func EnterFromJVM() (leave func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

//export jpGoNote
func jpGoNote(msg *C.char) {
	defer EnterFromJVM()()
	s := C.GoString(msg)
	noteMu.Lock()
	f := note
	noteMu.Unlock()
	if f != nil {
		f(s)
	}
}

// Setup attaches the agent to the JVM: JVMTI environment, capabilities,
// callbacks, lifecycle events, and the engine with the method-event
// source. vm is the JavaVM* given to Agent_OnLoad. The PTT (package ptt)
// must be configured before Setup.
func Setup(vm unsafe.Pointer, h Handler, c Config) error {
	handle := cgo.NewHandle(h)
	var errbuf [256]C.char
	if c.MaxMethods <= 0 || c.MaxMethods > 1<<31 {
		return fmt.Errorf("jvmti setup: method limit %d out of range", c.MaxMethods)
	}
	C.jp_vt_track = cbool(c.VThreads)
	noteMu.Lock()
	note = c.Note
	noteMu.Unlock()
	if c.Sample != nil && c.BCI != nil {
		handle.Delete()
		return fmt.Errorf("jvmti setup: one event source at a time: sampling or bytecode instrumentation")
	}
	if c.Sample != nil {
		if err := configureSampling(c.Sample); err != nil {
			handle.Delete()
			return err
		}
	}
	if c.Alloc != nil {
		if err := configureAlloc(c.Alloc); err != nil {
			handle.Delete()
			return err
		}
	}
	if c.Lock != nil {
		if err := configureLock(c.Lock); err != nil {
			handle.Delete()
			return err
		}
	}
	if c.Roots != "" && c.BCI == nil && c.Sample == nil {
		cs := C.CString(c.Roots)
		rc := C.jp_roots_configure(cs, &errbuf[0], C.int(len(errbuf)))
		C.free(unsafe.Pointer(cs))
		if rc != 0 {
			handle.Delete()
			return fmt.Errorf("jvmti setup: ROOTS: %s", C.GoString(&errbuf[0]))
		}
	}
	if c.BCI != nil {
		if err := configureBCI(c.BCI); err != nil {
			handle.Delete()
			return fmt.Errorf("jvmti setup: %w", err)
		}
	}
	if C.jp_vm_setup((*C.JavaVM)(vm), C.uintptr_t(handle), cbool(c.Live), cbool(c.Start), cbool(c.Calibrate), C.int(c.LogGen),
		cbool(c.JIT), C.uint32_t(c.MaxMethods), cbool(c.EagerThreads), &errbuf[0], C.int(len(errbuf))) != 0 {
		handle.Delete()
		return fmt.Errorf("jvmti setup: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

// LiveInit does for an agent loaded into a running VM what VM init does
// for one loaded at start, ending with the Handler's VMInit. It must run
// on the attaching thread (in Agent_OnAttach).
func LiveInit() error {
	var errbuf [256]C.char
	if C.jp_vm_live_init(&errbuf[0], C.int(len(errbuf))) != 0 {
		return fmt.Errorf("jvmti: %s", C.GoString(&errbuf[0]))
	}
	return nil
}

// detach turns the source off and takes out of the program what it put
// in (BCI: the classes get their own bytes back), so that the program
// runs as before; a later Start puts it back. The caller must be a
// thread attached to the VM. Each source's Detach is this: the C table
// (jp_source_ops) knows what its source does.
func detach() error {
	var errbuf [256]C.char
	if C.jp_vm_detach(&errbuf[0], C.int(len(errbuf))) != 0 {
		return errors.New(C.GoString(&errbuf[0]))
	}
	return nil
}

// Preparer is a Handler with work of its own to finish at VM init before
// the event source sets up its Java side, where the first events come.
type Preparer interface {
	VMReady()
}

//export jpGoVMReady
func jpGoVMReady(h C.uintptr_t) {
	defer EnterFromJVM()()
	if p, ok := cgo.Handle(h).Value().(Preparer); ok {
		p.VMReady()
	}
}

//export jpGoVMInit
func jpGoVMInit(h C.uintptr_t) {
	defer EnterFromJVM()()
	cgo.Handle(h).Value().(Handler).VMInit()
}

//export jpGoVMDeath
func jpGoVMDeath(h C.uintptr_t) {
	defer EnterFromJVM()()
	cgo.Handle(h).Value().(Handler).VMDeath()
}

// ErrDead is returned when a source is started after VM death began.
var ErrDead = errors.New("the VM is shutting down")

// MethodEvents is the JVMTI method-event source: exact, interpreter-only
// while on. Start and Stop need a thread attached to the VM (VMThread).
type MethodEvents struct{}

// Name implements the agent's source interface.
func (MethodEvents) Name() string { return "jvmti-method-events" }

// Start turns MethodEntry/MethodExit on for every thread, starting a new
// collection epoch.
func (MethodEvents) Start() error { return setMethodEvents(true) }

// Stop turns them off.
func (MethodEvents) Stop() error { return setMethodEvents(false) }

// Detach is Stop: method events leave nothing in the program.
func (MethodEvents) Detach() error { return detach() }

func setMethodEvents(on bool) error {
	switch e := C.jp_methodevents_set(cbool(on)); {
	case e == -1:
		return ErrDead
	case e != 0:
		return fmt.Errorf("SetEventNotificationMode(method events, %v): JVMTI error %d", on, int(e))
	}
	return nil
}

// SetRoots changes the root methods of a source set up with Config.Roots:
// the old ones stop being roots (a thread inside one goes on to its
// exit). The caller must be a thread attached to the VM.
func (MethodEvents) SetRoots(roots string) error {
	if C.jp_roots_on == 0 {
		return errors.New("this JVM was started without ROOTS: method events are on for every thread")
	}
	cs := C.CString(roots)
	defer C.free(unsafe.Pointer(cs))
	var errbuf [256]C.char
	if C.jp_roots_set(cs, &errbuf[0], C.int(len(errbuf))) != 0 {
		return errors.New(C.GoString(&errbuf[0]))
	}
	return nil
}

// RootMethods is how many methods are roots now (with Config.Roots).
func (MethodEvents) RootMethods() int { return int(C.jp_roots_count()) }

// Refused counts root entries not collected because the JVM refused to
// turn method events on for the thread.
func (MethodEvents) Refused() uint64 { return uint64(C.jp_roots_refused()) }

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

// RootsMatchLoaded is how many methods with bytecode of the loaded
// classes a normalized ROOTS value matches (rootevents.c's matcher), or
// -1 for a value that is not one. The caller must be a thread attached
// to the VM.
func RootsMatchLoaded(roots string) int {
	cs := C.CString(roots)
	defer C.free(unsafe.Pointer(cs))
	return int(C.jp_roots_match_loaded(cs))
}

// ClassFindable says whether a class of this dotted binary name is
// loaded or its class file is found by the system class loader: 1 yes,
// 0 no, -1 cannot tell. It loads nothing. The caller must be a thread
// attached to the VM.
func ClassFindable(name string) int {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return int(C.jp_roots_class_findable(cs))
}

// ClassFile is the class file the system class loader finds for a class
// of this dotted binary name (nothing is loaded), or nil. The caller must
// be a thread attached to the VM.
func ClassFile(name string) []byte {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var n C.int
	p := C.jp_roots_class_file(cs, &n)
	if p == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), n)
}

// DiagnosticCommand runs one of the JVM's diagnostic commands, as jcmd
// names them ("GC.class_histogram", "GC.heap_dump -all=false /path"),
// and returns its output. The caller must be a thread attached to the
// VM.
func DiagnosticCommand(cmd string) (string, error) {
	cs := C.CString(cmd)
	defer C.free(unsafe.Pointer(cs))
	var why *C.char
	out := C.jp_dcmd_current(cs, &why)
	if out == nil {
		return "", fmt.Errorf("%s: %s", cmd, C.GoString(why))
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// HeapDump writes an HPROF dump of the heap to path (which must end in
// .hprof), of the live objects only (after a full GC) when live. The
// caller must be a thread attached to the VM.
func HeapDump(path string, live bool) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var why *C.char
	if C.jp_heap_dump(cs, cbool(live), &why) != 0 {
		return fmt.Errorf("heap dump to %s: %s", path, C.GoString(why))
	}
	return nil
}
