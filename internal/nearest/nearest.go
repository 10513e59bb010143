// Package nearest finds the name a mistyped one most likely meant, for
// the "did you mean" of the agent's options and jprof's commands.
package nearest

// Name is the candidate at the smallest edit distance from s, if that is
// at most 2 and less than half the candidate's length, else "".
func Name(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := distance(s, c); d < bestD && 2*d < len(c) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
