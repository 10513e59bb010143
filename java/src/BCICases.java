import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Cases bytecode instrumentation must get right, each with known counts:
 *  constructors that throw before and after super(), exceptions through
 *  JDK frames, synchronized methods, a static initializer, recursion
 *  10000 deep unwound by one exception. Prints what it did. */
public class BCICases {
    static class Base {
        int v;
        Base(int v) {
            this.v = v;
        }
    }

    static class Derived extends Base {
        Derived(int x) {
            super(check(x)); // throws before super() for x < 0
            body(x);         // throws after super() for x > 100
        }

        static int check(int x) {
            if (x < 0) throw new IllegalArgumentException("negative");
            return x;
        }

        void body(int x) {
            if (x > 100) throw new IllegalStateException("large");
            v += x;
        }
    }

    static class Init {
        static final int VALUE = compute();
        static int compute() { return 42; }
    }

    static class Thrower implements Consumer<Integer> {
        @Override public void accept(Integer x) {
            if (x == 3) throw new RuntimeException("three");
        }
    }

    static int counter;
    static synchronized void inc() { counter++; }
    static synchronized void incOrThrow(int i) {
        if (i % 2 == 1) throw new IllegalStateException("odd");
        counter++;
    }

    static int deep(int n) {
        if (n == 0) throw new IllegalStateException("bottom");
        return deep(n - 1) + 1;
    }

    public static void main(String[] args) {
        int made = 0, before = 0, after = 0;
        for (int i = 0; i < 10; i++) {
            try { new Derived(i); made++; } catch (IllegalArgumentException e) { before++; }
            try { new Derived(-1); made++; } catch (IllegalArgumentException e) { before++; }
            try { new Derived(1000); made++; } catch (IllegalStateException e) { after++; }
        }
        System.out.println("constructors: made=" + made + " before=" + before + " after=" + after);

        int caught = 0;
        List<Integer> list = new ArrayList<>();
        for (int i = 0; i < 5; i++) list.add(i);
        for (int r = 0; r < 10; r++) {
            try { list.forEach(new Thrower()); } catch (RuntimeException e) { caught++; }
        }
        System.out.println("through JDK frames: caught=" + caught);

        int odd = 0;
        for (int i = 0; i < 100; i++) {
            inc();
            try { incOrThrow(i); } catch (IllegalStateException e) { odd++; }
        }
        System.out.println("synchronized: counter=" + counter + " odd=" + odd);

        System.out.println("clinit: " + Init.VALUE);

        int depth = args.length > 0 ? Integer.parseInt(args[0]) : 10000;
        try { deep(depth); } catch (IllegalStateException e) { System.out.println("deep: unwound " + depth); }
    }
}
