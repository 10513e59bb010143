package jvmti

/*
#include <stdlib.h>
#include "jp.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// GenRecord is one method event recorded for log-gen.
type GenRecord struct {
	Thread *C.jp_thread // identifies the thread; see GenDrainer.ThreadName
	Kind   int          // 0 entry, 1 exit, 2 exit by exception
	Name   string       // type letter + ":" + class.method(sig), as in log-rt
	Key    int          // calibration key
	// Unclean: the event lowered no minimum (its delta spans a dispatch,
	// an interrupt or a restart, or went backwards).
	Unclean bool
	Values  []uint64 // per metric; reused between calls
}

// GenDrainer hands the log-gen records the hot path recorded to a Go
// function, in per-thread order, off the hot path.
type GenDrainer struct {
	names   map[genName]string
	threads map[*C.jp_thread]string
	vals    []uint64
}

type genName struct {
	m   *C.jp_method
	typ uint8
}

// NewGenDrainer makes a drainer; use one per log-gen file.
func NewGenDrainer() *GenDrainer {
	return &GenDrainer{
		names:   map[genName]string{},
		threads: map[*C.jp_thread]string{},
		vals:    make([]uint64, int(C.jp.nmetrics)),
	}
}

// ThreadName is the log-rt root name of a record's thread.
func (d *GenDrainer) ThreadName(t *C.jp_thread) string {
	if n, ok := d.threads[t]; ok {
		return n
	}
	n := RootName(int(t.tid), C.GoString(t.name))
	d.threads[t] = n
	return n
}

// name is the prefixed method name, made once per method and type.
func (d *GenDrainer) name(m *C.jp_method, typ uint8) string {
	k := genName{m, typ & 7}
	if n, ok := d.names[k]; ok {
		return n
	}
	n := string(TypeLetters[k.typ]) + ":?unknown"
	if m != nil {
		n = string(TypeLetters[k.typ]) + ":" + C.GoString(m.name)
	}
	d.names[k] = n
	return n
}

// Drain passes every handed-over buffer's records to emit and frees the
// buffers. With final, it also drains each thread's partly filled buffer:
// only once method events are off, at the end.
func (d *GenDrainer) Drain(final bool, emit func(*GenRecord) error) error {
	var firstErr error
	for b := C.jp_gen_take(); b != nil; {
		next := b.next
		if err := d.drainBuf(b, emit); err != nil && firstErr == nil {
			firstErr = err
		}
		C.jp_gen_done(b)
		b = next
	}
	if final {
		for t := C.jp_threads(); t != nil; t = t.next {
			b := t.gen
			if b == nil {
				continue
			}
			if err := d.drainBuf(b, emit); err != nil && firstErr == nil {
				firstErr = err
			}
			// Keep the buffer (its owner may still hold it) but mark it
			// empty so a second final drain writes nothing twice.
			b.used = 0
		}
	}
	return firstErr
}

func (d *GenDrainer) drainBuf(b *C.jp_genbuf, emit func(*GenRecord) error) error {
	used := uintptr(b.used)
	size := uintptr(C.jp.genrec_size)
	nm := int(C.jp.nmetrics)
	data := unsafe.Add(unsafe.Pointer(b), C.sizeof_jp_genbuf)
	rec := GenRecord{Thread: b.thread, Values: d.vals}
	for off := uintptr(0); off+size <= used; off += size {
		r := (*C.jp_genrec)(unsafe.Add(data, off))
		rec.Kind = int(r.kind)
		rec.Name = d.name(r.m, uint8(r._type))
		rec.Key = int(r.key) &^ C.JP_KEY_UNCLEAN
		rec.Unclean = r.key&C.JP_KEY_UNCLEAN != 0
		if nm > 0 {
			copy(rec.Values, unsafe.Slice((*uint64)(unsafe.Add(unsafe.Pointer(r), C.sizeof_jp_genrec)), nm))
		}
		if err := emit(&rec); err != nil {
			return err
		}
	}
	return nil
}

// GenWaits is how many times a thread waited for the log-gen writer.
func GenWaits() uint64 { return uint64(C.jp.gen_waits) }

// SetEnv sets the environmental overhead per key for metric k, used by
// the online-calibrated log-gen values. Call before events are on.
func SetEnv(k int, env []uint64) error {
	nm := int(C.jp.nmetrics)
	if C.jp.env == nil || k < 0 || k >= nm || len(env) != NKeys {
		return fmt.Errorf("jvmti: cannot set environmental overhead for metric %d", k)
	}
	all := unsafe.Slice((*uint64)(unsafe.Pointer(C.jp.env)), NKeys*nm)
	for key, v := range env {
		all[key*nm+k] = v
	}
	return nil
}
