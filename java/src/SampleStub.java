/**
 * SampleStub spends most of its time in a JVM stub rather than in Java
 * code: Math.log, which C2 compiles into a call to the JVM's generated
 * log routine. A sample taken there has its top frame in no Java method;
 * the profile should name the stub under inner().
 *
 * Usage: SampleStub [milliseconds]
 */
public class SampleStub {
    static volatile double sink;

    static double inner(int k) {
        double s = 0;
        for (int i = 0; i < 200; i++)
            s += Math.log(k + i + 1.0);
        return s;
    }

    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 2000;
        long end = System.nanoTime() + ms * 1_000_000L;
        double s = 0;
        int k = 0;
        while (System.nanoTime() < end)
            s += inner(k++ & 1023);
        sink = s;
    }
}
