import java.io.FileInputStream;
import java.io.IOException;

/**
 * CtorThrow: constructors whose superclass constructor throws, the
 * exception caught by their caller (TestBCISuperConstructorThrows): a
 * superclass of the program's own, and one of the JDK's. serve's later
 * calls must hang under serve, not under the constructor that died.
 */
public class CtorThrow {
    static int sink;

    static class Base {
        int v;

        Base(int x) {
            if (x < 0)
                throw new IllegalArgumentException("negative " + x);
            for (int i = 0; i < 4; i++)
                v += i * x;
        }
    }

    static class Derived extends Base {
        Derived(int x) {
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

    static int serve(int i) {
        int s = 0;
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
