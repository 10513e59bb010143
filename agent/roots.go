package main

import (
	"fmt"
	"strings"
	"unicode"
)

// The ROOTS grammar, the one place it is defined. The option parser
// checks a value with parseRoots and hands the event sources its
// normalized form (normalRoots): "Class.method" patterns joined by '+',
// class parts dotted, no spaces. jvmti/rootevents.c (method events) and
// libjprof/bci/Selective.java (BCI) split that form at '+' and at each
// pattern's last '.', and match with the same glob as classMatch and
// globMatch below; TestRootsGrammarTable runs one table of patterns and
// names through all three (testdata/roots-table.txt).
//
//	ROOTS   = root { ('+' | ':') root }
//	root    = class ('.' | '/') method      (split at the last '.' or '/')
//	class   = name { ('.' | '/') name }     ('/' is read as '.')
//	name    = { letter | digit | '_' | '$' | '*' | '?' }+
//	method  = name | "<init>" | "<clinit>"
//
// '*' matches any run of characters, none included, dots and '$'
// included: "com.example.*" covers the subpackages too. '?' matches
// exactly one character, whatever it is. Everything else matches itself,
// case included. A class pattern is matched against the class's binary
// name (com.example.Outer$Inner), a '.' of the pattern also matching a
// '$' after the name's last '.' (classMatch), so that a nested class may
// be named as the source names it (com.example.Outer.Inner), even one
// whose own name holds a '$' (Outer.In$ner for Outer$In$ner), or in the
// binary spelling, or mixed. The method pattern matches the method's
// name (all its overloads).

// rootPattern is one root: globs on the dotted class name and on the
// method name.
type rootPattern struct{ Class, Method string }

// parseRoots reads a ROOTS value (or rtdriver roots=); the error says
// which root is wrong and why.
func parseRoots(v string) ([]rootPattern, error) {
	var out []rootPattern
	for _, r := range strings.FieldsFunc(v, func(c rune) bool { return c == '+' || c == ':' }) {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		dot := strings.LastIndexAny(r, "./")
		if dot < 0 {
			return nil, fmt.Errorf("root %q: want Class.method", r)
		}
		cls := strings.ReplaceAll(r[:dot], "/", ".")
		for _, seg := range strings.Split(cls, ".") {
			if !rootsIdent(seg) {
				return nil, fmt.Errorf("root %q: class part %q is not a dotted Java name (letters, digits, _ $ and the globs * ?); want Class.method", r, cls)
			}
		}
		m := r[dot+1:]
		if !rootsIdent(m) && m != "<init>" && m != "<clinit>" {
			return nil, fmt.Errorf("root %q: method part %q is not a Java method name (letters, digits, _ $, the globs * ?, or <init>, <clinit>; no signature); want Class.method", r, m)
		}
		out = append(out, rootPattern{Class: cls, Method: m})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no root in %q: want Class.method+...", v)
	}
	return out, nil
}

func rootsIdent(s string) bool {
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("_$*?", c) {
			return false
		}
	}
	return s != ""
}

// validRoots says whether v is a ROOTS value parseRoots accepts.
func validRoots(v string) bool {
	_, err := parseRoots(v)
	return err == nil
}

// normalRoots is the form the event sources receive: a.b.C.m+d.E.*.
func normalRoots(ps []rootPattern) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Class + "." + p.Method
	}
	return strings.Join(s, "+")
}

// normalizeRoots parses v and returns its normalized form.
func normalizeRoots(v string) (string, error) {
	ps, err := parseRoots(v)
	if err != nil {
		return "", err
	}
	return normalRoots(ps), nil
}

// globMatch matches name against a pattern of the grammar: '*' any run
// of characters, '?' one character. Greedy with one backtrack point (the
// last '*'), linear in practice; the C and Java matchers are the same
// loop.
func globMatch(pattern, name string) bool {
	n := []rune(name)
	return glob([]rune(pattern), n, len(n))
}

// classMatch matches a dotted binary class name (a.b.Outer$Inner)
// against a root's class pattern. Which '$' of a binary name nest a class
// in another is not in the name (Outer$Inner$Dollar may be Inner$Dollar
// in Outer), so a '.' of the pattern also matches any '$' after the
// name's last '.': the names it accepts for a pattern without globs are
// exactly those nestedCandidates lists, which the start-time check looks
// for (TestRootsMatcherAgreesWithCheck).
func classMatch(pattern, class string) bool {
	n := []rune(class)
	nest := 0
	for i, c := range n {
		if c == '.' {
			nest = i + 1
		}
	}
	return glob([]rune(pattern), n, nest)
}

// glob is globMatch where a pattern's '.' also matches a '$' of the name
// at or after index nest.
func glob(p, n []rune, nest int) bool {
	pi, ni, star, mark := 0, 0, -1, 0
	for ni < len(n) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == n[ni] || (p[pi] == '.' && n[ni] == '$' && ni >= nest)):
			pi++
			ni++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ni
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matches says whether the root is the method name of the class (its
// dotted binary name, a.b.Outer$Inner).
func (r rootPattern) matches(class, method string) bool {
	return globMatch(r.Method, method) && classMatch(r.Class, class)
}

// literalClass is the class part of a root without globs, or "".
func (r rootPattern) literalClass() string {
	if strings.ContainsAny(r.Class, "*?") {
		return ""
	}
	return r.Class
}
