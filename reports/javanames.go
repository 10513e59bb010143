package reports

import (
	"fmt"
	"strings"
)

// Method names for people. The agent names a method as the JVM does,
// with JProf's type prefix: "J:java/util/TimSort.mergeLo(IIII)V". That
// is data (log-rt and log-gen keep it exactly), but a person reading a
// flame graph or a flat profile knows Java, not descriptors. So the
// reports that people read (xtree, xarc, xprof, collapsed stacks, the
// flame graph, pprof's function names) show one of three forms, chosen
// with a [NameForm]:
//
//	java   java.util.TimSort.mergeLo(int, int, int, int)      (the default)
//	short  TimSort.mergeLo
//	jvm    J:java/util/TimSort.mergeLo(IIII)V                  (as in log-rt)
//
// The java form writes classes as the JDK's stack traces do: dotted
// binary names, so a nested class stays Outer$Inner, a hidden class
// (lambdas, method handles) is Foo$$Lambda/0x0000000800c03000 and
// constructors and class initializers are Class.<init>(...) and
// Class.<clinit>(). Parameter types are written as Java source writes
// them, with the classes' simple names (String, Map$Entry, int[],
// String[][]); the return type is left out. The short form is the simple
// class name and the method, without parameters.
//
// Two different methods must never show under one name, or their values
// would be summed as one. When a form gives several methods the same
// name, those methods get the next, longer form that tells them apart
// (see [nameLevels]): overloads in the short form get their parameters
// (TimSort.mergeLo(int, int)), classes of the same simple name their
// packages, parameters whose classes differ only in package their full
// names (f(a.T) and f(b.T)), and methods that differ only in their
// return type (a bridge method and the one it bridges) the return type
// after a colon: "Foo.get(): java.lang.Object".
//
// The java and short forms drop the type prefix, so one method is one
// name whether it ran interpreted or compiled (or was entered before
// profiling began, type O): [Rename] merges
// what then becomes the same frame (the flame graph still colours a
// frame by its types and names them in its tooltip; pprof keeps the type
// as a label). A name that is not a well-formed class.method(descriptor)
// with a type prefix (a thread root such as "0000b718_main", <pruned>,
// a damaged name) stays exactly as it is.

// NameForm is how reports write method names: [JavaNames] (the zero
// value), [ShortNames] or [JVMNames]. It is a flag.Value.
type NameForm uint8

const (
	JavaNames  NameForm = iota // java.util.TimSort.mergeLo(int, int, int, int)
	ShortNames                 // TimSort.mergeLo
	JVMNames                   // J:java/util/TimSort.mergeLo(IIII)V, as in log-rt
)

var nameFormNames = [...]string{JavaNames: "java", ShortNames: "short", JVMNames: "jvm"}

func (f NameForm) String() string {
	if int(f) < len(nameFormNames) {
		return nameFormNames[f]
	}
	return fmt.Sprintf("NameForm(%d)", uint8(f))
}

