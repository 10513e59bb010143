import java.util.ArrayList;
import java.util.List;

/** 8 worker threads running concurrently, plus 20 short-lived threads,
 *  each with a known number of calls. */
public class Threads {
    static final int WORKERS = 8;
    static final int WORK_CALLS = 5000;
    static final int SHORT_THREADS = 20;
    static final int SHORT_CALLS = 10;

    static int work(int x) { return leaf(x) + 1; }
    static int leaf(int x) { return x ^ 0x5a; }
    static int brief(int x) { return x + 7; }

    static class Worker extends Thread {
        long sum;
        Worker(int i) { super("worker-" + i); }
        @Override public void run() {
            for (int i = 0; i < WORK_CALLS; i++) {
                sum += work(i);
            }
        }
    }

    static class Brief extends Thread {
        Brief(int i) { super("brief-" + i); }
        @Override public void run() {
            for (int i = 0; i < SHORT_CALLS; i++) {
                brief(i);
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < WORKERS; i++) all.add(new Worker(i));
        for (int i = 0; i < SHORT_THREADS; i++) all.add(new Brief(i));
        for (Thread t : all) t.start();
        for (Thread t : all) t.join();
        long sum = 0;
        for (Thread t : all) if (t instanceof Worker) sum += ((Worker) t).sum;
        System.out.println("threads: sum=" + sum);
    }
}
