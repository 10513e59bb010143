package calibration

import (
	"fmt"
	"math/rand"
)

// A synthetic profiled program: threads making random calls, returns and
// exception exits among methods of random types, with known true costs and
// known per-sequence overheads. The simulator keeps its own stack (the
// truth) and derives keys from it; events also carry what a log-gen line
// would (transition, type, method), so Sequencer can be checked against it.

type simConfig struct {
	seed     int64
	threads  int
	events   int     // per thread
	types    []Type  // callee types to draw from
	maxDepth int     // calls are not made deeper than this
	pZero    float64 // probability that a segment does no work
	noise    func(r *rand.Rand) uint64
	// pUnmatched is the probability, at depth 0, of an exit of a frame
	// entered before profiling started.
	pUnmatched float64
}

type simEvent struct {
	Event
	tr     Transition
	typ    Type   // type of the method entered or exited
	method string // its identity
	work   uint64 // true work of the segment the delta covers (metric 0 and 1)
	noise  uint64 // noise added to metric 1
}

type simFrame struct {
	typ    Type
	method string
}

// simOverheads draws, per key, the instrumentation overhead and the
// environmental overhead of each of two metrics: metric 0 behaves like
// instructions (no noise), metric 1 like time (noisy).
type simOverheads struct {
	inst [2][NKeys]uint64
	env  [2][NKeys]uint64
}

func newSimOverheads(r *rand.Rand) *simOverheads {
	o := &simOverheads{}
	for m := 0; m < 2; m++ {
		for k := 0; k < NKeys; k++ {
			o.inst[m][k] = 20 + uint64(r.Intn(300))
			o.env[m][k] = uint64(r.Intn(8))
		}
	}
	return o
}

var simMethods = func() (m [NTypes][4]string) {
	for t := range m {
		for i := range m[t] {
			m[t][i] = fmt.Sprintf("%c%d", TypeLetters[t], i)
		}
	}
	return m
}()

func simulate(cfg simConfig, o *simOverheads) []simEvent {
	r := rand.New(rand.NewSource(cfg.seed))
	var out []simEvent
	for th := 0; th < cfg.threads; th++ {
		stack := []simFrame{{typ: Other}}
		prevRun, prevTr := Other, En
		for n := 0; n < cfg.events; n++ {
			depth := len(stack) - 1
			var ev simEvent
			switch p := r.Float64(); {
			case depth == 0 && p < cfg.pUnmatched:
				ev.tr = Ex
				if r.Intn(4) == 0 {
					ev.tr = Xx
				}
				ev.typ = cfg.types[r.Intn(len(cfg.types))]
				ev.method = "outer" // never on the stack: its entry was not seen
			case depth < cfg.maxDepth && (depth == 0 || p < 0.5):
				ev.tr = En
				ev.typ = cfg.types[r.Intn(len(cfg.types))]
				// A handful of methods per type, so that identities repeat
				// and recursion happens.
				ev.method = simMethods[ev.typ][r.Intn(4)]
			default:
				ev.tr = Ex
				if r.Intn(4) == 0 {
					ev.tr = Xx
				}
				ev.typ, ev.method = stack[depth].typ, stack[depth].method
			}
			running := stack[depth].typ
			switch {
			case ev.tr == En:
				stack = append(stack, simFrame{ev.typ, ev.method})
			case depth > 0 && stack[depth].method == ev.method:
				stack = stack[:depth]
			}
			ev.Key = MakeKey(prevRun, prevTr, running, ev.tr, stack[len(stack)-1].typ)
			prevRun, prevTr = running, ev.tr
			ev.Thread = th
			if r.Float64() >= cfg.pZero {
				ev.work = 1 + uint64(r.Intn(1000))
			}
			if cfg.noise != nil {
				ev.noise = cfg.noise(r)
			}
			ev.Delta = []uint64{
				ev.work + o.inst[0][ev.Key] + o.env[0][ev.Key],
				ev.work + o.inst[1][ev.Key] + o.env[1][ev.Key] + ev.noise,
			}
			out = append(out, ev)
		}
	}
	return out
}

// truth is the uninstrumented cost of the segment, metric m: its work and
// the environmental glue that runs without profiling too.
func (ev *simEvent) truth(o *simOverheads, m int) uint64 {
	return ev.work + o.env[m][ev.Key]
}

func timeNoise(r *rand.Rand) uint64 {
	switch p := r.Float64(); {
	case p < 0.5:
		return 0
	case p < 0.99:
		return uint64(r.Intn(40))
	default:
		return 5000 + uint64(r.Intn(20000)) // an interrupt
	}
}

func events(evs []simEvent) []Event {
	out := make([]Event, len(evs))
	for i := range evs {
		out[i] = evs[i].Event
	}
	return out
}

// newSimCalibrator returns a calibrator that knows the true Env values.
func newSimCalibrator(o *simOverheads) *Calibrator {
	c := NewCalibrator("PTT_INSTS", "PTT_TIME")
	for m := 0; m < 2; m++ {
		for k := 0; k < NKeys; k++ {
			c.SetEnv(Key(k), m, o.env[m][k])
		}
	}
	return c
}
