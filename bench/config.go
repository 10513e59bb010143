package bench

import "path/filepath"

// AgentKind says which agent a configuration loads.
type AgentKind int

const (
	NoAgent  AgentKind = iota
	Empty              // bench/agents/empty.c: callbacks that do nothing
	Naive              // bench/agents/naive.c: a thread-CPU-time syscall per event
	LibJProf           // build/libjprof.so
)

// Config is one way of running a Java program: a row of a table.
type Config struct {
	Key  string // short stable id (tests, breakdown lookups)
	Name string // row label in the report
	// Agent and, for libjprof, its options before START,NORTDRIVER,LOGPATH.
	Agent   AgentKind
	Options string
	JVMArgs []string
	// Backend is the PTT backend libjprof must report in log-msg; a run
	// where it chose another is a skipped configuration, not a number
	// under the wrong label.
	Backend string
	// Idle loads libjprof without START: not collecting.
	Idle bool
	// BCICache gives libjprof BCICACHE in the part's directory (beside
	// the runs' own), which the part fills with a run before it times
	// any (warmBCICache).
	BCICache bool
}

// Keys of the workload configurations the breakdown and targets refer to.
const (
	KeyJIT           = "jit"
	KeyXint          = "xint"
	KeyEmpty         = "empty"
	KeyNaive         = "naive"
	KeyCallTree      = "calltree"
	KeyBPF           = "rtarcf-bpf"
	KeyBPFLate       = "rtarcf-bpf-lateread"
	KeyJavacBCIAll   = "javac-bci-allmethods"
	KeyJavacBCICache = "javac-bci-cache"
	KeyBPFNoCal      = "rtarcf-bpf-nocal"
	KeyPerf          = "rtarcf-perf"
	KeyClock         = "rtarcf-clock"
	KeyGeneric       = "generic"
	KeyJavacNone     = "javac-none"
	KeyJavacEmpty    = "javac-empty"
	KeyJavacTree     = "javac-calltree"
	KeyJavacRTArcf   = "javac-rtarcf"
	KeyJavacGeneric  = "javac-generic"
	KeyBCITree       = "bci-calltree"
	KeyBCIBPF        = "bci-rtarcf-bpf"
	KeySample        = "sample-1ms"
	KeyJavacBCITree  = "javac-bci-calltree"
	KeyJavacBCI      = "javac-bci-rtarcf"
	KeyJavacBCIRoot  = "javac-bci-roots"
	// KeyJavacBCIRootNarrow: a root whose subgraph is 2% of javac's calls
	// (Attr.attribTree's is 43%).
	KeyJavacBCIRootNarrow = "javac-bci-roots-narrow"
	// KeyJavacRoots, KeyJavacRootsNarrow: the same roots with method
	// events, on only for a thread inside a root.
	KeyJavacRoots       = "javac-roots"
	KeyJavacRootsNarrow = "javac-roots-narrow"
	// KeyJavacBCIBase: BCI with java.base instrumented too (the
	// transformer's experimental -Dlibjprof.bci.base=true).
	KeyJavacBCIBase = "javac-bci-base"
)

// rtarcf asks for the time metric explicitly: RTARCF's implied default is
// instructions, which falls back to PTT_TIME (with a warning) without a PMU.
const rtarcf = "RTARCF,METRICS=PTT_TIME"

// methodEvents names the method-events source, which is not the agent's
// default (BCI is): every row says which source it measures.
const methodEvents = "METHODEVENTS,"

