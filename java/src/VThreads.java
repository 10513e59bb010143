import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Virtual threads that block in the middle of methods: THREADS virtual
 * threads (named vt-0, vt-1, ...) each run task(), which calls step()
 * ROUNDS times; step() calls leaf(), blocks (Thread.sleep or
 * LockSupport.parkNanos, alternately), then calls leaf() again, so each
 * virtual thread unmounts from its carrier inside step() and mounts again,
 * usually on another carrier. Needs JDK 21+; built with reflection so that
 * it compiles with older javac. Prints "vthreads: unsupported" on a JVM
 * without virtual threads. Args (optional): threads and rounds, then
 * "ready" is printed once all are started (for a test that starts
 * collection while they run); a third, "carriers", prints at the end
 * how many carriers each virtual thread ran on ("carriers vt-N K").
 */
public class VThreads {
    static int THREADS = 200;
    static int ROUNDS = 10;
    static long sink;
    /** Per virtual thread, the carriers it ran on (with "carriers"). */
    static java.util.Map<Integer, java.util.Set<String>> carriers;

    static long leaf(long x) { return x * 31 + 7; }

    static void step(int i, int r) throws InterruptedException {
        long s = leaf(i + r);
        if (((i + r) & 1) == 0) Thread.sleep(1);
        else LockSupport.parkNanos(1_000_000);
        s += leaf(s);
        synchronized (VThreads.class) { sink += s; }
    }

    static void task(int i) {
        try {
            for (int r = 0; r < ROUNDS; r++) {
                step(i, r);
                if (carriers != null) {
                    // A virtual thread's name ends with its carrier's: "…@ForkJoinPool-1-worker-1".
                    String s = Thread.currentThread().toString();
                    carriers.get(i).add(s.substring(s.lastIndexOf('@') + 1));
                }
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            System.out.println("vthreads: unsupported");
            return;
        }
        if (args.length >= 2) {
            THREADS = Integer.parseInt(args[0]);
            ROUNDS = Integer.parseInt(args[1]);
        }
        if (args.length >= 3 && args[2].equals("carriers")) {
            carriers = new java.util.concurrent.ConcurrentHashMap<>();
            for (int i = 0; i < THREADS; i++)
                carriers.put(i, java.util.concurrent.ConcurrentHashMap.newKeySet());
        }
        Class<?> builder = Class.forName("java.lang.Thread$Builder");
        Object b = ofVirtual.invoke(null);
        b = builder.getMethod("name", String.class, long.class).invoke(b, "vt-", 0L);
        Method start = builder.getMethod("start", Runnable.class);
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            final int n = i;
            all.add((Thread) start.invoke(b, (Runnable) () -> task(n)));
        }
        if (args.length >= 2) System.out.println("ready");
        for (Thread t : all) t.join();
        if (carriers != null)
            for (int i = 0; i < THREADS; i++)
                System.out.println("carriers vt-" + i + " " + carriers.get(i).size());
        System.out.println("vthreads: sink=" + sink);
    }
}
