package ptttest

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../../ptt
#include "ptt.h"

static volatile uint64_t jp_cost_sink;

// Registers the calling thread, times n reads in one C loop (so the cgo
// call is paid once), unregisters. *fellback says the thread could not
// use the configured backend.
static double jp_cost_read(long n, int *fellback)
{
	jp_ptt_thread t;
	jp_ptt_reading r = {0};
	uint64_t acc = 0, t0, t1;

	jp_ptt_thread_init(&t);
	*fellback = t.fallback;
	jp_ptt_read(&t, &r); // warm the slot or page
	t0 = jp_ptt_mono_ns();
	for (long i = 0; i < n; i++) {
		jp_ptt_read(&t, &r);
		acc += r.v[0] + r.dispatches;
	}
	t1 = jp_ptt_mono_ns();
	jp_ptt_thread_fini(&t);
	jp_cost_sink = acc;
	return (double)(t1 - t0) / (double)n;
}

static inline uint64_t jp_cost_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}

static double jp_cost_baseline(int which, long n)
{
	uint64_t acc = 0, t0, t1;

	t0 = jp_ptt_mono_ns();
	switch (which) {
	case 0:
		for (long i = 0; i < n; i++)
			acc += jp_ptt_mono_ns();
		break;
	case 1:
		for (long i = 0; i < n; i++)
			acc += jp_cost_tsc();
		break;
	case 2:
		for (long i = 0; i < n; i++)
			acc += jp_ptt_clock_ns();
		break;
	}
	t1 = jp_ptt_mono_ns();
	jp_cost_sink = acc;
	return (double)(t1 - t0) / (double)n;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/libjprof/libjprof/ptt"
)

// Baseline is a bare clock read to compare PTT reads against.
type Baseline int

const (
	// VDSOMonotonic is clock_gettime(CLOCK_MONOTONIC) through the vDSO.
	VDSOMonotonic Baseline = 0
	// RDTSC is the x86 time-stamp counter (0 cost elsewhere: not measured).
	RDTSC Baseline = 1
	// ThreadCPUTime is clock_gettime(CLOCK_THREAD_CPUTIME_ID), a syscall.
	ThreadCPUTime Baseline = 2
)

func (b Baseline) String() string {
	switch b {
	case VDSOMonotonic:
		return "vdso-monotonic"
	case RDTSC:
		return "rdtsc"
	case ThreadCPUTime:
		return "thread-cputime"
	}
	return fmt.Sprintf("baseline(%d)", int(b))
}

// ReadCost measures jp_ptt_read of backend b, which must be the one
// configured by Setup: a thread is registered, n reads are timed in one
// C loop, and the thread unregistered. Returns ns per read.
func ReadCost(b ptt.Backend, n int) (float64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("ptttest: ReadCost: n = %d", n)
	}
	if cur := ptt.Configured(); cur != b {
		return 0, fmt.Errorf("ptttest: ReadCost(%s): backend %s is configured", b, cur)
	}
	var fellback C.int
	ns := float64(C.jp_cost_read(C.long(n), &fellback))
	if fellback != 0 {
		return ns, fmt.Errorf("ptttest: ReadCost(%s): the thread fell back to the clock", b)
	}
	return ns, nil
}

// BaselineCost measures n bare clock reads in one C loop; ns per read.
func BaselineCost(b Baseline, n int) float64 {
	if n <= 0 || (b == RDTSC && runtime.GOARCH != "amd64" && runtime.GOARCH != "386") {
		return 0
	}
	return float64(C.jp_cost_baseline(C.int(b), C.long(n)))
}

// Cost is one line of MeasureReadCosts.
type Cost struct {
	Name      string // backend or baseline name
	NsPerRead float64
	Err       error // backend not available here
}

// MeasureReadCosts measures the baselines and every backend in turn
// (Setup with Force, ReadCost, Close), for benchmarks and `make bench`.
// It replaces any configured backend: call it before the agent's own
// Setup, or not in an agent at all.
func MeasureReadCosts(n int) []Cost {
	var out []Cost
	for _, b := range []Baseline{VDSOMonotonic, RDTSC, ThreadCPUTime} {
		out = append(out, Cost{Name: b.String(), NsPerRead: BaselineCost(b, n)})
	}
	for _, b := range []ptt.Backend{ptt.Clock, ptt.Perf, ptt.BPF} {
		c := Cost{Name: b.String()}
		if _, err := ptt.Setup(ptt.Config{Metrics: []ptt.Metric{ptt.Time}, Force: b}); err != nil {
			c.Err = err
		} else {
			c.NsPerRead, c.Err = ReadCost(b, n)
			c.Err = errors.Join(c.Err, ptt.Close())
		}
		out = append(out, c)
	}
	return out
}
