package calibration

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKey4(t *testing.T) {
	assert.Equal(t, 576, NKeys4)
	for k := Key(0); k < NKeys; k++ {
		a, t1, b, t2, c := k.Parts()
		f := k.Four()
		g1, gb, g2, gc := f.Parts()
		require.Equal(t, []uint8{uint8(t1), uint8(b), uint8(t2), uint8(c)}, []uint8{uint8(g1), uint8(gb), uint8(g2), uint8(gc)})
		require.Equal(t, k, Key(int(a)*NKeys4+int(f)), "a key is a·576 + its 4-element key")
		p, err := ParseKey4(f.String())
		require.NoError(t, err)
		require.Equal(t, f, p)
	}
	assert.Equal(t, "En-jitted-Ex-Jitted", MakeKey(Interp, En, JITStatic, Ex, JIT).Four().String())
	for _, bad := range []string{"En-jitted-Ex", "Other-En-jitted-Ex-Jitted", "En-jitted-Ex-x"} {
		_, err := ParseKey4(bad)
		assert.Error(t, err, bad)
	}
}

// Seed 000 Table 1 reads as a 4-element view of a 5-element table.
func TestFourElement(t *testing.T) {
	tab := NewTable(Provenance{Metric: "PTT_INSTS", JVM: "IBM J9", JVMVersion: "5.0", Backend: "perfctr"})
	set := func(s string, e Entry) {
		k, err := ParseKey(s)
		require.NoError(t, err)
		tab.Entries[k] = e
	}
	set("jitted-En-jitted-En-native", Entry{Min: 31, Env: 1, Count: 5})
	set("Jitted-En-jitted-En-native", Entry{Min: 28, Env: 2, Count: 7})
	set("Other-En-jitted-En-native", Entry{Min: Unseen, Env: 1})
	set("jitted-Ex-Jitted-En-native", Entry{Min: 38, Env: 1, Count: 1})
	set("Other-En-Other-En-Other", Entry{Min: Unseen, Env: 1})

	four := tab.FourElement()
	k1, _ := ParseKey4("En-jitted-En-native")
	k2, _ := ParseKey4("Ex-Jitted-En-native")
	k3, _ := ParseKey4("En-Other-En-Other")
	assert.Equal(t, map[Key4]FourEntry{
		k1: {Min: 28, Env: 2, Count: 12},
		k2: {Min: 38, Env: 1, Count: 1},
		k3: {Min: Unseen, Env: 1},
	}, four)

	var b bytes.Buffer
	require.NoError(t, tab.WriteFourElement(&b))
	assert.Equal(t, ` Calibration minima, PTT_INSTS (PTT backend perfctr)
 JVM: IBM J9 5.0

 Transition                 Min        Env        Count
 En-jitted-En-native         28          2           12
 Ex-Jitted-En-native         38          1            1
`, b.String())
}
