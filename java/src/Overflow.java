/**
 * Overflow recurses until the stack overflows, three times, catching the
 * StackOverflowError in main, then calls after() 17 times and a method
 * whose lambda throws through java.base 20 times: near the stack's end
 * the instrumented handlers have no room to call the agent, and the
 * profile must still close every frame the overflow unwound, so that
 * after() and throwsThroughJdk() are main's callees, not the dead
 * recursion's. (Loops in the small methods keep them from being left
 * out as trivial.) With the argument "stale", main first overflows five
 * times through a() and b(), a() catching the error where it overflowed:
 * the exits lost there are another error's, which must not be taken for
 * the later ones'.
 */
public class Overflow {
    static int depth;

    static void rec(int d) {
        depth = d;
        for (int i = 0; i < 1; i++) {
        }
        rec(d + 1);
    }

    static int a(int d) {
        try {
            return b(d);
        } catch (StackOverflowError e) {
            return d;
        }
    }

    static int b(int d) {
        for (int i = 0; i < 1; i++) {
        }
        return a(d + 1);
    }

    static int after(int n) {
        int s = 0;
        for (int i = 0; i < n; i++)
            s += i;
        return s;
    }

    static void throwsThroughJdk() {
        java.util.List.of(1, 2, 3).forEach(x -> {
            for (int i = 0; i < 1; i++) {
            }
            if (x == 2)
                throw new RuntimeException();
        });
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("stale"))
            for (int r = 0; r < 5; r++)
                a(0);
        for (int r = 0; r < 3; r++) {
            try {
                rec(0);
            } catch (StackOverflowError e) {
            }
        }
        int s = 0;
        for (int i = 0; i < 10; i++)
            s += after(5);
        for (int i = 0; i < 20; i++) {
            try {
                throwsThroughJdk();
            } catch (RuntimeException e) {
                s++;
            }
        }
        for (int i = 0; i < 7; i++) {
            try {
                Integer.parseInt("x");
            } catch (NumberFormatException e) {
                s += after(1);
            }
        }
        System.out.println("overflow: " + s);
    }
}
