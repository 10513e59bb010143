import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Virtual threads contending for locks: THREADS virtual threads, even
 * ones entering a contended monitor (synchronized on a Mon), odd ones a
 * ReentrantLock (which parks them), each holding its lock for HOLD_US of
 * spinning. A virtual thread blocked on either unmounts (on JDK 24 and
 * later for the monitor) and may go on on another carrier, so a wait
 * that begins on one carrier ends on another. Prints the waits each kind
 * measured itself (System.nanoTime around taking the lock), for the lock
 * profile to be checked against. Needs JDK 21+ (reflection, so that it
 * compiles with older javac); prints "vthreadlocks: unsupported" without.
 */
public class VThreadLocks {
    static final int THREADS = 400;
    static final long HOLD_US = 200;
    static final class Mon {}
    static final Mon MON = new Mon();
    static final ReentrantLock RL = new ReentrantLock();
    static final AtomicLong monWait = new AtomicLong(), rlWait = new AtomicLong();
    static volatile long spun;

    static void hold() {
        long end = System.nanoTime() + HOLD_US * 1000;
        while (System.nanoTime() < end) spun++;
    }

    static void useMonitor() {
        long t0 = System.nanoTime();
        synchronized (MON) {
            monWait.addAndGet(System.nanoTime() - t0);
            hold();
        }
    }

    static void useLock() {
        long t0 = System.nanoTime();
        RL.lock();
        try {
            rlWait.addAndGet(System.nanoTime() - t0);
            hold();
        } finally {
            RL.unlock();
        }
    }

    public static void main(String[] args) throws Exception {
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            System.out.println("vthreadlocks: unsupported");
            return;
        }
        Class<?> builder = Class.forName("java.lang.Thread$Builder");
        Object b = ofVirtual.invoke(null);
        Method start = builder.getMethod("start", Runnable.class);
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            final boolean mon = (i & 1) == 0;
            all.add((Thread) start.invoke(b, (Runnable) () -> { if (mon) useMonitor(); else useLock(); }));
        }
        for (Thread t : all) t.join();
        System.out.printf("vthreadlocks: monitorWaitNs=%d lockWaitNs=%d%n", monWait.get(), rlWait.get());
    }
}
