package main

// INCLUDE and EXCLUDE checked at load: a prefix that selects nothing BCI
// instruments would otherwise show only as an empty profile.

import (
	"fmt"
	"strings"
)

// javaBasePrefixes are java.base's packages (BCI never rewrites
// java.base): an INCLUDE prefix under one selects nothing.
var javaBasePrefixes = []string{"java.io", "java.lang", "java.math", "java.net", "java.nio", "java.security",
	"java.text", "java.time", "java.util", "javax.crypto", "javax.net", "javax.security", "jdk.internal", "sun."}

// filterWarnings says which INCLUDE prefixes select nothing: those in
// java.base, and those an EXCLUDE prefix covers.
func filterWarnings(include, exclude string) []string {
	if include == "" {
		return nil
	}
	norm := func(s string) []string {
		var out []string
		for _, p := range strings.Split(s, "+") {
			if p = strings.ReplaceAll(strings.TrimSpace(p), "/", "."); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	excl := norm(exclude)
	var msgs []string
	for _, inc := range norm(include) {
		if b := under(inc, javaBasePrefixes); b != "" {
			msgs = append(msgs, fmt.Sprintf("INCLUDE prefix %s selects nothing: it is in java.base (%s), whose classes BCI leaves as they are (METHODEVENTS sees them)", inc, b))
		} else if e := under(inc, excl); e != "" {
			msgs = append(msgs, fmt.Sprintf("INCLUDE prefix %s selects nothing: EXCLUDE prefix %s takes all of it", inc, e))
		}
	}
	return msgs
}

// under is the first of prefixes that name starts with, or "".
func under(name string, prefixes []string) string {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return p
		}
	}
	return ""
}
