package trainer

import "github.com/libjprof/libjprof/calibration"

// Targets lists the keys the trainer aims to produce on HotSpot with JVMTI
// method events on: every method runs interpreted then, so the types that
// occur are i, I, n, N and Other for the thread root. Of the valid keys over
// those types it leaves out what a run that collects from VM start cannot
// produce with the root: the root never exits (a = Other only with t1 = En,
// b = Other only with t2 = En), nothing enters a method of type Other
// (c = Other only on exits), and a thread's first event (Other, En, Other,
// En, x: the state before it) happens once per thread, too rarely to train.
func Targets() []calibration.Key {
	var out []calibration.Key
	for _, k := range calibration.ValidKeys(calibration.InterpStatic, calibration.Interp,
		calibration.NativeStatic, calibration.Native, calibration.Other) {
		a, t1, b, t2, c := k.Parts()
		o := calibration.Other
		switch {
		case a == o && t1 != calibration.En,
			b == o && t2 != calibration.En,
			b == o && t1 == calibration.En,
			c == o && t2 == calibration.En:
			continue
		}
		out = append(out, k)
	}
	return out
}

// Coverage returns how many of the Targets the table has seen, and the
// ones it has not.
func Coverage(t *calibration.Table) (seen int, missing []calibration.Key) {
	for _, k := range Targets() {
		if t.Lookup(k).Seen() {
			seen++
		} else {
			missing = append(missing, k)
		}
	}
	return seen, missing
}

// ZeroMinima returns the target keys whose minimum is 0. Glue code is never
// free, so these point at the metric: readings that went backwards (the
// agent clamps those deltas to 0) or deltas measured across a dispatch.
func ZeroMinima(t *calibration.Table) []calibration.Key {
	var out []calibration.Key
	for _, k := range Targets() {
		if t.Lookup(k).Min == 0 {
			out = append(out, k)
		}
	}
	return out
}
