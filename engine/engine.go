package engine

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../ptt
#include <stdlib.h>
#include "engine.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	_ "github.com/libjprof/libjprof/ptt" // defines the C jp_ptt configuration the event path reads
)

// TypeLetters are JProf's method-type letters, indexed by method type:
// interpreted, JIT-compiled, native (lower case static), Compiling, Other.
const TypeLetters = "iIjJnNCO"

// NKeys is the number of calibration keys (sequences of method types and
// transitions); package calibration uses the same encoding.
const NKeys = C.JP_NKEYS

// DefaultMaxMethods bounds the method registry unless an option says
// otherwise: each method costs its name and 16 bytes.
const DefaultMaxMethods = 4 << 20

// NMetrics is the number of metrics the engine collects.
func NMetrics() int { return int(C.jp.nmetrics) }

// Calibrating says whether the event path keeps minima and sequence counts.
func Calibrating() bool { return C.jp.calibrate != 0 }

// SetLateRead chooses two PTT reads per event (true: the Early/Late Read
// split) or one (false). Call it before the source starts.
func SetLateRead(on bool) {
	C.jp.late_read = 0
	if on {
		C.jp.late_read = 1
	}
}

// LateRead says whether events take two PTT reads.
func LateRead() bool { return C.jp.late_read != 0 }

// Collecting says whether the source delivers events.
func Collecting() bool { return atomic.LoadInt32((*int32)(unsafe.Pointer(&C.jp.collecting))) != 0 }

// Dead says whether VM death has begun.
func Dead() bool { return atomic.LoadInt32((*int32)(unsafe.Pointer(&C.jp.dead))) != 0 }

// SourceName names the event source feeding the engine.
func SourceName() string {
	if C.jp.source == nil {
		return "none"
	}
	return C.GoString(C.jp.source.name)
}

// Methods is the number of methods in the registry.
func Methods() int { return int(C.jp_methods_len()) }

// MaxMethods is the registry's limit.
func MaxMethods() int { return int(C.jp.max_methods) }

// MethodsOver counts registrations refused at the limit (or for lack of
// memory): their methods are reported as "<method-limit-reached>".
func MethodsOver() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&C.jp.methods_over))) }

// GenWaits is how many times a thread waited for the log-gen writer.
func GenWaits() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&C.jp.gen_waits))) }

// Minima copies the calibration minima: [metric][key], math.MaxUint64
// where a key was never seen. Nil when not calibrating. They are those of
// the threads that read the process's PTT backend; see MinimaFallback.
func Minima() [][]uint64 { return copyMinima(C.jp.minima) }

// MinimaFallback copies the minima of the threads whose PTT reads fell
// back to the clock (Thread.Fallback) while the backend is bpf or perf:
// a clock read is a syscall, so their events cost hundreds of ns more
// and are calibrated apart. Nil when there is no such set.
func MinimaFallback() [][]uint64 { return copyMinima(C.jp.minima_fb) }

func copyMinima(p *C.uint64_t) [][]uint64 {
	nm := NMetrics()
	if p == nil || nm == 0 {
		return nil
	}
	all := unsafe.Slice((*uint64)(unsafe.Pointer(p)), NKeys*nm)
	out := make([][]uint64, nm)
	for k := range out {
		out[k] = make([]uint64, NKeys)
		for key := 0; key < NKeys; key++ {
			out[k][key] = atomic.LoadUint64(&all[key*nm+k])
		}
	}
	return out
}

// SetTableMinima sets the calibration table's minimum of each key for
// metric k (calibration.Unseen: none), which log-gen's online values
// remove instead of a run's minimum that spans real work
// (calibration.FinalMinimum). Call before events are on.
func SetTableMinima(k int, mins []uint64) error {
	if !setPerKey((*uint64)(unsafe.Pointer(C.jp.tmin)), k, mins) {
		return fmt.Errorf("engine: cannot set the table's minima for metric %d", k)
	}
	return nil
}

// SetEnv sets what calibration keeps of each key's minimum for metric k
// (calibration.Entry.Kept), used by the online-calibrated values of
// log-gen. Call before events are on.
func SetEnv(k int, env []int64) error {
	if !setPerKey((*int64)(unsafe.Pointer(C.jp.env)), k, env) {
		return fmt.Errorf("engine: cannot set environmental overhead for metric %d", k)
	}
	return nil
}

// setPerKey writes metric k's value of every key into a C array laid
// out [key*nmetrics+k]; false when there is none or the sizes differ.
func setPerKey[T int64 | uint64](p *T, k int, vals []T) bool {
	nm := NMetrics()
	if p == nil || k < 0 || k >= nm || len(vals) != NKeys {
		return false
	}
	all := unsafe.Slice(p, NKeys*nm)
	for key, v := range vals {
		all[key*nm+k] = v
	}
	return true
}
