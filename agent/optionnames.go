package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/libjprof/libjprof/internal/nearest"
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

// nearestOption is the option name a mistyped one most likely meant, or "".
func nearestOption(upper string) string {
	names := make([]string, len(optionSpecs))
	for i, s := range optionSpecs {
		names[i] = s.name
	}
	return nearest.Name(strings.TrimPrefix(upper, "NO"), names)
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
