import java.io.FileInputStream;
import java.io.IOException;

/**
 * CtorThrow: constructors whose superclass constructor throws, the
 * exception caught by their caller (TestBCISuperConstructorThrows): a
 * superclass of the program's own, and one of the JDK's, and one passed
 * on by a method between (make). serve's later calls must hang under
 * serve, not under the constructor that died.
 */
public class CtorThrow {
    static int sink;

    public static class Base {
        int v;

        public Base(int x) {
            if (x < 0)
                throw new IllegalArgumentException("negative " + x);
            for (int i = 0; i < 4; i++)
                v += i * x;
        }
    }

    /** Public: BCIHandlers' generated classes, of another loader, make it. */
    public static class Derived extends Base {
        public Derived(int x) {
            super(x);
            for (int i = 0; i < 4; i++)
                v ^= i;
        }
    }

    static class MyStream extends FileInputStream {
        MyStream(String p) throws IOException {
            super(p);
            for (int i = 0; i < 4; i++)
                sink += i;
        }
    }

    static int after(int i) {
        int s = 0;
        for (int k = 0; k < 3; k++)
            s += i * k;
        return s;
    }

    /** Passes the constructor's exception on, through its own catch-all. */
    static Derived make(int i) {
        return new Derived(i % 2 == 0 ? -1 : 1);
    }

    static int serve(int i) {
        int s = 0;
        try {
            sink += make(i).v;
        } catch (IllegalArgumentException e) {
            s++;
        }
        try {
            sink += new Derived(i % 2 == 0 ? -1 : 1).v;
        } catch (IllegalArgumentException e) {
            s++;
        }
        try {
            new MyStream("/nonexistent/" + i).close();
        } catch (IOException e) {
            s++;
        }
        return s + after(i);
    }

    public static void main(String[] args) {
        long t = 0;
        for (int i = 0; i < 100; i++)
            t += serve(i);
        System.out.println("total " + t);
    }
}
