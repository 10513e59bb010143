// Package pccttest drives the engine's sampled tree (jp_pcct_*) from Go
// tests with a thread record of its own: what the sampling source's
// signal handler does, without a JVM or a signal. Only tests import it.
package pccttest

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../.. -I${SRCDIR}/../../../ptt
#include <stdlib.h>
#include "engine.h"

static uint32_t jp_test_resolve(uintptr_t key) { return (uint32_t)key; }
static const jp_source jp_test_source = { "pccttest", jp_test_resolve };

jp_thread *jp_test_t;
jp_pcct jp_test_p;
uint32_t jp_test_limit_h;

// jp_test_setup makes the engine (no PTT, one metric column for the
// weights), one thread record and its sampled tree.
static int jp_test_setup(uint32_t max_nodes, uint32_t depth)
{
	char err[128];
	if (jp.source == NULL) {
		if (jp_engine_init(&jp_test_source, 0, 0, 1u << 20, err, sizeof err) != 0)
			return -1;
		jp.nmetrics = 1;
		jp.node_stride = sizeof(jp_node) + sizeof(uint64_t);
		jp_test_limit_h = jp_method_register("<limit>", JP_T_OTHER);
	}
	jp_test_t = jp_thread_attach("pccttest");
	if (jp_test_t == NULL)
		return -1;
	return jp_pcct_init(jp_test_t, &jp_test_p, max_nodes, depth, jp_test_limit_h);
}

static void jp_test_done(void)
{
	jp_pcct_free(&jp_test_p);
	jp_thread_detach();
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	_ "github.com/libjprof/libjprof/engine" // the C engine
)

// Setup makes one thread's sampled tree of maxNodes contexts and depth
// frames. Call Done before the next Setup; one tree at a time, and the
// goroutine must stay on its OS thread (the record is the thread's).
func Setup(maxNodes, depth int) error {
	if C.jp_test_setup(C.uint32_t(maxNodes), C.uint32_t(depth)) != 0 {
		return errors.New("pccttest: setup failed")
	}
	return nil
}

// Done ends the thread record.
func Done() { C.jp_test_done() }

// Method registers a method and returns its handle.
func Method(name string) uint32 {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return uint32(C.jp_method_register(cs, 0))
}

// Limit is the handle of the limit node's method.
func Limit() uint32 { return uint32(C.jp_test_limit_h) }

// Add records a sample: leaf[0] on top. It reports whether the sample
// went to the limit node.
func Add(leaf []uint32, weight uint64) bool {
	if len(leaf) == 0 {
		panic("pccttest: empty sample")
	}
	return C.jp_pcct_add(C.jp_test_t, &C.jp_test_p, (*C.uint32_t)(unsafe.Pointer(&leaf[0])), C.uint32_t(len(leaf)), C.uint64_t(weight)) != 0
}

// Node is one context of the tree.
type Node struct {
	Parent int
	Method uint32
	Calls  uint64
	Base   uint64
}

// Nodes reads the tree, root first.
func Nodes() []Node {
	t := C.jp_test_t
	n := int(t.nodes.n)
	out := make([]Node, n)
	for i := range out {
		p := (*C.jp_node)(C.jp_arena_at(&t.nodes, C.uint32_t(i)))
		base := *(*uint64)(unsafe.Add(unsafe.Pointer(p), C.sizeof_jp_node))
		out[i] = Node{Parent: int(p.parent), Method: uint32(p.method), Calls: uint64(p.calls), Base: base}
	}
	return out
}

// Counters are the tree's and the record's counts.
func Counters() (samples, limited, events uint64) {
	return uint64(C.jp_test_p.samples), uint64(C.jp_test_p.limited), uint64(C.jp_test_t.events)
}

func (n Node) String() string {
	return fmt.Sprintf("%d<-%d calls %d base %d", n.Method, n.Parent, n.Calls, n.Base)
}
