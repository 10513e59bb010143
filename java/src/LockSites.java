import java.util.concurrent.locks.ReentrantLock;

// LockSites: a known contended monitor, a known contended ReentrantLock
// and a known Object.wait, for the lock profile's tests. Three threads
// take turns on one monitor in contend(), each holding it 2 ms at a
// time, 40 times; three others do the same with a ReentrantLock in
// contendLock(); one thread waits in await() on another object 20 times,
// notified every 10 ms. Each measures its own time to get the monitor or
// the lock, and in wait(), with System.nanoTime, and the program prints
// the sums at the end: "enter_ns=N wait_ns=N park_ns=N". With an
// argument it prints "ready <pid>" and does it again and again until
// killed; with "gate FILE" it prints "ready <pid>", waits for FILE to
// exist, does it once and then idles until killed (a profile attached
// before FILE appears sees the whole round).
public class LockSites {
    static final Object MONITOR = new Object();
    static final Object SIGNAL = new Object();
    static final ReentrantLock LOCK = new ReentrantLock();
    static long enterNs, waitNs, parkNs;
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

    static void contendLock() throws InterruptedException {
        for (int i = 0; i < 40; i++) {
            long t0 = System.nanoTime();
            LOCK.lock();
            try {
                parkNs += System.nanoTime() - t0;
                Thread.sleep(2);
            } finally {
                LOCK.unlock();
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
        LockRounds.rounds(args);
    }

    static void round() throws Exception {
        Thread[] ts = new Thread[6];
        for (int i = 0; i < ts.length; i++) {
            boolean monitor = i < 3;
            ts[i] = new Thread(() -> {
                try {
                    if (monitor)
                        contend();
                    else
                        contendLock();
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, (monitor ? "contender-" : "locker-") + i);
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
        System.out.println("enter_ns=" + enterNs + " wait_ns=" + waitNs + " park_ns=" + parkNs);
    }
}

/** The program's loop, in a class of its own: a BCI profile attached
 *  while the main thread runs a loop (in main, or a call or two above it)
 *  leaves that loop's class as it was (README, Profile a running JVM). */
final class LockRounds {
    static void rounds(String[] args) throws Exception {
        if (args.length > 1 && args[0].equals("gate")) {
            java.nio.file.Path gate = java.nio.file.Path.of(args[1]);
            while (!java.nio.file.Files.exists(gate))
                Thread.sleep(10);
            LockSites.round();
            Thread.sleep(Long.MAX_VALUE);
        }
        do {
            LockSites.round();
        } while (args.length > 0);
    }
}
