import java.util.concurrent.locks.ReentrantLock;

// LockHeavy: threads contending on one monitor, for the lock profile's
// cost. args[0] threads each enter a synchronized block args[1] times,
// doing a little work inside; with a third argument "mixed", every other
// thread takes a ReentrantLock instead (java.util.concurrent's parking).
// The program prints the time the threads took (ms, without the JVM's
// start and end): "count=N ms=T".
public class LockHeavy {
    static final Object MONITOR = new Object();
    static final ReentrantLock LOCK = new ReentrantLock();
    static long count, lockCount;
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        long each = Long.parseLong(args[1]);
        boolean mixed = args.length > 2 && args[2].equals("mixed");
        Thread[] ts = new Thread[threads];
        long t0 = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            if (mixed && i % 2 == 1) {
                ts[i] = new Thread(() -> {
                    long local = 0;
                    for (long n = 0; n < each; n++) {
                        LOCK.lock();
                        try {
                            lockCount++;
                            for (int k = 0; k < 20; k++)
                                local = local * 31 + k;
                        } finally {
                            LOCK.unlock();
                        }
                        for (int k = 0; k < 200; k++)
                            local = local * 17 + k;
                    }
                    sink = local;
                });
                ts[i].start();
                continue;
            }
            ts[i] = new Thread(() -> {
                long local = 0;
                for (long n = 0; n < each; n++) {
                    synchronized (MONITOR) {
                        count++;
                        for (int k = 0; k < 20; k++)
                            local = local * 31 + k;
                    }
                    for (int k = 0; k < 200; k++)
                        local = local * 17 + k;
                }
                sink = local;
            });
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
        System.out.println("count=" + (count + lockCount) + " ms=" + (System.nanoTime() - t0) / 1_000_000);
    }
}
