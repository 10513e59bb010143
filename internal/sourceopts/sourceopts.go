// Package sourceopts knows which of the agent's options choose its event
// source, for the agent (a source in JPROFOPTS replaces the -agentpath
// options') and for jprof (one in -opts replaces the event's).
package sourceopts

import "strings"

// Names are the options that choose the event source.
var Names = map[string]bool{"BCI": true, "METHODEVENTS": true, "SAMPLE": true, "ALLOC": true, "LOCK": true}

// sets says whether one option sets an event source: NOBCI and
// NOMETHODEVENTS do too; NOSAMPLE and the like only unset theirs.
func sets(tok string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(tok), "=")
	name = strings.ToUpper(name)
	return Names[name] || name == "NOBCI" || name == "NOMETHODEVENTS"
}

// Named says whether an option string sets an event source.
func Named(opts string) bool {
	for _, tok := range strings.Split(opts, ",") {
		if sets(tok) {
			return true
		}
	}
	return false
}

// Without is an option string without its event source options (their
// NO forms too).
func Without(opts string) string {
	keep, _ := split(opts)
	return strings.Join(keep, ",")
}

// Only is an option string's event source options (their NO forms too).
func Only(opts string) string {
	_, src := split(opts)
	return strings.Join(src, ",")
}

// split parts an option string's tokens into the others and the event
// source options.
func split(opts string) (keep, src []string) {
	for _, tok := range strings.Split(opts, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(tok), "=")
		if Names[strings.TrimPrefix(strings.ToUpper(name), "NO")] {
			src = append(src, tok)
		} else {
			keep = append(keep, tok)
		}
	}
	return keep, src
}