// ParseNameForm reads a form's name: java, short or jvm, in any case.
func ParseNameForm(s string) (NameForm, error) {
	for i, n := range nameFormNames {
		if strings.EqualFold(s, n) {
			return NameForm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown name form %q: want java, short or jvm", s)
}

// Set implements flag.Value.
func (f *NameForm) Set(s string) error {
	v, err := ParseNameForm(s)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// FormatName returns one log-rt name in form f, on its own: without the
// other names of its profile it cannot tell overloads apart in the short
// form (a [Namer] does).
func FormatName(name string, f NameForm) string {
	if f == JVMNames {
		return name
	}
	m, ok := parseMethod(name)
	if !ok {
		return name
	}
	return m.format(nameLevels(f)[0])
}

// jmethod is a parsed method name: "J:java/util/Map$Entry.getKey()Ljava/lang/Object;".
type jmethod struct {
	typ    byte   // 'J'
	id     string // the name without its type prefix: what identifies the method
	class  string // "java/util/Map$Entry", as the JVM names it
	method string // "getKey"
	params []string
	ret    string // field descriptors: "Ljava/lang/Object;"
}

// parseMethod parses a log-rt method name; ok is false for a name that is
// not a type prefix and a well-formed class.method(descriptor).
func parseMethod(name string) (m jmethod, ok bool) {
	t, s := splitType(name)
	if t == 0 {
		return m, false
	}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return m, false
	}
	dot := strings.LastIndexByte(s[:open], '.')
	if dot <= 0 {
		return m, false
	}
	m = jmethod{typ: t, id: s, class: s[:dot], method: s[dot+1 : open]}
	if !validMethodName(m.method) || !validClassName(m.class) {
		return jmethod{}, false
	}
	m.params, m.ret, ok = parseDescriptor(s[open:])
	if !ok {
		return jmethod{}, false
	}
	return m, true
}

// validMethodName follows the JVM's rule for method names: not empty, none
// of . ; [ / < >, except the names of constructors and class initializers.
func validMethodName(s string) bool {
	if s == "<init>" || s == "<clinit>" {
		return true
	}
	return s != "" && !strings.ContainsAny(s, ".;[/<>")
}

// validClassName accepts a JVM class name ("java/util/TimSort"), a hidden
// class as its JVMTI signature names it ("a/B$$Lambda.0x0000000800c03000")
// or an array class ("[I", whose clone() a JVM may report).
func validClassName(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '[' {
		end, ok := fieldDescriptor(s, 0)
		return ok && end == len(s)
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || strings.ContainsAny(part, ";[") {
			return false
		}
	}
	return true
}

// parseDescriptor splits a method descriptor "(I[Ljava/lang/String;)V"
// into its parameters' field descriptors and its return type's.
func parseDescriptor(d string) (params []string, ret string, ok bool) {
	if len(d) < 3 || d[0] != '(' {
		return nil, "", false
	}
	i := 1
	for i < len(d) && d[i] != ')' {
		end, ok := fieldDescriptor(d, i)
		if !ok {
			return nil, "", false
		}
		params = append(params, d[i:end])
		i = end
	}
	if i >= len(d) {
		return nil, "", false
	}
	i++ // ')'
	if d[i:] == "V" {
		return params, "V", true
	}
	end, ok := fieldDescriptor(d, i)
	if !ok || end != len(d) {
		return nil, "", false
	}
	return params, d[i:], true
}

// maxArrayDims is the JVM's limit on an array type's dimensions.
const maxArrayDims = 255

// fieldDescriptor returns the end of the field descriptor that starts at
// d[i].
func fieldDescriptor(d string, i int) (int, bool) {
	start := i
	for i < len(d) && d[i] == '[' {
		i++
	}
	if i-start > maxArrayDims || i >= len(d) {
		return 0, false
	}
	switch d[i] {
	case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
		return i + 1, true
	case 'L':
		semi := strings.IndexByte(d[i:], ';')
		if semi < 0 || !validClassName(d[i+1:i+semi]) || d[i+1] == '[' || strings.IndexByte(d[i+1:i+semi], '.') >= 0 {
			return 0, false
		}
		return i + semi + 1, true
	}
	return 0, false
}

var primitives = map[byte]string{
	'B': "byte", 'C': "char", 'D': "double", 'F': "float",
	'I': "int", 'J': "long", 'S': "short", 'Z': "boolean", 'V': "void",
}

// typeName writes a well-formed field descriptor as Java source does:
// "[[Ljava/lang/String;" is "java.lang.String[][]" (full) or
// "String[][]".
func typeName(fd string, full bool) string {
	dims := 0
	for dims < len(fd) && fd[dims] == '[' {
		dims++
	}
	var base string
	if p, ok := primitives[fd[dims]]; ok {
		base = p
	} else {
		base = className(fd[dims+1:len(fd)-1], full)
	}
	return base + strings.Repeat("[]", dims)
}

// className is a JVM class name as the JDK's stack traces write it: the
// binary name with dots ("java.util.Map$Entry"), a hidden class's
// address after a '/' ("a.B$$Lambda/0x0000000800c03000"); without full,
// from the simple name on ("Map$Entry", "B$$Lambda/0x0000000800c03000").
func className(c string, full bool) string {
	if c != "" && c[0] == '[' {
		return typeName(c, full)
	}
	hidden := ""
	if i := strings.IndexByte(c, '.'); i >= 0 {
		c, hidden = c[:i], "/"+c[i+1:]
	}
	if !full {
		c = c[strings.LastIndexByte(c, '/')+1:]
	}
	return strings.ReplaceAll(c, "/", ".") + hidden
}

// nameLevel is one way of writing a method, from the shortest to the
// longest; the last one, levelID, is the JVM's own name (without type
// prefix), unique to each method.
type nameLevel uint8

const (
	levelShort       nameLevel = iota // TimSort.mergeLo
	levelShortParams                  // TimSort.mergeLo(int, int)
	levelJava                         // java.util.TimSort.mergeLo(int, int)
	levelJavaFull                     // a.B.f(java.lang.String)
	levelJavaReturn                   // a.B.get(): java.lang.Object
	levelID                           // java/util/TimSort.mergeLo(II)V
)

// nameLevels are the levels a form tries, in order, until a method's name
// is its own.
func nameLevels(f NameForm) []nameLevel {
	if f == ShortNames {
		return []nameLevel{levelShort, levelShortParams, levelJava, levelJavaFull, levelJavaReturn, levelID}
	}
	return []nameLevel{levelJava, levelJavaFull, levelJavaReturn, levelID}
}

func (m *jmethod) format(l nameLevel) string {
	if l == levelID {
		return m.id
	}
	var b strings.Builder
	b.WriteString(className(m.class, l >= levelJava))
	b.WriteByte('.')
	b.WriteString(m.method)
	if l == levelShort {
		return b.String()
	}
	b.WriteByte('(')
	for i, p := range m.params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(typeName(p, l >= levelJavaFull))
	}
	b.WriteByte(')')
	if l == levelJavaReturn {
		b.WriteString(": ")
		b.WriteString(typeName(m.ret, true))
	}
	return b.String()
}
