package reports

import (
	"bytes"
	"fmt"
	"math/rand"
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

// TestRename: a method's frames of different types merge into one, with
// their values summed and their children merged too; thread roots stay
// apart; the profile given is not changed.
func TestRename(t *testing.T) {
	p := &Profile{PID: 1, Metrics: testMetrics[:1], Threads: []*Node{
		{Name: "00000001_main", Base: []uint64{5}, Children: []*Node{
			{Name: "J:a/B.f(I)V", Calls: 3, Base: []uint64{30}, Delta: []uint64{3}, DS: 1, IN: 2, Children: []*Node{
				{Name: "J:a/B.g()V", Calls: 3, Base: []uint64{9}},
			}},
			{Name: "J:a/B.f(J)V", Calls: 1, Base: []uint64{1}},
			{Name: "I:a/B.f(I)V", Calls: 2, Base: []uint64{20}, Delta: []uint64{2}, DS: 4, IN: 8, Children: []*Node{
				{Name: "I:a/B.h()V", Calls: 1, Base: []uint64{7}},
				{Name: "I:a/B.g()V", Calls: 2, Base: []uint64{6}},
			}},
		}},
		{Name: "00000002_main", Children: []*Node{{Name: "n:a/B.f(I)V", Calls: 1, Base: []uint64{1}}}},
	}}
	var before bytes.Buffer
	require.NoError(t, WriteLogRT(&before, p))

	q, types := rename(p, JavaNames, true)
	require.Len(t, q.Threads, 2)
	main := q.Threads[0]
	assert.Equal(t, "00000001_main", main.Name)
	assert.Equal(t, []uint64{5}, main.Base)
	require.Len(t, main.Children, 2)
	f := main.Children[0]
	assert.Equal(t, &Node{Name: "a.B.f(int)", Calls: 5, Base: []uint64{50}, Delta: []uint64{5}, DS: 5, IN: 10, Children: []*Node{
		{Name: "a.B.g()", Calls: 5, Base: []uint64{15}},
		{Name: "a.B.h()", Calls: 1, Base: []uint64{7}},
	}}, f)
	assert.Equal(t, "a.B.f(long)", main.Children[1].Name)
	assert.Equal(t, "a.B.f(int)", q.Threads[1].Children[0].Name)
	assert.Equal(t, "JIn", types["a.B.f(int)"], "the types of a name in the order seen")
	assert.Equal(t, "", types["00000001_main"])

	var after bytes.Buffer
	require.NoError(t, WriteLogRT(&after, p))
	assert.Equal(t, before.String(), after.String(), "the profile given is not changed")
	assert.Same(t, p, Rename(p, JVMNames))
	_, types = rename(p, JVMNames, true)
	assert.Equal(t, "I", types["I:a/B.f(I)V"])

	// The merged profile keeps the xarc invariants (checked by the
	// arcflow's own tests) and every total.
	tot := func(p *Profile) (calls, base uint64) {
		for _, th := range p.Threads {
			th.Walk(func(n *Node, _ int) { calls += n.Calls; base += at0(n.Base, 0) })
		}
		return
	}
	c1, b1 := tot(p)
	c2, b2 := tot(q)
	assert.Equal(t, c1, c2)
	assert.Equal(t, b1, b2)
}

// TestRenameManyKids: a node with more children than a scan serves, some
// of them one method in two types.
func TestRenameManyKids(t *testing.T) {
	th := &Node{Name: "00000001_main"}
	for i := range 40 {
		th.Children = append(th.Children, &Node{Name: fmt.Sprintf("J:a/B.f%d()V", i%25), Calls: 1})
	}
	for i := range 40 {
		th.Children = append(th.Children, &Node{Name: fmt.Sprintf("I:a/B.f%d()V", i%30), Calls: 1})
	}
	q := Rename(&Profile{Threads: []*Node{th}}, JavaNames)
	kids := q.Threads[0].Children
	require.Len(t, kids, 30)
	for i, k := range kids {
		assert.Equal(t, fmt.Sprintf("a.B.f%d()", i), k.Name)
	}
	var calls uint64
	for _, k := range kids {
		calls += k.Calls
	}
	assert.Equal(t, uint64(80), calls)
	assert.Equal(t, uint64(2+2), kids[0].Calls, "f0: twice in each type")
}

// BenchmarkRename renames a deep and wide tree of many methods.
func BenchmarkRename(b *testing.B) {
	p := randomBig(200000)
	b.ResetTimer()
	for range b.N {
		Rename(p, JavaNames)
	}
}

// randomBig is a profile of about n nodes with realistic method names.
func randomBig(n int) *Profile {
	rng := rand.New(rand.NewSource(1))
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("%c:pkg%d/sub/Class%d.method%d(ILjava/lang/String;[J)V", "IJij"[rng.Intn(4)], i%50, i%700, i)
	}
	root := &Node{Name: "00000001_main"}
	nodes := []*Node{root}
	for len(nodes) < n {
		parent := nodes[rng.Intn(len(nodes))]
		c := &Node{Name: names[rng.Intn(len(names))], Calls: 1, Base: []uint64{10}}
		parent.Children = append(parent.Children, c)
		nodes = append(nodes, c)
	}
	return &Profile{Metrics: testMetrics[:1], Threads: []*Node{root}}
}
