import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * TailWork: main calls a collected method (TailFib.fib, with
 * INCLUDE=TailFib), then burns the given milliseconds of its own CPU time
 * outside every collected method, and prints how much it burned
 * (TestThreadTailCharged): that time belongs to its thread's root.
 */
public class TailWork {
    public static void main(String[] args) {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 150;
        System.out.println("fib " + TailFib.fib(20));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime(), now = start;
        long x = 1;
        while (now - start < ms * 1_000_000L) {
            for (int i = 0; i < 100_000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
            now = mx.getCurrentThreadCpuTime();
        }
        System.out.println("burned " + (now - start) + " " + (x == 42 ? "!" : ""));
    }
}

class TailFib {
    static long fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }
}
