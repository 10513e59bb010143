/**
 * RootsChain: a chain of calls through ten classes, loaded and run (and
 * JIT-compiled) outside the root first, then called from the root: with
 * ROOTS=RootsChain.root the whole chain is seen from the root's first call,
 * deeper than one expansion reaches.
 */
public class RootsChain {
    static long sink;

    static final class C0 { static long m(int x) { return C1.m(x + 1); } }
    static final class C1 { static long m(int x) { return C2.m(x + 1); } }
    static final class C2 { static long m(int x) { return C3.m(x + 1); } }
    static final class C3 { static long m(int x) { return C4.m(x + 1); } }
    static final class C4 { static long m(int x) { return C5.m(x + 1); } }
    static final class C5 { static long m(int x) { return C6.m(x + 1); } }
    static final class C6 { static long m(int x) { return C7.m(x + 1); } }
    static final class C7 { static long m(int x) { return C8.m(x + 1); } }
    static final class C8 { static long m(int x) { return C9.m(x + 1); } }
    static final class C9 { static long m(int x) { return x * 31L; } }

    static long root(int x) {
        return C0.m(x);
    }

    public static void main(String[] args) {
        int warm = Integer.parseInt(args[0]), calls = Integer.parseInt(args[1]);
        for (int i = 0; i < warm; i++)
            sink += C0.m(i);
        for (int i = 0; i < calls; i++)
            sink += root(i);
        System.out.println("RootsChain " + sink);
    }
}
