import java.util.ArrayList;
import java.util.List;

/**
 * ThreadChurn starts many short threads, a few alive at a time, each
 * running a small fixed call tree: what a server's thread pool churn
 * looks like to a profiler. Args: threads (default 20000), concurrency
 * (default 4), then an optional "pause" to wait for a newline on stdin
 * before exiting (so a test can send rtdriver commands first).
 */
public class ThreadChurn {
    static volatile long sink;

    static long leaf(int i) {
        return i * 31L + 7;
    }

    static void work(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += leaf(i);
        }
        sink += s;
    }

    public static void main(String[] args) throws Exception {
        int total = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        int conc = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        boolean pause = args.length > 2 && args[2].equals("pause");
        int started = 0;
        while (started < total) {
            List<Thread> batch = new ArrayList<>();
            for (int i = 0; i < conc && started < total; i++, started++) {
                Thread t = new Thread(() -> work(3), "churn-" + started);
                t.start();
                batch.add(t);
            }
            for (Thread t : batch) {
                t.join();
            }
        }
        System.out.println("ThreadChurn: " + total + " threads");
        if (pause) {
            System.in.read();
        }
        System.out.println("ThreadChurn: done");
    }
}
