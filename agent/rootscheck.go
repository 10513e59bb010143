package main

import (
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/jvmti"
)

// Telling at once what ROOTS match: at VM init and in rtdriver's reply
// to roots=, rather than only at VM death. Counts come from the source
// (the methods given a breakpoint, or with BCI the root methods
// instrumented); a root whose class is named without globs is also
// checked against the class path, so a misspelt class or method is said
// before the class would load.

// rootsMatched is how many methods the roots match now, and what the
// count is of. The caller must be a thread attached to the VM.
func (a *agent) rootsMatched(roots string) (int, string) {
	switch s := a.source.(type) {
	case jvmti.BCI:
		if s.Instrumenting() {
			return s.RootMethods(), "in the classes instrumented so far"
		}
		return jvmti.RootsMatchLoaded(roots), "in the classes loaded so far (instrumented when collection starts)"
	case rootSource:
		return s.RootMethods(), "in the classes loaded so far"
	}
	return 0, ""
}

// rootsProblems checks each root whose class part has no glob against
// the class path: the class must be loaded or have a class file, and
// that class file a method the method part matches. Each problem is one
// sentence. The caller must be a thread attached to the VM.
func rootsProblems(roots string) []string {
	ps, err := parseRoots(roots)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range ps {
		lit := p.literalClass()
		if lit == "" {
			continue
		}
		found, unsure := "", false
		for _, c := range nestedCandidates(lit) {
			switch jvmti.ClassFindable(c) {
			case 1:
				found = c
			case -1:
				unsure = true
			}
			if found != "" {
				break
			}
		}
		if found == "" && unsure {
			continue // the JVM could not be asked: nothing to say
		}
		if found == "" {
			out = append(out, fmt.Sprintf("root %s.%s: no class %s is loaded or on the class path (misspelt? a class defined at run time is found when it loads)", p.Class, p.Method, lit))
			continue
		}
		b := jvmti.ClassFile(found)
		if b == nil {
			continue // loaded, but not from a class file the class path has
		}
		names, err := classMethodNames(b)
		if err != nil {
			continue
		}
		hit := false
		for _, n := range names {
			if globMatch(p.Method, n) {
				hit = true
				break
			}
		}
		if !hit {
			out = append(out, fmt.Sprintf("root %s.%s: class %s has no method %s (its methods: %s)", p.Class, p.Method, found, p.Method, clipList(names, 12)))
		}
	}
	return out
}

// nestedCandidates are the binary names a dotted class name may stand
// for: itself, then with its last dots read as '$' (a.b.Outer.Inner is
// a.b.Outer$Inner), as the grammar's nested-class rule reads them: for
// a class part without globs, the names classMatch accepts.
func nestedCandidates(c string) []string {
	out := []string{c}
	for s := c; ; {
		i := strings.LastIndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[:i]
		out = append(out, s+strings.ReplaceAll(c[i:], ".", "$"))
	}
	return out
}

func clipList(names []string, n int) string {
	seen := map[string]bool{}
	var u []string
	for _, s := range names {
		if !seen[s] {
			seen[s] = true
			u = append(u, s)
		}
	}
	if len(u) > n {
		return strings.Join(u[:n], ", ") + fmt.Sprintf(", and %d more", len(u)-n)
	}
	return strings.Join(u, ", ")
}

// uninstrumented says, with BCI instrumenting, how many methods of the
// loaded classes the roots match that were not instrumented (java.base,
// a class INCLUDE or EXCLUDE leaves out): a root there collects nothing.
func (a *agent) uninstrumented(roots string) string {
	b, ok := a.source.(jvmti.BCI)
	if !ok || !b.Instrumenting() || b.RootMethods() > 0 {
		return ""
	}
	if n := jvmti.RootsMatchLoaded(roots); n > 0 {
		return fmt.Sprintf("%s in the loaded classes but none is instrumented (java.base never is; INCLUDE and EXCLUDE may leave a class out)", methodsMatch(n))
	}
	return ""
}

// sayRootProblems says on stderr and in log-msg what rootsProblems
// finds (at VM init).
func (a *agent) sayRootProblems(roots string) {
	ps := rootsProblems(roots)
	if u := a.uninstrumented(roots); u != "" {
		ps = append(ps, u)
	}
	for _, p := range ps {
		msg := "ROOTS: " + p
		a.warn(msg)
	}
}

// rootsReply is rtdriver's answer to roots=: how many methods match, and
// with none, why (a warning). The caller must be a thread attached to
// the VM.
func (a *agent) rootsReply(roots string) string {
	n, what := a.rootsMatched(roots)
	if n > 0 {
		return methodsMatch(n) + " " + what
	}
	msg := fmt.Sprintf("warning: 0 methods match %s %s", roots, what)
	ps := rootsProblems(roots)
	if u := a.uninstrumented(roots); u != "" {
		ps = append(ps, u)
	}
	if len(ps) > 0 {
		msg += ": " + strings.Join(ps, "; ")
	} else {
		msg += "; more are looked at as classes load"
	}
	a.log.Warn("ROOTS: "+msg, zap.String("roots", roots))
	return msg
}

// methodsMatch is "1 method matches", "3 methods match".
func methodsMatch(n int) string {
	if n == 1 {
		return "1 method matches"
	}
	return fmt.Sprintf("%d methods match", n)
}
