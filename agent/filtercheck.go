package main

// INCLUDE and EXCLUDE checked at load: an INCLUDE prefix that an EXCLUDE
// prefix covers selects nothing, which the profile would show only as
// emptiness. (One in java.base is the transformer's to tell: it knows the
// JDK's packages.)

import (
	"fmt"
	"regexp"
	"strings"
)

// filterWarnings says which INCLUDE prefixes an EXCLUDE prefix covers.
func filterWarnings(include, exclude string) []string {
	excl := filterPrefixes(exclude)
	var msgs []string
	for _, inc := range filterPrefixes(include) {
		for _, e := range excl {
			if strings.HasPrefix(inc, e) {
				msgs = append(msgs, fmt.Sprintf("INCLUDE prefix %s selects nothing: EXCLUDE prefix %s takes all of it", inc, e))
				break
			}
		}
	}
	return msgs
}

var filterSep = regexp.MustCompile(`[,:+]`)

// filterPrefixes reads a prefix list as the transformer does
// (Transformer.prefixes): separated by '+' (or ',' ':'), dotted or
// slashed, a trailing '*' dropped.
func filterPrefixes(list string) []string {
	var out []string
	for _, p := range filterSep.Split(list, -1) {
		p = strings.TrimSuffix(strings.ReplaceAll(strings.TrimSpace(p), "/", "."), "*")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
