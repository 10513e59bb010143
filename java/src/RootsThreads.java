/**
 * RootsThreads: threads entering and leaving a ROOTS root at once, each
 * many times; root calls leaf 8 times. Between roots a thread works
 * outside any (leaf's calls there do not count), so that the count of
 * threads inside a root keeps crossing zero.
 */
public class RootsThreads {
    static volatile long sink;

    static long root(long s) {
        long a = 0;
        for (int i = 0; i < 8; i++)
            a += leaf(s + i);
        return a;
    }

    static long leaf(long x) {
        long h = x;
        for (int i = 0; i < 20; i++)
            h = h * 31 + i;
        return h;
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        long n = Long.parseLong(args[1]);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                long s = 0;
                for (long i = 0; i < n; i++)
                    s += root(i) + leaf(i);
                sink += s;
            }, "worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts)
            t.join();
        System.out.println("done");
    }
}
