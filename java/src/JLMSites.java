// JLMSites: monitors taken a known number of times, for the exact lock
// monitor's test (JLM). block() takes A 1000 times; nested() takes B and,
// inside, B again (recursively) 500 times; inc() is a synchronized method
// called 2000 times, stat() a static one called 300 times; two threads
// take C in held() 20 times each and keep it 5 ms, so that they block
// each other; waitOn() takes D 10 times and waits in it 20 ms each time.
// Before all of them, throwing() takes E and throws out of the block 100
// times, syncThrowing() (synchronized) throws 100 times, and
// tryFinally() takes F around a try-finally 100 times: the counts after
// them show that every release was seen.
// It prints "held_ns=N" (the time C was held, as measured inside) and
// "objwait_ns=N" (the time in D.wait).
public class JLMSites {
    static final Object A = new Object(), B = new Object(), C = new Object(), D = new Object(), E = new Object(),
            F = new Object();
    static long sink, heldNs, objwaitNs;
    int n;

    synchronized void inc() {
        n++;
    }

    static synchronized void stat() {
        sink++;
    }

    static void throwing() {
        synchronized (E) {
            if (sink >= 0)
                throw new IllegalStateException("out of the block");
        }
    }

    static synchronized void syncThrowing() {
        if (sink >= 0)
            throw new IllegalStateException("out of the method");
    }

    static void tryFinally() {
        synchronized (F) {
            try {
                sink++;
            } finally {
                sink--;
            }
        }
    }

    static void block() {
        synchronized (A) {
            sink++;
        }
    }

    static void nested() {
        synchronized (B) {
            synchronized (B) {
                sink++;
            }
        }
    }

    static void held() throws InterruptedException {
        synchronized (C) {
            long t0 = System.nanoTime();
            Thread.sleep(5);
            heldNs += System.nanoTime() - t0;
        }
    }

    static void waitOn() throws InterruptedException {
        synchronized (D) {
            long t0 = System.nanoTime();
            D.wait(20);
            objwaitNs += System.nanoTime() - t0;
        }
    }

    public static void main(String[] args) throws Exception {
        JLMSites s = new JLMSites();
        for (int i = 0; i < 100; i++) {
            try {
                throwing();
            } catch (IllegalStateException e) {
            }
            try {
                syncThrowing();
            } catch (IllegalStateException e) {
            }
            tryFinally();
        }
        for (int i = 0; i < 1000; i++)
            block();
        for (int i = 0; i < 500; i++)
            nested();
        for (int i = 0; i < 2000; i++)
            s.inc();
        for (int i = 0; i < 300; i++)
            stat();
        Thread[] ts = new Thread[2];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                try {
                    for (int k = 0; k < 20; k++)
                        held();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            });
            ts[i].start();
        }
        for (Thread t : ts)
            t.join();
        for (int i = 0; i < 10; i++)
            waitOn();
        System.out.println("held_ns=" + heldNs + " objwait_ns=" + objwaitNs);
    }
}
