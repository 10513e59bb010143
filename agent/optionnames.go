package main

import (
	"fmt"
	"sort"
	"strings"
)

// Option names: the list and reference the errors and -h show, the lookup
// of a name (with its NO form), which options choose the event source,
// and the nearest name to a mistyped one.

// validOptionList names every option, for the errors that list them
// ("SAMPLE[=]": the value may be left out).
func validOptionList() string {
	names := make([]string, 0, len(optionSpecs))
	for _, s := range optionSpecs {
		n := s.name
		switch {
		case s.hasValue && s.optValue:
			n += "[=]"
		case s.hasValue:
			n += "="
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ") + " (any may take a NO prefix)"
}

// OptionHelp is the option reference, one line per option.
func OptionHelp() string {
	var b strings.Builder
	for _, s := range optionSpecs {
		n := s.name
		if s.hasValue {
			n += "=..."
		}
		fmt.Fprintf(&b, "  %-12s %s", n, s.help)
		if s.notBuilt != "" {
			b.WriteString(" [not built yet]")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// sourceOptions are the options that choose the event source.
var sourceOptions = map[string]bool{"BCI": true, "METHODEVENTS": true, "SAMPLE": true, "ALLOC": true, "LOCK": true}

// namesSource says whether an option string sets an event source
// (NOBCI and NOMETHODEVENTS do too; NOSAMPLE and the like only unset
// theirs).
func namesSource(opts string) bool {
	for _, raw := range strings.Split(opts, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(raw), "=")
		name = strings.ToUpper(name)
		if sourceOptions[name] || name == "NOBCI" || name == "NOMETHODEVENTS" {
			return true
		}
	}
	return false
}

// nearestOption is the option name a mistyped one most likely meant: the
// one at the smallest edit distance, if that is at most 2 (and less than
// half the name), else "".
func nearestOption(upper string) string {
	upper = strings.TrimPrefix(upper, "NO")
	best, bestD := "", 3
	for _, s := range optionSpecs {
		if d := editDistance(upper, s.name); d < bestD && 2*d < len(s.name) {
			best, bestD = s.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
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

// lookupOption finds the spec for an upper-case option name, which may
// carry a NO prefix; on is false for the NO form.
func lookupOption(upper string) (*optionSpec, bool) {
	for i := range optionSpecs {
		if optionSpecs[i].name == upper {
			return &optionSpecs[i], true
		}
	}
	if rest, ok := strings.CutPrefix(upper, "NO"); ok {
		for i := range optionSpecs {
			if optionSpecs[i].name == rest {
				return &optionSpecs[i], false
			}
		}
	}
	return nil, false
}
