package trainer

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/calibration"
)

// EnvPattern is one measurement of Trainer --env: the cost, without the
// agent, of a call from a method of type Caller to a leaf of type Callee
// that leaves by Exit (Ex: returns, Xx: throws and is caught in the
// caller), in ns per call.
type EnvPattern struct {
	Caller, Callee calibration.Type
	Exit           calibration.Transition
	NS             float64
}

// ParseEnv reads the output of Trainer --env: lines
// "env CALLER CALLEE EXIT NS" with JProf type letters; lines starting with
// '#' and blank lines are comments.
func ParseEnv(r io.Reader) ([]EnvPattern, error) {
	var out []EnvPattern
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		f := strings.Fields(s)
		if f[0] != "env" {
			continue // the trainer's other output
		}
		p, err := parseEnvLine(f)
		if err != nil {
			return nil, fmt.Errorf("trainer --env output line %d: %q: %w", line, s, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trainer --env output: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("trainer --env output has no env lines")
	}
	return out, nil
}

func parseEnvLine(f []string) (EnvPattern, error) {
	var p EnvPattern
	if len(f) != 5 {
		return p, fmt.Errorf("want env CALLER CALLEE EXIT NS")
	}
	var ok bool
	if len(f[1]) != 1 || len(f[2]) != 1 {
		return p, fmt.Errorf("caller and callee are type letters")
	}
	if p.Caller, ok = calibration.TypeOfLetter(f[1][0]); !ok {
		return p, fmt.Errorf("caller %q: not a type letter", f[1])
	}
	if p.Callee, ok = calibration.TypeOfLetter(f[2][0]); !ok {
		return p, fmt.Errorf("callee %q: not a type letter", f[2])
	}
	tr, err := calibration.ParseTransition(f[3])
	if err != nil || !tr.IsExit() {
		return p, fmt.Errorf("exit %q: want Ex or Xx", f[3])
	}
	p.Exit = tr
	ns, err := strconv.ParseFloat(f[4], 64)
	if err != nil || math.IsNaN(ns) || math.IsInf(ns, 0) {
		return p, fmt.Errorf("ns %q: not a number", f[4])
	}
	p.NS = ns
	return p, nil
}

// MedianEnv is each pattern's median over runs (the lower middle of an
// even count), in the order of the first run; a pattern some run lacks
// takes the median of the runs that have it.
func MedianEnv(runs [][]EnvPattern) []EnvPattern {
	type key struct {
		caller, callee calibration.Type
		exit           calibration.Transition
	}
	all := map[key][]float64{}
	var order []key
	for _, r := range runs {
		for _, p := range r {
			k := key{p.Caller, p.Callee, p.Exit}
			if _, ok := all[k]; !ok {
				order = append(order, k)
			}
			all[k] = append(all[k], p.NS)
		}
	}
	out := make([]EnvPattern, 0, len(order))
	for _, k := range order {
		v := all[k]
		sort.Float64s(v)
		out = append(out, EnvPattern{Caller: k.caller, Callee: k.callee, Exit: k.exit, NS: v[(len(v)-1)/2]})
	}
	return out
}

// ApplyEnv sets the table's Env values from measured call patterns, and
// returns how many keys it set. The measurement is of whole calls, while
// Env is per key (per delta), so a convention places each call's cost on
// exactly one key of the events the call produces:
//
//   - a call from y to x costs E(y→x, Ex) without the agent; it is put on
//     the entry keys (a, t1, y, En, x), for every a and t1: the delta that
//     ends with the call is the caller's, which executes the call, and
//     every call has exactly one such event whether or not x is a leaf;
//   - an exit of x by exception costs E(y→x, Xx) − E(y→x, Ex) more (throw,
//     unwind, catch); it is put on the exception-exit keys
//     (a, t1, x, Xx, y), the delta of the method that threw.
//
// So the calibrated total of a call keeps its environmental cost once.
// Negative differences (noise) count as zero; values are rounded to whole
// units. Keys no pattern covers keep their Env. Only the time metric is
// measured: the caller should apply this to PTT_TIME tables only.
func ApplyEnv(t *calibration.Table, patterns []EnvPattern) int {
	type pair struct{ y, x calibration.Type }
	normal := map[pair]float64{}
	for _, p := range patterns {
		if p.Exit == calibration.Ex {
			normal[pair{p.Caller, p.Callee}] = p.NS
		}
	}
	set := map[calibration.Key]bool{}
	put := func(k calibration.Key, ns float64) {
		if !calibration.Valid(k) {
			return
		}
		e := t.Lookup(k)
		e.Env = uint64(math.Round(math.Max(0, ns)))
		t.Entries[k] = e
		set[k] = true
	}
	for _, p := range patterns {
		for a := calibration.Type(0); a < calibration.NTypes; a++ {
			for t1 := calibration.Transition(0); t1 < calibration.NTransitions; t1++ {
				if p.Exit == calibration.Ex {
					put(calibration.MakeKey(a, t1, p.Caller, calibration.En, p.Callee), p.NS)
					continue
				}
				extra := p.NS
				if n, ok := normal[pair{p.Caller, p.Callee}]; ok {
					extra -= n
				}
				put(calibration.MakeKey(a, t1, p.Callee, calibration.Xx, p.Caller), extra)
			}
		}
	}
	return len(set)
}
