import java.util.concurrent.Semaphore;

/**
 * Identical work on many threads, one thread at a time and interleaved:
 * WORKERS threads (named pair-0, pair-1, ...) each run ROUNDS rounds of
 * work(), and round r of every worker runs before round r+1 of any, so
 * that the machine's drift falls on all of them alike. Run with a PTT
 * work area too small for all of them (PTTSLOTS=), some threads read the
 * eBPF work area and the others fall back: their calibrated time for
 * the same work can then be compared. Args: workers (default 16), rounds
 * (default 20).
 */
public class FallbackPairs {
    static final String[] WORDS = new String[64];
    static long sink;

    static int hash(String s) {
        int h = 0;
        for (int i = 0; i < s.length(); i++) {
            h = 31 * h + s.charAt(i);
        }
        return h;
    }

    static long mix(long a, int b) {
        return (a ^ b) * 0x9E3779B97F4A7C15L;
    }

    static long work() {
        long s = 0;
        for (int i = 0; i < 5; i++) {
            for (String w : WORDS) {
                s = mix(s, hash(w));
            }
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        int workers = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        for (int i = 0; i < WORDS.length; i++) {
            WORDS[i] = "word-" + i + "-abcdefghijklmnopqrstuvwxyz";
        }
        Semaphore[] go = new Semaphore[workers];
        Semaphore done = new Semaphore(0);
        Thread[] ts = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            Semaphore mine = go[w] = new Semaphore(0);
            ts[w] = new Thread(() -> {
                long s = 0;
                for (int r = 0; r < rounds; r++) {
                    mine.acquireUninterruptibly();
                    s += work();
                    done.release();
                }
                synchronized (FallbackPairs.class) {
                    sink += s;
                }
            }, "pair-" + w);
            ts[w].start();
        }
        for (int r = 0; r < rounds; r++) {
            for (int w = 0; w < workers; w++) {
                go[w].release();
                done.acquireUninterruptibly();
            }
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("FallbackPairs: " + workers + " x " + rounds + " sink=" + sink);
    }
}
