package bench

import (
	"fmt"
	"math"
	"slices"
)

// Summary describes a sample of measurements.
type Summary struct {
	N                int
	Median, Min, Max float64
	Q1, Q3           float64 // quartiles (linear interpolation)
}

// Summarize returns the Summary of xs; the zero Summary for no data.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{
		N:      len(s),
		Median: quantile(s, 0.5),
		Min:    s[0],
		Max:    s[len(s)-1],
		Q1:     quantile(s, 0.25),
		Q3:     quantile(s, 0.75),
	}
}

// quantile of sorted s, interpolating between order statistics (R's type 7,
// the usual default), so that the median of an even count is the mean of
// the middle two.
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// Scale returns s with every value multiplied by f (for unit changes).
func (s Summary) Scale(f float64) Summary {
	if f < 0 {
		s.Min, s.Max = s.Max, s.Min
		s.Q1, s.Q3 = s.Q3, s.Q1
	}
	s.Median *= f
	s.Min *= f
	s.Max *= f
	s.Q1 *= f
	s.Q3 *= f
	return s
}

// Range formats min–max with the given verb, e.g. "%.1f".
func (s Summary) Range(verb string) string {
	return fmt.Sprintf(verb+"–"+verb, s.Min, s.Max)
}

// IQR formats Q1–Q3 with the given verb.
func (s Summary) IQR(verb string) string {
	return fmt.Sprintf(verb+"–"+verb, s.Q1, s.Q3)
}

// perRound summarises a[i]/b[i]: the runs of two configurations in the
// same rounds, paired, so that the machine's drift between rounds
// cancels. False unless both ran every round.
func perRound(a, b []float64) (Summary, bool) {
	return pairedRounds(a, b, func(x, y float64) float64 { return x / y })
}

// minusRound summarises a[i]-b[i], paired by round as perRound pairs
// ratios.
func minusRound(a, b []float64) (Summary, bool) {
	return pairedRounds(a, b, func(x, y float64) float64 { return x - y })
}

// pairedRounds summarises f(a[i], b[i]) over the rounds both ran.
func pairedRounds(a, b []float64, f func(x, y float64) float64) (Summary, bool) {
	if len(a) == 0 || len(a) != len(b) {
		return Summary{}, false
	}
	xs := make([]float64, len(a))
	for i := range xs {
		xs[i] = f(a[i], b[i])
	}
	return Summarize(xs), true
}

// overRound is perRound less one: how much more a took than b, paired
// by round (0.05 for 5% more).
func overRound(a, b []float64) (Summary, bool) {
	r, ok := perRound(a, b)
	if !ok {
		return Summary{}, false
	}
	return Summary{N: r.N, Median: r.Median - 1, Min: r.Min - 1, Max: r.Max - 1, Q1: r.Q1 - 1, Q3: r.Q3 - 1}, true
}
