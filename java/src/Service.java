// Service: a long-running program for attach tests and the attach bench.
// Two threads (main, and a worker taking requests from a queue) do units of work until the program is killed (or for
// args[0] seconds); every 500 ms the main thread prints the units done
// since the last line ("ops N"), so that throughput can be compared before,
// during and after a profile. ServiceWork.hot holds most of the CPU time,
// ServiceWork.warm less, both reached through ServiceWork.unit: a class of
// their own, as the work of a server is, apart from the loops that run
// for the program's life (a BCI profile started while a loop of a class
// runs leaves that class as it was).
public class Service {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : Long.MAX_VALUE / 2_000_000_000L;
        Thread w = new Thread(Service::work, "Service-worker");
        w.setDaemon(true);
        w.start();
        System.out.println("ready " + ProcessHandle.current().pid());
        long start = System.nanoTime(), next = start + 500_000_000L, ops = 0;
        long end = start + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            sink += ServiceWork.unit(ops);
            ops++;
            if ((ops & 63) == 0 && System.nanoTime() >= next) {
                System.out.println("ops " + ops);
                ops = 0;
                next += 500_000_000L;
            }
        }
    }

    // The worker takes requests from a queue, as a server's threads do:
    // each is a batch of units.
    static void work() {
        java.util.concurrent.ArrayBlockingQueue<Long> q = new java.util.concurrent.ArrayBlockingQueue<>(1);
        long n = 0;
        try {
            while (true) {
                q.put(n);
                long seed = q.take();
                for (int i = 0; i < 256; i++)
                    sink += ServiceWork.unit(seed + i);
                n += 256;
            }
        } catch (InterruptedException e) {
            // the program ends
        }
    }
}

final class ServiceWork {
    static long unit(long seed) {
        long s = 0;
        for (int i = 0; i < 8; i++)
            s += hot(seed + i);
        return s + warm(seed);
    }

    static long hot(long x) {
        long h = x;
        for (int i = 0; i < 200; i++)
            h = h * 6364136223846793005L + 1442695040888963407L ^ (h >>> 17);
        return h;
    }

    static long warm(long x) {
        long h = x;
        for (int i = 0; i < 100; i++)
            h = h * 31 + i;
        return h;
    }
}
