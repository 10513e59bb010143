// Package casegen writes java/src/TrainerCases.java, the call patterns of
// the Java trainer.
//
// Calibration needs, for every sequence key (a, t1, b, t2, c), events in
// which the method of type b does as little as possible between the two
// events, so that the minimum delta is glue only. Only b's body matters:
// a and c just have to be of the right type. So the trainer has
//
//   - leaves of each type t in {i, I, n, N} that return (tRet) or throw a
//     preallocated exception (tThr);
//   - "b-role" methods of each type b whose bodies are exactly one of the
//     shapes below, for every callee type X (and Y) — leaves only, so the
//     callee's type is all that differs:
//     call_X      X.ret();                            (a,En,b,En,X) (X,Ex,b,Ex,a)
//     prop_X      X.thr();   — not caught             (X,Xx,b,Xx,a)
//     callthrow_X X.ret(); throw;                     (X,Ex,b,Xx,a)
//     catch_X     try { X.thr(); } catch {}           (X,Xx,b,Ex,a)
//     seq_X_Y     X.ret(); Y.ret();                   (X,Ex,b,En,Y)
//     seqx_X_Y    try { X.thr(); } catch {} Y.ret();  (X,Xx,b,En,Y)
//     Java b-roles are generated methods; native b-roles are one native per
//     type (nAct, NAct in java/native/trainer.c) told the shape and the
//     callees by arguments;
//   - Java leaves that return have a twin with one store in its body for
//     native callers: HotSpot's JavaCalls skip a bare "return" method
//     called through JNI altogether, so it would produce no events;
//   - drivers of each type a in {i, I, n, N, O} that call any b-role
//     method or leaf (and catch what it throws): a switch in Java, a table
//     of jmethodIDs in C, and for O a native thread attached to the JVM,
//     whose root calls them.
//
// Every leaf and b-role method is a "callable" with an index shared by
// the Java drivers and the C table.
package casegen

import (
	"bytes"
	"fmt"
	"strings"
)

// Types the patterns use: what HotSpot reports with method events on
// (every method runs interpreted then), static and instance.
var types = []byte{'i', 'I', 'n', 'N'}

func isStatic(t byte) bool { return t == 'i' || t == 'n' }
func isNative(t byte) bool { return t == 'n' || t == 'N' }

// Shapes of native b-roles; the numbers are shared with trainer.c.
const (
	formCall      = 2 // call x; return (with x's exception, if any)
	formCallThrow = 3 // call x; throw
	formCatch     = 4 // call x; clear its exception; return
	formSeq       = 5 // call x; clear its exception; call y; return
)

// Callable is one method a driver can call.
type Callable struct {
	Index  int
	Name   string // readable, for the trainer's summary: "n.seqx(I,N)"
	Method string // Java method name
	Type   byte   // the method's type letter
	Form   int    // native b-roles: shape; 0 for Java methods and leaves
	X, Y   int    // native b-roles: callee callables
	Throws bool   // a call of it ends in an exception
	Native bool   // needs the trainer's native library (itself or a callee)
	// JNIMethod is the method native callers call for this callable, when
	// it is not Method: HotSpot's JavaCalls skip a method whose body is a
	// bare return when called through JNI — no frame, no events — so
	// native code calls a twin with one store in its body.
	JNIMethod string
}

func (c *Callable) act() bool { return c.Form != 0 }

// leaf returns the index of the leaf of type t that returns (thr false)
// or throws.
func leaf(t byte, thr bool) int {
	i := strings.IndexByte(string(types), t) * 2
	if thr {
		i++
	}
	return i
}

func leafName(t byte, thr bool) string {
	if thr {
		return string(t) + "Thr"
	}
	return string(t) + "Ret"
}

// shape is one b-role body.
type shape struct {
	name      string
	x, y      byte // callee types (y only for seq shapes)
	xThr      bool // x is the throwing leaf
	two       bool // calls y after x
	throwsEnd bool // b throws after x returns
	catch     bool // b catches x's exception
}

func shapes() []shape {
	var out []shape
	for _, x := range types {
		out = append(out,
			shape{name: "call", x: x},
			shape{name: "prop", x: x, xThr: true},
			shape{name: "callthrow", x: x, throwsEnd: true},
			shape{name: "catch", x: x, xThr: true, catch: true},
		)
	}
	for _, x := range types {
		for _, y := range types {
			out = append(out,
				shape{name: "seq", x: x, y: y, two: true},
				shape{name: "seqx", x: x, y: y, xThr: true, catch: true, two: true},
			)
		}
	}
	return out
}

func (s shape) throws() bool { return s.throwsEnd || (s.xThr && !s.catch) }

func (s shape) args() string {
	if s.two {
		return fmt.Sprintf("%c,%c", s.x, s.y)
	}
	return string(s.x)
}

