package calibration

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Key4 is the paper's 4-element sequence (t1, b, t2, c): the key without
// the type that ran before the previous event. Seed 000 Table 1 is in this
// form, e.g. "En-jitted-En-native 28": a static JIT-compiled method was
// entered and then entered a static native method.
type Key4 uint16

// NKeys4 is the number of 4-element keys, 3·8·3·8.
const NKeys4 = NTransitions * NTypes * NTransitions * NTypes

// Four drops the first element of a key. The encodings nest: a Key is
// a·576 + its Key4.
func (k Key) Four() Key4 { return Key4(uint(k) % NKeys4) }

// Parts decodes a 4-element key.
func (k Key4) Parts() (t1 Transition, b Type, t2 Transition, c Type) {
	_, t1, b, t2, c = Key(k).Parts()
	return
}

// String is the paper's form, e.g. "En-jitted-Ex-Jitted".
func (k Key4) String() string {
	if int(k) >= NKeys4 {
		return fmt.Sprintf("Key4(%d)", uint16(k))
	}
	t1, b, t2, c := k.Parts()
	return t1.String() + "-" + b.String() + "-" + t2.String() + "-" + c.String()
}

// ParseKey4 reads a 4-element key written by Key4.String.
func ParseKey4(s string) (Key4, error) {
	if strings.Count(s, "-") != 3 {
		return 0, fmt.Errorf("calibration key %q: want transition-type-transition-type", s)
	}
	k, err := ParseKey("Other-" + s) // any first type will do: Four drops it
	if err != nil {
		return 0, fmt.Errorf("calibration key %q: %w", s, err)
	}
	return k.Four(), nil
}

// FourEntry is a 4-element key's summary over the first element.
type FourEntry struct {
	Min   uint64 // minimum over the 5-element keys; Unseen if none was seen
	Env   uint64 // Env of the 5-element key the minimum comes from
	Count uint64 // events, summed over the 5-element keys
}

// FourElement summarises the table in the paper's 4-element form: for each
// (t1, b, t2, c) that any key of the table has, the minimum over the first
// type a.
func (t *Table) FourElement() map[Key4]FourEntry {
	out := map[Key4]FourEntry{}
	for _, k := range t.Keys() { // key order, so ties keep the first a
		e := t.Entries[k]
		k4 := k.Four()
		cur, ok := out[k4]
		if !ok {
			out[k4] = FourEntry{Min: e.Min, Env: e.Env, Count: e.Count}
			continue
		}
		if e.Min < cur.Min {
			cur.Min, cur.Env = e.Min, e.Env
		}
		cur.Count += e.Count
		out[k4] = cur
	}
	return out
}

// WriteFourElement writes the 4-element view as a jprof-style report in the
// layout of seed 000 Table 1: one row per sequence seen, in key order, with
// the minimum, the environmental overhead of that minimum and the event
// count.
func (t *Table) WriteFourElement(w io.Writer) error {
	four := t.FourElement()
	keys := make([]Key4, 0, len(four))
	for k, e := range four {
		if e.Min != Unseen {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, " Calibration minima, %s", orUnknown(t.Metric))
	if t.Backend != "" {
		fmt.Fprintf(bw, " (PTT backend %s)", t.Backend)
	}
	fmt.Fprintf(bw, "\n JVM: %s %s\n\n", orUnknown(t.JVM), t.JVMVersion)
	width := len("Transition")
	for _, k := range keys {
		width = max(width, len(k.String()))
	}
	fmt.Fprintf(bw, " %-*s %10s %10s %12s\n", width, "Transition", "Min", "Env", "Count")
	for _, k := range keys {
		e := four[k]
		fmt.Fprintf(bw, " %-*s %10d %10d %12d\n", width, k.String(), e.Min, e.Env, e.Count)
	}
	return bw.Flush()
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
