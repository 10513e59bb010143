/** Methods BCI leaves out by default (trivial: no call but into java.base
 *  or to trivial methods, no loop, no handler that recovers, no monitor,
 *  at most 35 bytes of bytecode, paths that end in a throw, or in a call to a method of the class's own
 *  that never returns, not counted)
 *  and methods just past each of those lines, called a known number of
 *  times. */
public class TrivialCases {
    static final int N = 1000;
    private int field;
    private static long total;
    private final Box box = new Box();

    interface Getter { int get(); }

    /** Another class's trivial methods, found in its class file (it is
     *  not loaded when TrivialCases is). */
    static final class Box implements Getter {
        int v = 7;
        public int get() { return v; }
        static void fail() { throw new IllegalStateException("box"); }
    }

    /** Calls through a subclass's name to a superclass's method: the JVM
     *  runs the nearest superclass's, a JDK class's (ThreadLocal.get) or
     *  another trivial one (Box.get), and a JDK method without code
     *  (AbstractList.get: the subclass's runs) is not trivial. */
    static final class Local extends ThreadLocal<Integer> {
        Integer peek() { return get(); }
    }
    static final class SubBox extends BoxBase {
        int viaSuper() { return base() + 1; }
    }
    static class BoxBase {
        int b = 3;
        int base() { return b; }
    }
    static final class Items extends java.util.AbstractList<Integer> {
        public Integer get(int i) { int s = 0; for (int k = 0; k < i; k++) s += k; return s; }
        public int size() { return 3; }
        Integer first() { return get(2); }
    }
    // Static: TrivialCases's constructor stays trivial.
    private static final Local LOCAL = new Local();
    private static final SubBox SUB = new SubBox();
    private static final Items ITEMS = new Items();

    // Trivial.
    int getField() { return field; }
    void setField(int v) { field = v; }
    void empty() {}
    static int constant() { return 42; }
    static int arith(int a, int b) { return a * 31 + b; }
    static int branchy(int a) { return a > 0 ? a : -a; }
    static int callsJdk(int a) { return Math.abs(a) + Integer.hashCode(a); }
    static int chain(int a) { return branchy(a) + 1; }
    static int wide(int a) { return a * 31 + a * 17 - a * 13 + (a ^ 7) + (a | 3); }
    int crossClass() { return box.get() + 1; }
    // Checks: what only a throw follows is not counted, its calls
    // (a string concatenation's call site, a method with a loop) and its
    // size included.
    static int throwsSome(int a) { if (a < 0) throw new IllegalArgumentException(); return a; }
    static int checked(int a) { if (a < 0) throw new IllegalStateException("negative: " + a + " of " + N + " at " + total); return a + 1; }
    static int throwPathCalls(int a) { if (a < 0) throw new IllegalArgumentException(String.valueOf(loops(-a))); return a; }
    /** An assert whose check calls a method with a loop: its code never
     *  runs unless the command line turns assertions on (or names them). */
    static int asserted(int a) { assert loops(a % 3) >= 0 : "never"; return a + 1; }
    /** A field of the program's own named like the assert switch (not
     *  final, not synthetic): its test is the program's, and runs. (Its
     *  calls stay in its class: which classes read others' files is
     *  what the BCICACHE tests count.) */
    static final class OwnSwitch {
        static boolean $assertionsDisabled;
        static int spins;
        static int spin(int n) { for (int i = 0; i < n; i++) spins++; return spins; }
        static int flagged(int a) { if (!$assertionsDisabled) a += spin(3); return a; }
    }
    /** Checks whose failure is a call to a method of the class's own that
     *  never returns (javac's Assert.check calls Assert.error()): a
     *  static one and a private one end the path as a throw does. */
    static int checkedBy(int a) { if (a < 0) fail("negative"); return a + 2; }
    int checkedPrivate(int a) { if (a < 0) bad(); return a + 3; }
    static void fail(String m) { throw new IllegalArgumentException(m); }
    private void bad() { throw new IllegalStateException("bad"); }
    /** Its handler only throws again (wraps the exception). */
    static int wraps(String v) { try { return Integer.parseInt(v); } catch (NumberFormatException e) { throw new IllegalArgumentException(e); } }

    // Not trivial: each crosses one line.
    static int loops(int n) { int s = 0; for (int i = 0; i < n; i++) s += i; return s; }
    static int calls(int a) { return loops(a) + 1; }
    static int viaInterface(Getter g) { return g.get() + 1; }
    /** Small, but with its trivial callees more than 70 bytes of work. */
    static int fanOut(int a) { return wide(a) + wide(a + 1) + wide(a + 2); }
    static synchronized int locked(int a) { return a + 1; }
    /** Their failure calls a method that may return: one a subclass may
     *  override, another class's (only the class's own are read). */
    int checkedVirtual(int a) { if (a < 0) badVirtual(); return a + 4; }
    void badVirtual() { throw new IllegalStateException("virtual"); }
    static int checkedOther(int a) { if (a < 0) Box.fail(); return a + 5; }
    /** It always throws: no normal path. */
    static int fails(int a) { throw new UnsupportedOperationException("fails " + a); }
    static int catches(int a) { try { return Integer.parseInt("x"); } catch (NumberFormatException e) { return a; } }
    static long big(long a, long b, long c, long d) {
        // More than 35 bytes of straight-line arithmetic.
        long x = a * b + c * d - a * c + b * d;
        long y = x * x + a - b + c - d + x * a;
        return x + y * 3 + (a ^ b) + (c | d) + (x & y);
    }

    public static void main(String[] args) {
        TrivialCases t = new TrivialCases();
        long s = 0;
        for (int i = 0; i < N; i++) {
            t.setField(i);
            s += t.getField();
            t.empty();
            s += constant() + arith(i, 3) + branchy(-i);
            s += callsJdk(-i) + loops(10) + calls(3) + locked(i) + throwsSome(i) + big(i, 2, 3, 4);
            s += checked(i) + throwPathCalls(i) + wraps("12") + asserted(i) + OwnSwitch.flagged(i);
            s += chain(-i) + t.crossClass() + viaInterface(t.box) + fanOut(i);
            s += checkedBy(i) + t.checkedPrivate(i) + t.checkedVirtual(i) + checkedOther(i);
            LOCAL.set(i);
            s += LOCAL.peek() + SUB.viaSuper() + ITEMS.first();
            if (i % 10 == 0)
                s += catches(i);
            if (i % 100 == 0) {
                try {
                    s += fails(i);
                } catch (UnsupportedOperationException e) {
                    s++;
                }
            }
        }
        total = s;
        System.out.println("trivialcases: " + total);
    }
}