func (s shape) suffix() string { return strings.ReplaceAll(s.args(), ",", "_") }

// Callables lists every callable in index order: the 8 leaves, then the
// b-roles of i, I, n and N (Java ones first, as the types are ordered).
func Callables() []Callable {
	var out []Callable
	add := func(c Callable) {
		c.Index = len(out)
		out = append(out, c)
	}
	for _, t := range types {
		for _, thr := range []bool{false, true} {
			c := Callable{Name: fmt.Sprintf("%c.%s", t, map[bool]string{false: "ret", true: "thr"}[thr]),
				Method: leafName(t, thr), Type: t, Throws: thr, Native: isNative(t)}
			if !thr && !isNative(t) {
				c.JNIMethod = c.Method + "JNI"
			}
			add(c)
		}
	}
	for _, b := range types {
		for _, s := range shapes() {
			c := Callable{
				Name:   fmt.Sprintf("%c.%s(%s)", b, s.name, s.args()),
				Type:   b,
				Throws: s.throws(),
				Native: isNative(b) || isNative(s.x) || (s.two && isNative(s.y)),
			}
			if !isNative(b) {
				c.Method = fmt.Sprintf("%c_%s_%s", b, s.name, s.suffix())
				add(c)
				continue
			}
			c.Method = string(b) + "Act"
			c.X = leaf(s.x, s.xThr)
			switch {
			case s.two:
				c.Form, c.Y = formSeq, leaf(s.y, false)
			case s.throwsEnd:
				c.Form = formCallThrow
			case s.catch:
				c.Form = formCatch
			default:
				c.Form = formCall
			}
			add(c)
		}
	}
	return out
}

// callExpr is a Java call of callable c from a static or instance method.
func callExpr(c *Callable, fromStatic bool) string {
	recv := ""
	if !isStatic(c.Type) && fromStatic {
		recv = "R."
	}
	if c.act() {
		return fmt.Sprintf("%s%s(%d, %d, %d)", recv, c.Method, c.Form, c.X, c.Y)
	}
	return recv + c.Method + "()"
}

