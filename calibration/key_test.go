package calibration

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTypeNames(t *testing.T) {
	for ty := Type(0); ty < NTypes; ty++ {
		got, err := ParseType(ty.String())
		require.NoError(t, err)
		assert.Equal(t, ty, got)
		got, err = ParseType(string(ty.Letter()))
		require.NoError(t, err)
		assert.Equal(t, ty, got)
		l, ok := TypeOfLetter(TypeLetters[ty])
		assert.True(t, ok)
		assert.Equal(t, ty, l)
	}
	tests := []struct {
		ty             Type
		name           string
		static, native bool
	}{
		{InterpStatic, "interp", true, false},
		{Interp, "Interp", false, false},
		{JITStatic, "jitted", true, false},
		{JIT, "Jitted", false, false},
		{NativeStatic, "native", true, true},
		{Native, "Native", false, true},
		{Compiling, "Compiling", false, false},
		{Other, "Other", false, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.name, tc.ty.String())
		assert.Equal(t, tc.static, tc.ty.Static(), tc.name)
		assert.Equal(t, tc.native, tc.ty.IsNative(), tc.name)
	}
	for _, bad := range []string{"", "JITTED", "x", "iI", "other"} {
		_, err := ParseType(bad)
		assert.Error(t, err, bad)
	}
	_, ok := TypeOfLetter('x')
	assert.False(t, ok)
}

func TestKeyEncoding(t *testing.T) {
	seen := map[Key]bool{}
	for a := Type(0); a < NTypes; a++ {
		for t1 := Transition(0); t1 < NTransitions; t1++ {
			for b := Type(0); b < NTypes; b++ {
				for t2 := Transition(0); t2 < NTransitions; t2++ {
					for c := Type(0); c < NTypes; c++ {
						k := MakeKey(a, t1, b, t2, c)
						// The C side's formula, jp_key in jvmti/jp.h.
						require.Equal(t, Key((((int(a)*3+int(t1))*8+int(b))*3+int(t2))*8+int(c)), k)
						require.True(t, k.InRange())
						require.False(t, seen[k])
						seen[k] = true
						ga, gt1, gb, gt2, gc := k.Parts()
						require.Equal(t, []uint8{uint8(a), uint8(t1), uint8(b), uint8(t2), uint8(c)},
							[]uint8{uint8(ga), uint8(gt1), uint8(gb), uint8(gt2), uint8(gc)})
						for _, s := range []string{k.String(), k.Letters()} {
							p, err := ParseKey(s)
							require.NoError(t, err, s)
							require.Equal(t, k, p, s)
						}
					}
				}
			}
		}
	}
	assert.Len(t, seen, NKeys)
	assert.Equal(t, 4608, NKeys)
	assert.False(t, Key(NKeys).InRange())
	assert.Panics(t, func() { MakeKey(NTypes, En, Other, En, Other) })
	assert.Panics(t, func() { MakeKey(Other, NTransitions, Other, En, Other) })
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		key     Key
		str     string
		letters string
	}{
		{MakeKey(Interp, En, InterpStatic, Ex, Interp), "Interp-En-interp-Ex-Interp", "I-En-i-Ex-I"},
		{MakeKey(JIT, En, Native, Xx, JIT), "Jitted-En-Native-Xx-Jitted", "J-En-N-Xx-J"},
		{MakeKey(Other, En, Compiling, En, JITStatic), "Other-En-Compiling-En-jitted", "O-En-C-En-j"},
		{0, "interp-En-interp-En-interp", "i-En-i-En-i"},
		{NKeys - 1, "Other-Xx-Other-Xx-Other", "O-Xx-O-Xx-O"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.str, tc.key.String())
		assert.Equal(t, tc.letters, tc.key.Letters())
	}
	mixed, err := ParseKey("I-En-interp-Ex-Interp")
	require.NoError(t, err)
	assert.Equal(t, tests[0].key, mixed)
	assert.Equal(t, "Key(4608)", Key(NKeys).String())
}

func TestParseKeyErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "want type-transition-type"},
		{"Interp-En-interp-Ex", "want type-transition-type"},
		{"Interp-En-interp-Ex-Interp-En", "want type-transition-type"},
		{"Interp-En-interp-Out-Interp", `unknown transition "Out"`},
		{"Interp-En-INTERP-Ex-Interp", `unknown method type "INTERP"`},
		{"Interp-Ex-interp-Ex-x", `unknown method type "x"`},
	}
	for _, tc := range tests {
		_, err := ParseKey(tc.in)
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		key   string
		valid bool
	}{
		// Seed 000: JITed enters Native, which exits to Native: invalid,
		// the native must return to the JITed method that called it.
		{"Jitted-En-Native-Ex-Native", false},
		{"Jitted-En-Native-Ex-Jitted", true},
		{"Jitted-En-Native-Xx-Jitted", true},
		{"Jitted-En-Native-Xx-native", false},
		{"interp-En-Interp-Ex-Other", false},
		{"Other-En-Interp-Ex-Other", true},
		// Natives call Java and natives through JNI, and are returned to.
		{"Native-En-interp-En-native", true},
		{"interp-Ex-native-En-native", true},
		{"interp-Ex-Native-Ex-Interp", true},
		{"interp-Xx-Native-Xx-Interp", true},
		{"interp-Xx-native-En-Interp", true},
		// Exit after exit: b's caller is not known from the key.
		{"interp-Ex-Interp-Ex-native", true},
		// Entry after entry, exit then entry: anything goes.
		{"native-En-native-En-native", true},
		{"Compiling-Ex-Other-En-Compiling", true},
	}
	for _, tc := range tests {
		k, err := ParseKey(tc.key)
		require.NoError(t, err)
		assert.Equal(t, tc.valid, Valid(k), tc.key)
	}
	assert.False(t, Valid(NKeys))

	// Of the 8·8·2·8 keys that enter and then exit, only c = a is valid.
	assert.Len(t, ValidKeys(), NKeys-8*8*2*7)
	// What the trainer aims at on HotSpot with method events on
	// (interpreted and native, static and instance).
	assert.Len(t, ValidKeys(InterpStatic, Interp, NativeStatic, Native), 4*3*4*3*4-4*4*2*3)
	assert.Len(t, ValidKeys(InterpStatic, Interp, NativeStatic, Native, Other), 5*3*5*3*5-5*5*2*4)
}

// Valid must not rule out anything a program can do: random programs
// over every type, with exception exits and exits of frames entered before
// profiling started, reach exactly the valid keys.
func TestValidReachable(t *testing.T) {
	o := newSimOverheads(rand.New(rand.NewSource(1)))
	evs := simulate(simConfig{seed: 21, threads: 8, events: 200000, maxDepth: 6,
		types: allTypes, pZero: 1, pUnmatched: 0.3}, o)
	reached := map[Key]bool{}
	for _, ev := range evs {
		if !Valid(ev.Key) {
			t.Fatalf("a program produced %s", ev.Key)
		}
		reached[ev.Key] = true
	}
	var missing []string
	for _, k := range ValidKeys() {
		if !reached[k] {
			missing = append(missing, k.String())
		}
	}
	assert.Empty(t, missing, "valid keys no program reached")
}
