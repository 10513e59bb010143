// LockSites: a known contended monitor and a known Object.wait, for the
// lock profile's tests. Three threads take turns on one monitor in
// contend(), each holding it 2 ms at a time, 40 times; one thread waits
// in await() on another object 20 times, notified every 10 ms. Each
// measures its own time to get the monitor, and in wait(), with
// System.nanoTime, and the program prints the sums at the end:
// "enter_ns=N wait_ns=N". With an argument it prints "ready <pid>" and
// does it again and again until killed.
public class LockSites {
    static final Object MONITOR = new Object();
    static final Object SIGNAL = new Object();
    static long enterNs, waitNs;
    static volatile boolean waiting;

    static void contend() throws InterruptedException {
        for (int i = 0; i < 40; i++) {
            long t0 = System.nanoTime();
            synchronized (MONITOR) {
                long d = System.nanoTime() - t0;
                enterNs += d;
                Thread.sleep(2);
            }
            Thread.yield();
        }
    }

    static void await() throws InterruptedException {
        for (int i = 0; i < 20; i++) {
            synchronized (SIGNAL) {
                waiting = true;
                long t0 = System.nanoTime();
                SIGNAL.wait();
                long d = System.nanoTime() - t0;
                synchronized (LockSites.class) {
                    waitNs += d;
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0)
            System.out.println("ready " + ProcessHandle.current().pid());
        do {
            round();
        } while (args.length > 0);
    }

    static void round() throws Exception {
        Thread[] ts = new Thread[3];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                try {
                    contend();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "contender-" + i);
            ts[i].start();
        }
        Thread w = new Thread(() -> {
            try {
                await();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "waiter");
        w.start();
        while (w.isAlive()) {
            Thread.sleep(10);
            synchronized (SIGNAL) {
                if (waiting) {
                    waiting = false;
                    SIGNAL.notifyAll();
                }
            }
        }
        for (Thread t : ts)
            t.join();
        System.out.println("enter_ns=" + enterNs + " wait_ns=" + waitNs);
    }
}
