import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * Calibration accuracy workload. Each driver dK calls leaf wK (K loop
 * iterations) CALLS times. Run with "--known" and without the agent (in
 * -Xint, the mode method events force) it prints each driver's thread CPU
 * time per call, the median of several trials: the true cost the
 * calibrated log-rt should show as the driver's cumulative time per call.
 * Run plainly (under the agent) it runs every driver once.
 */
public class Accuracy {
    static final int CALLS = 2000;
    static final int[] SIZES = {0, 1, 4, 16, 64, 256};
    /** With the JIT on (AccuracyAB under BCI) the loops run some 30 times
     *  faster than in -Xint: the two larger drivers are the ones that cost
     *  200 ns or more a call there, the size the accuracy target is for. */
    static final int[] SIZES_JIT = {0, 1, 4, 16, 64, 256, 1024, 4096};
    static long sink;

    static long w0() { return 1; }
    static long w1() { long x = 0; for (int i = 0; i < 1; i++) x += i * 7 + 1; return x; }
    static long w4() { long x = 0; for (int i = 0; i < 4; i++) x += i * 7 + 1; return x; }
    static long w16() { long x = 0; for (int i = 0; i < 16; i++) x += i * 7 + 1; return x; }
    static long w64() { long x = 0; for (int i = 0; i < 64; i++) x += i * 7 + 1; return x; }
    static long w256() { long x = 0; for (int i = 0; i < 256; i++) x += i * 7 + 1; return x; }
    static long w1024() { long x = 0; for (int i = 0; i < 1024; i++) x += i * 7 + 1; return x; }
    static long w4096() { long x = 0; for (int i = 0; i < 4096; i++) x += i * 7 + 1; return x; }

    static void d0(int n) { long s = 0; for (int i = 0; i < n; i++) s += w0(); sink += s; }
    static void d1(int n) { long s = 0; for (int i = 0; i < n; i++) s += w1(); sink += s; }
    static void d4(int n) { long s = 0; for (int i = 0; i < n; i++) s += w4(); sink += s; }
    static void d16(int n) { long s = 0; for (int i = 0; i < n; i++) s += w16(); sink += s; }
    static void d64(int n) { long s = 0; for (int i = 0; i < n; i++) s += w64(); sink += s; }
    static void d256(int n) { long s = 0; for (int i = 0; i < n; i++) s += w256(); sink += s; }
    static void d1024(int n) { long s = 0; for (int i = 0; i < n; i++) s += w1024(); sink += s; }
    static void d4096(int n) { long s = 0; for (int i = 0; i < n; i++) s += w4096(); sink += s; }

    static void drive(int size, int n) {
        switch (size) {
            case 0: d0(n); break;
            case 1: d1(n); break;
            case 4: d4(n); break;
            case 16: d16(n); break;
            case 64: d64(n); break;
            case 256: d256(n); break;
            case 1024: d1024(n); break;
            case 4096: d4096(n); break;
            default: throw new IllegalArgumentException("size " + size);
        }
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("--known")) {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            int trials = 9;
            for (int size : SIZES) {
                drive(size, CALLS); // warm up
                double[] per = new double[trials];
                for (int t = 0; t < trials; t++) {
                    long t0 = mx.getCurrentThreadCpuTime();
                    drive(size, CALLS);
                    per[t] = (mx.getCurrentThreadCpuTime() - t0) / (double) CALLS;
                }
                Arrays.sort(per);
                System.out.printf("known %d %.1f%n", size, per[trials / 2]);
            }
            return;
        }
        for (int size : SIZES) {
            drive(size, CALLS);
        }
        System.out.println("accuracy: sink=" + sink);
    }
}
