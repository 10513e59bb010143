/**
 * Clock-fallback calibration workload: the same small leaf runs CALLS
 * times on the main thread, then on each of WORKERS threads, one after
 * the other. Run with a PTT backend that has a slot for the main thread
 * only, the workers read the clock: calibrated with their own minima, their
 * leaf costs about what the main thread's does.
 */
public class FallbackCal {
    static final int CALLS = 20000;
    static final int WORKERS = 2;
    static long sink;

    static long leaf(long x) { return x * 31 + 7; }

    static void loop() {
        long s = 0;
        for (int i = 0; i < CALLS; i++) s += leaf(i);
        sink += s;
    }

    public static void main(String[] args) throws InterruptedException {
        loop();
        for (int w = 0; w < WORKERS; w++) {
            Thread t = new Thread(FallbackCal::loop, "fallback-" + w);
            t.start();
            t.join();
        }
        System.out.println("fallbackcal: sink=" + sink);
    }
}
