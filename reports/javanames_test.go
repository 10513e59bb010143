package reports

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatName(t *testing.T) {
	for _, tc := range []struct{ in, java, short string }{
		// Primitives, and the return type left out.
		{"J:java/util/TimSort.mergeLo(IIII)V", "java.util.TimSort.mergeLo(int, int, int, int)", "TimSort.mergeLo"},
		{"i:x/P.all(BCDFIJSZ)J", "x.P.all(byte, char, double, float, int, long, short, boolean)", "P.all"},
		// No arguments; the default package.
		{"I:hellop.myA()V", "hellop.myA()", "hellop.myA"},
		// Objects by their simple names; arrays, arrays of arrays.
		{"J:hellop.main([Ljava/lang/String;)V", "hellop.main(String[])", "hellop.main"},
		{"j:a/B.f([[Ljava/lang/String;[[[ILjava/util/Map$Entry;)[Ljava/lang/Object;", "a.B.f(String[][], int[][][], Map$Entry)", "B.f"},
		// Nested classes as the JDK's stack traces write them.
		{"I:java/util/HashMap$Node.<init>(ILjava/lang/Object;Ljava/lang/Object;Ljava/util/HashMap$Node;)V",
			"java.util.HashMap$Node.<init>(int, Object, Object, HashMap$Node)", "HashMap$Node.<init>"},
		{"i:a/B.<clinit>()V", "a.B.<clinit>()", "B.<clinit>"},
		// Hidden classes: lambdas of JDK 17 and of later JDKs, method
		// handles; their address after a '/', as Class.getName says.
		{"J:hellop$$Lambda$14.0x0000000800c03000.run()V", "hellop$$Lambda$14/0x0000000800c03000.run()", "hellop$$Lambda$14/0x0000000800c03000.run"},
		{"J:a/Foo$$Lambda.0x000001c7c1001234.apply(Ljava/lang/Object;)Ljava/lang/Object;", "a.Foo$$Lambda/0x000001c7c1001234.apply(Object)", "Foo$$Lambda/0x000001c7c1001234.apply"},
		{"i:java/lang/invoke/LambdaForm$MH.0x0000000800c04000.invoke(Ljava/lang/Object;J)Ljava/lang/Object;",
			"java.lang.invoke.LambdaForm$MH/0x0000000800c04000.invoke(Object, long)", "LambdaForm$MH/0x0000000800c04000.invoke"},
		// An array class's method.
		{"N:[I.clone()Ljava/lang/Object;", "int[].clone()", "int[].clone"},
		// Other: frames whose type is unknown, named all the same.
		{"O:java/lang/ref/Reference.waitForReferencePendingList()V", "java.lang.ref.Reference.waitForReferencePendingList()", "Reference.waitForReferencePendingList"},
		// Names that are not methods, and malformed ones, stay as they are.
		{"0000b718_main", "0000b718_main", "0000b718_main"},
		{"00000001_t:x(I)V", "00000001_t:x(I)V", "00000001_t:x(I)V"},
		{PrunedName, PrunedName, PrunedName},
		{ThreadFrame, ThreadFrame, ThreadFrame},
		{"J:<unloaded-method>", "J:<unloaded-method>", "J:<unloaded-method>"},
		{"J:?.?", "J:?.?", "J:?.?"},
		{"J:a/B.f", "J:a/B.f", "J:a/B.f"},
		{"J:a/B.f(", "J:a/B.f(", "J:a/B.f("},
		{"J:a/B.f()", "J:a/B.f()", "J:a/B.f()"},
		{"J:a/B.f(I", "J:a/B.f(I", "J:a/B.f(I"},
		{"J:a/B.f(Q)V", "J:a/B.f(Q)V", "J:a/B.f(Q)V"},
		{"J:a/B.f(L;)V", "J:a/B.f(L;)V", "J:a/B.f(L;)V"},
		{"J:a/B.f(Ljava/lang/String)V", "J:a/B.f(Ljava/lang/String)V", "J:a/B.f(Ljava/lang/String)V"},
		{"J:a/B.f(La//C;)V", "J:a/B.f(La//C;)V", "J:a/B.f(La//C;)V"},
		{"J:a/B.f()VV", "J:a/B.f()VV", "J:a/B.f()VV"},
		{"J:a/B.f(V)V", "J:a/B.f(V)V", "J:a/B.f(V)V"},
		{"J:a/B.f()[", "J:a/B.f()[", "J:a/B.f()["},
		{"J:a/B.()V", "J:a/B.()V", "J:a/B.()V"},
		{"J:.f()V", "J:.f()V", "J:.f()V"},
		{"J:a/B.f<x>()V", "J:a/B.f<x>()V", "J:a/B.f<x>()V"},
		{"N:x/Y.tpl<T>::op[](I)V", "N:x/Y.tpl<T>::op[](I)V", "N:x/Y.tpl<T>::op[](I)V"},
		{"J:a/B.f(" + strings.Repeat("[", 256) + "I)V", "J:a/B.f(" + strings.Repeat("[", 256) + "I)V", "J:a/B.f(" + strings.Repeat("[", 256) + "I)V"},
		{"J:", "J:", "J:"},
		{"", "", ""},
		{"X:a/B.f()V", "X:a/B.f()V", "X:a/B.f()V"}, // not a type letter
	} {
		assert.Equal(t, tc.java, FormatName(tc.in, JavaNames), "java %q", tc.in)
		assert.Equal(t, tc.short, FormatName(tc.in, ShortNames), "short %q", tc.in)
		assert.Equal(t, tc.in, FormatName(tc.in, JVMNames), "jvm %q", tc.in)
	}
	// 255 dimensions are allowed.
	assert.Equal(t, "a.B.f(int"+strings.Repeat("[]", 255)+")", FormatName("J:a/B.f("+strings.Repeat("[", 255)+"I)V", JavaNames))
}

// FuzzFormatName: no input panics, and a name is either left as it is or
// turned into one without the JVM's descriptor syntax.
func FuzzFormatName(f *testing.F) {
	for _, s := range []string{"J:a/B.f(I)V", "i:a/B$$L.0x1.run([[Ljava/lang/String;)[I", "J:a.b(", "O:x(L;)V"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, form := range []NameForm{JavaNames, ShortNames} {
			got := FormatName(s, form)
			n := NewNamer(form, slices.Values([]string{s, s}))
			assert.Equal(t, got, n.Name(s))
		}
	})
}

func TestParseNameForm(t *testing.T) {
	for s, want := range map[string]NameForm{"java": JavaNames, "SHORT": ShortNames, "Jvm": JVMNames} {
		got, err := ParseNameForm(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, strings.ToLower(s), got.String())
	}
	_, err := ParseNameForm("javap")
	assert.EqualError(t, err, `unknown name form "javap": want java, short or jvm`)
	var f NameForm
	require.NoError(t, f.Set("short"))
	assert.Equal(t, ShortNames, f)
	assert.Error(t, f.Set(""))
	assert.Equal(t, ShortNames, f, "a bad value changes nothing")
	assert.Equal(t, "java", NameForm(0).String(), "java is the default")
}
