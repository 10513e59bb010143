import java.util.ArrayList;
import java.util.List;

/**
 * SampleStress gives a sampling profiler the situations that break stack
 * walkers: many short threads (thread start and end under signals),
 * garbage (GC while threads are being sampled), implicit null checks (a
 * SIGSEGV HotSpot turns into a NullPointerException), deoptimization (a
 * call site compiled for one receiver class meets others), recursion,
 * and class unloading (a class defined again and again by loaders that
 * are then dropped).
 * The work is fixed, so the output is the same with or without an agent.
 * Args: threads (default 200), concurrency (default 4).
 */
public class SampleStress {
    interface Shape { long area(long x); }
    static final class Square implements Shape { public long area(long x) { return x * x; } }
    static final class Tri implements Shape { public long area(long x) { return x * x / 2; } }
    static final class Circle implements Shape { public long area(long x) { return 3 * x * x; } }
    static final class Box { long v; }

    static long shapes(Shape s, int n) {
        long t = 0;
        for (int i = 0; i < n; i++)
            t += s.area(i);
        return t;
    }

    static long deep(int d, long x) {
        return d == 0 ? x ^ (x << 3) : deep(d - 1, x + d) + 1;
    }

    static long nulls(int n) {
        Box[] boxes = { new Box(), null };
        long npes = 0;
        for (int i = 0; i < n; i++) {
            try {
                npes += boxes[i & 1].v;
            } catch (NullPointerException e) {
                npes++;
            }
        }
        return npes;
    }

    static long garbage(int n) {
        long t = 0;
        for (int i = 0; i < n; i++) {
            long[] a = new long[64 + (i & 255)];
            a[i % a.length] = i;
            t += a.length;
        }
        return t;
    }

    /** Defined afresh by each Reloader; never used through the app loader. */
    public static final class Victim {
        public static long spin(int n) {
            long x = n;
            for (int i = 0; i < n; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
            return x;
        }
    }

    static final class Reloader extends ClassLoader {
        private final byte[] bytes;
        Reloader(byte[] bytes) { super(SampleStress.class.getClassLoader()); this.bytes = bytes; }
        @Override protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.equals(Victim.class.getName()))
                return defineClass(name, bytes, 0, bytes.length);
            return super.loadClass(name, resolve);
        }
    }

    static byte[] victimBytes;

    static long unloadable(int n) throws Exception {
        Class<?> c = new Reloader(victimBytes).loadClass(Victim.class.getName());
        return (long) c.getMethod("spin", int.class).invoke(null, n);
    }

    static long work(int id) {
        long t = 0;
        // Monomorphic long enough to be compiled so, then two more
        // receiver classes: uncommon traps and deoptimization.
        t += shapes(new Square(), 200000);
        t += shapes(new Tri(), 200000);
        t += shapes(new Circle(), 200000);
        t += deep(200 + id % 50, id);
        t += nulls(2000);
        t += garbage(100000);
        try {
            t += unloadable(50000);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        return t;
    }

    public static void main(String[] args) throws Exception {
        int total = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int conc = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        try (java.io.InputStream in = SampleStress.class.getResourceAsStream("SampleStress$Victim.class")) {
            victimBytes = in.readAllBytes();
        }
        long[] results = new long[total];
        List<Thread> live = new ArrayList<>();
        for (int i = 0; i < total; i++) {
            final int id = i;
            Thread th = new Thread(() -> results[id] = work(id), "stress-" + i);
            th.start();
            live.add(th);
            if (live.size() >= conc) {
                for (Thread l : live)
                    l.join();
                live.clear();
            }
            if (i % 50 == 49)
                System.gc();
        }
        for (Thread l : live)
            l.join();
        long sum = 0;
        for (long r : results)
            sum += r;
        System.out.println("stress: threads=" + total + " sum=" + sum);
    }
}