// Generate returns the text of TrainerCases.java.
func Generate() []byte {
	cs := Callables()
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p(`// Code generated by trainer/internal/casegen; DO NOT EDIT.
// Regenerate: go test ./trainer/internal/casegen -update

/**
 * The trainer's call patterns (see trainer/internal/casegen for the design).
 * Leaves of each type return or throw; b-role methods have bodies of exactly
 * one shape each, so that the delta between their two events is glue only;
 * drivers of each type call any of them. Natives are in
 * java/native/trainer.c (library jptrainer).
 */
final class TrainerCases {
    /** Thrown by the patterns: preallocated, no stack trace, so a throw is
     *  an athrow and an unwind, nothing more. */
    static final class Thrown extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Thrown() { super("libjprof trainer", null, false, false); }
    }

    static final Thrown EX = new Thrown();
    static final TrainerCases R = new TrainerCases();

    static final int NCALLABLES = %d;
    static final int NLEAVES = 8;

`, len(cs))

	p("    // Leaves.\n")
	for _, c := range cs[:8] {
		body := "{ }"
		if c.Throws {
			body = "{ throw EX; }"
		}
		if c.JNIMethod != "" {
			mod := ""
			if isStatic(c.Type) {
				mod = "static "
			}
			p("    %svoid %s() { int jni = 0; } // for native callers: not a bare return\n", mod, c.JNIMethod)
		}
		switch {
		case isNative(c.Type) && isStatic(c.Type):
			p("    static native void %s();\n", c.Method)
		case isNative(c.Type):
			p("    native void %s();\n", c.Method)
		case isStatic(c.Type):
			p("    static void %s() %s\n", c.Method, body)
		default:
			p("    void %s() %s\n", c.Method, body)
		}
	}

	p(`
    // Native b-roles, drivers and set-up (java/native/trainer.c).
    static native void nAct(int form, int x, int y);
    native void NAct(int form, int x, int y);
    static native int nDrive(int callable, int reps);
    native int NDrive(int callable, int reps);
    static native int rootDrive(int[] callables, int reps);
    static native long nEnv(int callable, int n);
    native long NEnv(int callable, int n);
    static native void setup(TrainerCases recv, Thrown ex, String[] names, String[] sigs, int[] flags,
                             int[] forms, int[] xs, int[] ys);

    // Java b-roles: one shape each.
`)
	byMethod := map[string]*Callable{}
	for i := range cs {
		byMethod[cs[i].Method] = &cs[i]
	}
	for _, bt := range []byte{'i', 'I'} {
		static := isStatic(bt)
		for _, s := range shapes() {
			x := byMethod[leafName(s.x, s.xThr)]
			callX := callExpr(x, static) + ";"
			var body string
			switch {
			case s.two && s.catch:
				body = fmt.Sprintf("try { %s } catch (Thrown e) { } %s;", callX, callExpr(byMethod[leafName(s.y, false)], static))
			case s.two:
				body = fmt.Sprintf("%s %s;", callX, callExpr(byMethod[leafName(s.y, false)], static))
			case s.catch:
				body = fmt.Sprintf("try { %s } catch (Thrown e) { }", callX)
			case s.throwsEnd:
				body = callX + " throw EX;"
			default:
				body = callX
			}
			mod := ""
			if static {
				mod = "static "
			}
			p("    %svoid %c_%s_%s() { %s }\n", mod, bt, s.name, s.suffix(), body)
		}
	}

	p("\n    // Callables, by index: shared with the C table (setup).\n")
	p("    static final String[] NAMES = {\n")
	for _, c := range cs {
		p("        %q,\n", c.Name)
	}
	p("    };\n")
	boolArray := func(name string, f func(c *Callable) bool) {
		p("    static final boolean[] %s = {", name)
		for i := range cs {
			if i%16 == 0 {
				p("\n       ")
			}
			p(" %t,", f(&cs[i]))
		}
		p("\n    };\n")
	}
	boolArray("THROWS", func(c *Callable) bool { return c.Throws })
	boolArray("NATIVE", func(c *Callable) bool { return c.Native })

	p(`
    /** Hands the callables to the native side, which calls them by index. */
    static void register() {
        String[] names = new String[NCALLABLES];
        String[] sigs = new String[NCALLABLES];
        int[] flags = new int[NCALLABLES];
        int[] forms = new int[NCALLABLES];
        int[] xs = new int[NCALLABLES];
        int[] ys = new int[NCALLABLES];
`)
	for _, c := range cs {
		flags, sig := 0, "()V"
		if isStatic(c.Type) {
			flags |= 1
		}
		if c.act() {
			flags |= 2
			sig = "(III)V"
		}
		name := c.Method
		if c.JNIMethod != "" {
			name = c.JNIMethod
		}
		p("        names[%d] = %q; sigs[%d] = %q; flags[%d] = %d;", c.Index, name, c.Index, sig, c.Index, flags)
		if c.act() {
			p(" forms[%d] = %d; xs[%d] = %d; ys[%d] = %d;", c.Index, c.Form, c.Index, c.X, c.Index, c.Y)
		}
		p("\n")
	}
	p("        setup(R, EX, names, sigs, flags, forms, xs, ys);\n    }\n")

	// Drivers.
	for _, dt := range []byte{'i', 'I'} {
		static := isStatic(dt)
		mod := ""
		if static {
			mod = "static "
		}
		p(`
    /** Driver of type %c: calls callable c reps times, catching what it
     *  throws; returns how many calls threw. */
    %sint %cDrive(int c, int reps) {
        int caught = 0;
        for (int r = 0; r < reps; r++) {
            try {
                switch (c) {
`, dt, mod, dt)
		for _, c := range cs {
			p("                case %d: %s; break;\n", c.Index, callExpr(&c, static))
		}
		p(`                default: throw new IllegalArgumentException("no callable " + c);
                }
            } catch (Thrown e) {
                caught++;
            }
        }
        return caught;
    }
`)
	}

	// Environmental loops: caller type x leaf, and the empty loop.
	p("\n    // Environmental overhead, Java callers: n calls of a leaf, timed.\n")
	for _, ct := range []byte{'i', 'I'} {
		static := isStatic(ct)
		mod := ""
		if static {
			mod = "static "
		}
		p("    %slong %cEnvBase(int n) {\n        long t0 = System.nanoTime();\n        for (int k = 0; k < n; k++) { }\n        return System.nanoTime() - t0;\n    }\n", mod, ct)
		for _, c := range cs[:8] {
			call := callExpr(&c, static) + ";"
			if c.Throws {
				call = "try { " + call + " } catch (Thrown e) { }"
			}
			p("    %slong %cEnv_%s(int n) {\n        long t0 = System.nanoTime();\n        for (int k = 0; k < n; k++) { %s }\n        return System.nanoTime() - t0;\n    }\n",
				mod, ct, c.Method, call)
		}
	}
	p(`
    /** Times n calls of leaf (or of nothing, leaf < 0) from a Java caller
     *  of type caller ('i' or 'I'); ns. */
    static long envJava(char caller, int leaf, int n) {
        if (caller == 'i') {
            switch (leaf) {
`)
	for _, c := range cs[:8] {
		p("            case %d: return iEnv_%s(n);\n", c.Index, c.Method)
	}
	p("            default: return iEnvBase(n);\n            }\n        }\n        switch (leaf) {\n")
	for _, c := range cs[:8] {
		p("        case %d: return R.IEnv_%s(n);\n", c.Index, c.Method)
	}
	p("        default: return R.IEnvBase(n);\n        }\n    }\n}\n")
	return b.Bytes()
}
