/**
 * CacheChain: a chain of one-line delegates through seven classes, deeper
 * than the transformer reads other classes' files ahead to find trivial
 * methods. Where the read stops, the call counts as instrumented; the
 * classes' BCICACHE entries are kept all the same (TestBCICacheDeepChain),
 * as they are when a class they call is on no jar of the class path.
 */
public class CacheChain {
    static final class C1 { static int get(int a) { return C2.get(a) + 1; } }
    static final class C2 { static int get(int a) { return C3.get(a) + 1; } }
    static final class C3 { static int get(int a) { return C4.get(a) + 1; } }
    static final class C4 { static int get(int a) { return C5.get(a) + 1; } }
    static final class C5 { static int get(int a) { return C6.get(a) + 1; } }
    static final class C6 { static int get(int a) { return C7.get(a) + 1; } }
    static final class C7 { static int v = 3; static int get(int a) { return a + v; } }

    static int top(int a) { return C1.get(a); }

    /** Names a class the test's jar leaves out (never run there): the
     *  scan finds it nowhere, which only a changed jar could change. */
    static int rare(int a) { return a > 1_000_000 ? CacheAbsent.get(a) : a + 1; }

    public static void main(String[] args) {
        long s = 0;
        for (int i = 0; i < 1000; i++)
            s += top(i) + rare(i);
        System.out.println("sum " + s);
    }
}
