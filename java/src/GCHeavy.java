import java.util.ArrayList;
import java.util.List;

/** GCHeavy: threads that allocate fast and keep a ring of live objects,
 *  so that the collector's threads take a good share of the process's CPU
 *  time (with a small heap). Usage: GCHeavy [ms] [threads]. */
public class GCHeavy {
    static volatile long sink;

    static long churn(long until, int seed) {
        Object[] ring = new Object[20000];
        long n = 0;
        int i = seed;
        while (System.nanoTime() < until) {
            for (int k = 0; k < 1000; k++) {
                List<int[]> l = new ArrayList<>();
                l.add(new int[16 + (i & 63)]);
                ring[i++ % ring.length] = l;
                n += l.size();
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 1500;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long until = System.nanoTime() + ms * 1_000_000L;
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int seed = t;
            ts[t] = new Thread(() -> sink += churn(until, seed), "churn-" + t);
            ts[t].start();
        }
        for (Thread t : ts)
            t.join();
        System.out.println("gcheavy: done");
    }
}
