import java.util.function.IntUnaryOperator;

/**
 * RootsChain: calls that selective instrumentation must find from a
 * root's first call, though everything ran (and was JIT-compiled)
 * outside the root first.
 *
 * chain: a chain through ten classes, deeper than one expansion reaches.
 *
 * dispatch: calls whose target no plain look at the call site names:
 * an interface call running a method that a superclass (which does not
 * implement the interface) declares, the same through a class that loads
 * only after the root first ran, and a method reference.
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

    interface Shape { int area(); }
    static class Base { public int area() { return 1; } }
    static final class Square extends Base implements Shape {}

    interface Shape2 { int area(); }
    static class Base2 { public int area() { return 2; } }
    static final class Other2 implements Shape2 { public int area() { return 3; } }
    static final class Late extends Base2 implements Shape2 {}

    static final class Ref { static int twice(int x) { return 2 * x; } }

    static long dispatch(int x, Shape s, Shape2 s2) {
        IntUnaryOperator f = Ref::twice;
        return s.area() + s2.area() + f.applyAsInt(x);
    }

    public static void main(String[] args) {
        int warm = Integer.parseInt(args[0]), calls = Integer.parseInt(args[1]);
        if (args.length > 2 && args[2].equals("dispatch")) {
            Square sq = new Square();
            Other2 other = new Other2();
            Base2 b2 = new Base2();
            for (int i = 0; i < warm; i++)
                sink += sq.area() + other.area() + b2.area() + Ref.twice(i);
            sink += dispatch(0, sq, other);
            Late late = new Late(); // loads now, outside the root
            for (int i = 1; i < calls; i++)
                sink += dispatch(i, sq, late);
        } else {
            for (int i = 0; i < warm; i++)
                sink += C0.m(i);
            for (int i = 0; i < calls; i++)
                sink += root(i);
        }
        System.out.println("RootsChain " + sink);
    }
}
