package calibration

import (
	"fmt"
	"strings"
)

// Key identifies a sequence of method types and transitions around one
// delta: (a, t1, b, t2, c) where event k−1 left a method of type a by
// transition t1, a method of type b ran until event k, which is transition
// t2 into (or back to) a method of type c. Event k−1's "to" type is b
// itself, so five elements describe both events.
//
// The encoding (((a*3+t1)*8+b)*3+t2)*8+c is shared with the agent's C code
// (jp_key in jvmti/jp.h) and with calibration tables: do not change it.
type Key uint16

// NKeys is the number of keys, 8·3·8·3·8.
const NKeys = NTypes * NTransitions * NTypes * NTransitions * NTypes

// MakeKey encodes a sequence. It panics if a type or transition is out of
// range: that is a programming error, and a wrong key would silently
// calibrate against another sequence's minimum.
func MakeKey(a Type, t1 Transition, b Type, t2 Transition, c Type) Key {
	if a >= NTypes || b >= NTypes || c >= NTypes || t1 >= NTransitions || t2 >= NTransitions {
		panic(fmt.Sprintf("calibration.MakeKey(%d, %d, %d, %d, %d): out of range", a, t1, b, t2, c))
	}
	return Key((((uint(a)*NTransitions+uint(t1))*NTypes+uint(b))*NTransitions+uint(t2))*NTypes + uint(c))
}

// Parts decodes a key.
func (k Key) Parts() (a Type, t1 Transition, b Type, t2 Transition, c Type) {
	x := uint(k)
	c = Type(x % NTypes)
	x /= NTypes
	t2 = Transition(x % NTransitions)
	x /= NTransitions
	b = Type(x % NTypes)
	x /= NTypes
	t1 = Transition(x % NTransitions)
	x /= NTransitions
	a = Type(x)
	return
}

// InRange says whether k is one of the NKeys keys.
func (k Key) InRange() bool { return int(k) < NKeys }

// String is the key's readable form, e.g. "Interp-En-interp-Ex-Interp";
// ParseKey reads it back.
func (k Key) String() string {
	if !k.InRange() {
		return fmt.Sprintf("Key(%d)", uint16(k))
	}
	a, t1, b, t2, c := k.Parts()
	return a.String() + "-" + t1.String() + "-" + b.String() + "-" + t2.String() + "-" + c.String()
}

// Letters is the key in JProf letters, e.g. "I-En-i-Ex-I".
func (k Key) Letters() string {
	a, t1, b, t2, c := k.Parts()
	return string(a.Letter()) + "-" + t1.String() + "-" + string(b.Letter()) + "-" + t2.String() + "-" + string(c.Letter())
}

// ParseKey reads a key written by Key.String or Key.Letters (the two forms
// may be mixed: each type is a name or a letter).
func ParseKey(s string) (Key, error) {
	f := strings.Split(s, "-")
	if len(f) != 5 {
		return 0, fmt.Errorf("calibration key %q: want type-transition-type-transition-type", s)
	}
	var ty [3]Type
	var tr [2]Transition
	for i := range ty {
		t, err := ParseType(f[2*i])
		if err != nil {
			return 0, fmt.Errorf("calibration key %q: %w", s, err)
		}
		ty[i] = t
	}
	for i := range tr {
		t, err := ParseTransition(f[2*i+1])
		if err != nil {
			return 0, fmt.Errorf("calibration key %q: %w", s, err)
		}
		tr[i] = t
	}
	return MakeKey(ty[0], tr[0], ty[1], tr[1], ty[2]), nil
}

// Valid says whether the sequence can occur in a real program. It is
// deliberately conservative: it rules out only what the semantics of calls
// and returns forbid for every JVM, so that a table never drops a key a
// real run produces. The one rule:
//
//   - Return to the caller. If event k−1 entered b from a (t1 = En) and
//     event k is an exit (t2 = Ex or Xx), that exit is b's own — b made no
//     call in between, or there would have been an event — and a method
//     returns, normally or by exception, to the method that called it:
//     c = a. This is seed 000's example "JITed-enters-Native-exits-to-
//     Native" and seed 004's "a return from a method must be to the same
//     type of method that called it".
//
// What Valid allows, on purpose:
//   - any type calling any type, natives included: JNI code calls Java and
//     native methods (Call<Type>Method), so native → Java, native → native
//     and Java → native entries all happen, and Java methods return to
//     natives;
//   - a return into a native (t1 = Ex/Xx, b native): the native had called
//     back into Java; it may then call again, return, or return with the
//     exception pending (HotSpot reports that as an exit by exception);
//   - Other anywhere: it stands for the thread root, for frames whose entry
//     was never seen (profiling started inside them) and for methods the
//     agent could not resolve, so nothing can be said about it;
//   - Compiling anywhere: no JVM the agent supports reports it today, and
//     the rule above is all that is certain about it.
//
// The agent itself can record an invalid key only after an anomaly its
// log-msg counts (frames popped without their own exit), which JVMTI never
// produces.
func Valid(k Key) bool {
	if !k.InRange() {
		return false
	}
	a, t1, _, t2, c := k.Parts()
	if t1 == En && t2.IsExit() && c != a {
		return false
	}
	return true
}

// ValidKeys lists the valid keys whose three types are all in types (all
// valid keys when types is empty), in key order.
func ValidKeys(types ...Type) []Key {
	var in [NTypes]bool
	for _, t := range types {
		if t < NTypes {
			in[t] = true
		}
	}
	var out []Key
	for k := Key(0); k < NKeys; k++ {
		if !Valid(k) {
			continue
		}
		if len(types) > 0 {
			a, _, b, _, c := k.Parts()
			if !in[a] || !in[b] || !in[c] {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}
