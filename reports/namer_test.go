package reports

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func namesOf(form NameForm, names ...string) []string {
	n := NewNamer(form, slices.Values(names))
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = n.Name(s)
	}
	return out
}

// TestNamerOverloads: methods that one form would show under one name
// get a longer form that tells them apart; a method's types share one.
func TestNamerOverloads(t *testing.T) {
	in := []string{
		"J:java/util/TimSort.mergeLo(IIII)V",
		"I:java/util/TimSort.mergeLo(IIII)V", // the same method, interpreted
		"J:a/B.f(I)V",
		"J:a/B.f(Ljava/lang/String;)V",  // an overload
		"J:a/B.g(La/T;)V",               // classes that differ in package only
		"J:a/B.g(Lb/T;)V",               //
		"J:a/B.get()Ljava/lang/Object;", // a bridge method
		"J:a/B.get()Ljava/lang/String;", // and the method it bridges
		"J:c/B.h()V",                    // classes of the same simple name
		"J:d/B.h()V",                    //
		"J:a/B.f",                       // malformed: "B.f"'s look-alike in jvm text
		"0000b718_main",
	}
	assert.Equal(t, []string{
		"java.util.TimSort.mergeLo(int, int, int, int)",
		"java.util.TimSort.mergeLo(int, int, int, int)",
		"a.B.f(int)",
		"a.B.f(String)",
		"a.B.g(a.T)",
		"a.B.g(b.T)",
		"a.B.get(): java.lang.Object",
		"a.B.get(): java.lang.String",
		"c.B.h()",
		"d.B.h()",
		"J:a/B.f",
		"0000b718_main",
	}, namesOf(JavaNames, in...))
	assert.Equal(t, []string{
		"TimSort.mergeLo",
		"TimSort.mergeLo",
		"B.f(int)",
		"B.f(String)",
		"a.B.g(a.T)",
		"a.B.g(b.T)",
		"a.B.get(): java.lang.Object",
		"a.B.get(): java.lang.String",
		"c.B.h()",
		"d.B.h()",
		"J:a/B.f",
		"0000b718_main",
	}, namesOf(ShortNames, in...))
	assert.Equal(t, in, namesOf(JVMNames, in...))

	// A name a method loses at one level is not given to another at a
	// later one: x.A.f(p.T) and A.f(q.T) (default package) are both
	// A.f(T) in the short form with parameters, and A.f(T) is also the
	// java form of the second one.
	assert.Equal(t, []string{"x.A.f(T)", "A.f(q.T)"},
		namesOf(ShortNames, "J:x/A.f(Lp/T;)V", "J:A.f(Lq/T;)V"))
	// Whatever the names, each method has its own.
	got := namesOf(ShortNames, "J:A.f(I)V", "J:A.f(I)I", "J:x/A.f(I)V", "J:A.f()V")
	assert.Len(t, got, 4)
	seen := map[string]bool{}
	for _, g := range got {
		assert.False(t, seen[g], "%q twice in %q", g, got)
		seen[g] = true
	}
	// A name it was not given stays as it is.
	n := NewNamer(JavaNames, slices.Values([]string{"J:a/B.f(I)V"}))
	assert.Equal(t, "J:x/Y.z()V", n.Name("J:x/Y.z()V"))
}

// Pseudo-frames lose their type letter in the readable forms, and keep
// it as the log-rt has it.
func TestNamerPseudoFrames(t *testing.T) {
	in := []string{"O:<JIT_compiler_thread>", "O:<stub_jint_disjoint_arraycopy>", "J:java/lang/String.length()I"}
	assert.Equal(t, []string{"<JIT_compiler_thread>", "<stub_jint_disjoint_arraycopy>", "String.length"}, namesOf(ShortNames, in...))
	assert.Equal(t, "<JIT_compiler_thread>", namesOf(JavaNames, in...)[0])
	assert.Equal(t, in, namesOf(JVMNames, in...))
}