// WorkloadConfigs are the rows of the workload table, floor first.
func WorkloadConfigs() []Config {
	return []Config{
		{Key: KeyJIT, Name: "no agent (JIT)"},
		{Key: KeyXint, Name: "no agent, -Xint", JVMArgs: []string{"-Xint"}},
		{Key: KeyEmpty, Name: "empty C agent (floor)", Agent: Empty},
		{Key: KeyNaive, Name: "naive C agent (CLOCK_THREAD_CPUTIME_ID)", Agent: Naive},
		{Key: KeyCallTree, Name: "libjprof CALLTREE", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE"},
		{Key: KeyBPF, Name: "libjprof RTARCF PTT=bpf", Agent: LibJProf, Options: methodEvents + rtarcf + ",PTT=bpf", Backend: "bpf"},
		{Key: KeyBPFLate, Name: "libjprof RTARCF PTT=bpf LATEREAD (two reads per event)", Agent: LibJProf, Options: methodEvents + rtarcf + ",PTT=bpf,LATEREAD", Backend: "bpf"},
		{Key: KeyBPFNoCal, Name: "libjprof RTARCF PTT=bpf NOCALIBRATE", Agent: LibJProf, Options: methodEvents + rtarcf + ",PTT=bpf,NOCALIBRATE", Backend: "bpf"},
		{Key: KeyPerf, Name: "libjprof RTARCF PTT=perf", Agent: LibJProf, Options: methodEvents + rtarcf + ",PTT=perf", Backend: "perf"},
		{Key: KeyClock, Name: "libjprof RTARCF PTT=clock", Agent: LibJProf, Options: methodEvents + rtarcf + ",PTT=clock", Backend: "clock"},
		{Key: KeyGeneric, Name: "libjprof CALLTREE GENERIC", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE,GENERIC"},
		// The other event sources keep the JIT: compare them with "no agent (JIT)".
		// ALLMETHODS: every call of the program is probed, so that the
		// cost divides by events that really ran (by default BCI leaves
		// out the workload's trivial methods, unwind1-3 among them).
		{Key: KeyBCITree, Name: "libjprof BCI CALLTREE", Agent: LibJProf, Options: "BCI,ALLMETHODS,CALLTREE"},
		{Key: KeyBCIBPF, Name: "libjprof BCI RTARCF PTT=bpf", Agent: LibJProf, Options: "BCI,ALLMETHODS," + rtarcf + ",PTT=bpf", Backend: "bpf"},
		{Key: KeySample, Name: "libjprof SAMPLE (1 ms of CPU per thread)", Agent: LibJProf, Options: "SAMPLE"},
	}
}

// JavacConfigs are the rows of the real-program table. The heap is fixed
// and pre-touched in all of them so that peak RSS differences are the
// agent's native memory, not the GC sizing the heap differently.
func JavacConfigs() []Config {
	heap := []string{"-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch"}
	return []Config{
		{Key: KeyJavacNone, Name: "no agent (JIT)", JVMArgs: heap},
		{Key: KeyJavacEmpty, Name: "empty C agent (floor)", Agent: Empty, JVMArgs: heap},
		{Key: KeyJavacTree, Name: "libjprof CALLTREE", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE", JVMArgs: heap},
		{Key: KeyJavacRTArcf, Name: "libjprof RTARCF (best PTT)", Agent: LibJProf, Options: methodEvents + rtarcf, JVMArgs: heap},
		{Key: KeyJavacGeneric, Name: "libjprof CALLTREE GENERIC (binary log-gen)", Agent: LibJProf, Options: "METHODEVENTS,CALLTREE,GENERIC", JVMArgs: heap},
		{Key: KeyJavacBCITree, Name: "libjprof BCI CALLTREE", Agent: LibJProf, Options: "BCI,CALLTREE", JVMArgs: heap},
		{Key: KeyJavacBCI, Name: "libjprof BCI RTARCF (best PTT; the default mode)", Agent: LibJProf, Options: "BCI," + rtarcf, JVMArgs: heap},
		{Key: KeyJavacBCICache, Name: "libjprof BCI RTARCF (the default mode), BCICACHE filled by an earlier run", Agent: LibJProf, Options: "BCI," + rtarcf,
			BCICache: true, JVMArgs: heap},
		{Key: KeyJavacBCIAll, Name: "libjprof BCI RTARCF ALLMETHODS (trivial methods too)", Agent: LibJProf, Options: "BCI,ALLMETHODS," + rtarcf, JVMArgs: heap},
		{Key: KeyJavacBCIBase, Name: "libjprof BCI RTARCF, java.base instrumented too", Agent: LibJProf, Options: "BCI," + rtarcf,
			JVMArgs: append([]string{"-Dlibjprof.bci.base=true"}, heap...)},
		{Key: KeyJavacBCIRoot, Name: "libjprof BCI RTARCF ROOTS=Attr.attribTree", Agent: LibJProf,
			Options: "BCI," + rtarcf + ",ROOTS=com.sun.tools.javac.comp.Attr.attribTree", JVMArgs: heap},
		{Key: KeyJavacBCIRootNarrow, Name: "libjprof BCI RTARCF ROOTS=ClassWriter.writeClass", Agent: LibJProf,
			Options: "BCI," + rtarcf + ",ROOTS=com.sun.tools.javac.jvm.ClassWriter.writeClass", JVMArgs: heap},
		{Key: KeyJavacRoots, Name: "libjprof RTARCF ROOTS=Attr.attribTree (method events inside the root)", Agent: LibJProf,
			Options: methodEvents + rtarcf + ",ROOTS=com.sun.tools.javac.comp.Attr.attribTree", JVMArgs: heap},
		{Key: KeyJavacRootsNarrow, Name: "libjprof RTARCF ROOTS=ClassWriter.writeClass (method events inside the root)", Agent: LibJProf,
			Options: methodEvents + rtarcf + ",ROOTS=com.sun.tools.javac.jvm.ClassWriter.writeClass", JVMArgs: heap},
	}
}

// HasRoot says whether a javac row collects only under a root (javac
// -version, the smoke test's workload, never reaches it).
func HasRoot(key string) bool {
	switch key {
	case KeyJavacBCIRoot, KeyJavacBCIRootNarrow, KeyJavacRoots, KeyJavacRootsNarrow:
		return true
	}
	return false
}

// run turns c into a jvmRun in dir (its LOGPATH) with the given main.
func (c Config) run(o *Options, dir string, main ...string) jvmRun {
	r := jvmRun{JVMArgs: c.JVMArgs, Main: main, Dir: dir}
	switch c.Agent {
	case Empty:
		r.Agent = filepath.Join(o.Agents, "empty.so")
	case Naive:
		r.Agent = filepath.Join(o.Agents, "naive.so")
	case LibJProf:
		r.Agent = filepath.Join(o.Root, "build", "libjprof.so")
		// NORTDRIVER: no control socket, and no port contention between
		// runs; START: collect from VM start like the C agents.
		opts := c.Options
		if c.BCICache {
			opts += ",BCICACHE=" + filepath.Join(filepath.Dir(dir), "bcicache")
		}
		r.Options = opts + ",START,NORTDRIVER,LOGPATH=" + dir
		if c.Idle {
			r.Options = opts + ",NORTDRIVER,LOGPATH=" + dir
		}
	}
	return r
}
