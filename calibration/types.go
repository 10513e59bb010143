package calibration

import (
	"fmt"
	"strings"
)

// Type is the kind of a method, as far as the cost of the glue around it
// goes. The order is JProf's letter order "iIjJnNCO" and is shared with the
// agent's C code: do not change it.
type Type uint8

const (
	InterpStatic Type = iota // i: interpreted, static
	Interp                   // I: interpreted, instance
	JITStatic                // j: JIT-compiled, static
	JIT                      // J: JIT-compiled, instance
	NativeStatic             // n: native, static
	Native                   // N: native, instance
	Compiling                // C: being compiled
	Other                    // O: kind unknown; also the thread root

	NTypes = 8
)

// TypeLetters are JProf's one-letter type prefixes, indexed by Type (lower
// case: static).
const TypeLetters = "iIjJnNCO"

// typeNames are the names used in keys and tables, in the spirit of seed
// 000 Table 1: lower case for static methods, capitalised for instance
// methods. Compiling and Other have no static form and keep their capital,
// like their letters C and O, so that a lower-case name always means
// static.
var typeNames = [NTypes]string{"interp", "Interp", "jitted", "Jitted", "native", "Native", "Compiling", "Other"}

// String is the type's table name, e.g. "jitted" or "Native".
func (t Type) String() string {
	if t < NTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

// Letter is the type's JProf letter, e.g. 'J'.
func (t Type) Letter() byte {
	if t < NTypes {
		return TypeLetters[t]
	}
	return '?'
}

// Static says whether the type is one of the static method kinds.
func (t Type) Static() bool { return t < Compiling && t%2 == 0 }

// IsNative says whether methods of this type run native code.
func (t Type) IsNative() bool { return t == NativeStatic || t == Native }

// ParseType reads a type from its table name ("jitted") or its letter
// ("j"). Case matters: it tells static from instance.
func ParseType(s string) (Type, error) {
	for i, n := range typeNames {
		if s == n {
			return Type(i), nil
		}
	}
	if len(s) == 1 {
		if i := strings.IndexByte(TypeLetters, s[0]); i >= 0 {
			return Type(i), nil
		}
	}
	return 0, fmt.Errorf("unknown method type %q (want one of %s or a letter of %q)",
		s, strings.Join(typeNames[:], ", "), TypeLetters)
}

// TypeOfLetter returns the type of a JProf letter, as found in the type
// prefix of method names in log-rt and log-gen ("J:hellop.myA()V").
func TypeOfLetter(c byte) (Type, bool) {
	i := strings.IndexByte(TypeLetters, c)
	return Type(i), i >= 0
}

// Transition is the kind of a method event. The order is shared with the
// agent's C code.
type Transition uint8

const (
	En Transition = iota // method entry
	Ex                   // normal method exit
	Xx                   // exit by a thrown exception (was_popped_by_exception)

	NTransitions = 3
)

var transitionNames = [NTransitions]string{"En", "Ex", "Xx"}

// String is the transition's table name: "En", "Ex" or "Xx".
func (tr Transition) String() string {
	if tr < NTransitions {
		return transitionNames[tr]
	}
	return fmt.Sprintf("Transition(%d)", uint8(tr))
}

// IsExit says whether the transition leaves a method.
func (tr Transition) IsExit() bool { return tr == Ex || tr == Xx }

// ParseTransition reads "En", "Ex" or "Xx".
func ParseTransition(s string) (Transition, error) {
	for i, n := range transitionNames {
		if s == n {
			return Transition(i), nil
		}
	}
	return 0, fmt.Errorf("unknown transition %q (want En, Ex or Xx)", s)
}
