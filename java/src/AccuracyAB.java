import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * Calibration accuracy with an in-process reference. One JVM (run it with
 * -Xint, the mode method events force, so that both halves run the same
 * interpreter) alternates, for each of Accuracy's drivers, a bare phase
 * (method events off) and a profiled phase (events on through the agent's
 * own rtdriver socket: "start" before, "end" after, which writes that
 * phase's log-rt). Each phase times the driver's CALLS calls with the
 * thread's CPU clock; a bare phase runs them as many times over as the
 * previous pair's profiled phase was slower, so that both halves last
 * about as long. The pairs alternate their order (bare first, then
 * profiled first), so that a drift of the machine's speed during the run
 * cancels out. Prints, per phase pair:
 *
 *   ab <size> <bare ns/call> <profiled ns/call, as the program saw it> <log-rt of the profiled phase>
 *
 * and the same for a probe ("probe <size> <bare> <profiled>"): the median
 * wall time of the body of a leaf of the same loop, timed from inside
 * with System.nanoTime around the loop only, which says whether the body
 * itself runs slower between method events.
 *
 * With the agent's BCI source (the JIT on), the bare phases run the
 * injected calls too, returning at once, and warm-up rounds (a third
 * argument) run under collection first, so that the classes are
 * instrumented and the JIT has compiled them before the first pair; the
 * drivers are then Accuracy.SIZES_JIT, with two larger loops.
 *
 * Usage: AccuracyAB <rtdriver port> <pairs> [<collected warm-up rounds>]
 */
public class AccuracyAB {
    static final int CALLS = 2000;
    static long sink;
    static long[] lap = new long[CALLS];

    // Probe leaves: the loop of wK, timed from inside.
    static long p(int k, int i) {
        long t0 = System.nanoTime();
        long x = 0;
        for (int j = 0; j < k; j++) x += j * 7 + 1;
        lap[i] = System.nanoTime() - t0;
        return x;
    }

    static double probe(int k) {
        long s = 0;
        for (int i = 0; i < CALLS; i++) s += p(k, i);
        sink += s;
        long[] l = lap.clone();
        java.util.Arrays.sort(l);
        return l[CALLS / 2];
    }

    static BufferedReader in;
    static OutputStream out;

    static String cmd(String c) throws Exception {
        out.write((c + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
        String r = in.readLine();
        if (r == null || !r.startsWith("OK")) throw new IllegalStateException(c + ": " + r);
        return r;
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int pairs = Integer.parseInt(args[1]);
        Socket s = new Socket("127.0.0.1", port);
        in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        out = s.getOutputStream();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        int warm = args.length > 2 ? Integer.parseInt(args[2]) : 0;
        int[] sizes = warm > 0 ? Accuracy.SIZES_JIT : Accuracy.SIZES;
        if (warm > 0)
            cmd("start");
        for (int w = 0; w < Math.max(1, warm); w++) {
            for (int size : sizes) {
                Accuracy.drive(size, CALLS);
                probe(size);
            }
        }
        if (warm > 0)
            cmd("end");
        // How many times longer a profiled phase took than a bare one, per
        // driver (the previous pair's): the bare phase runs its driver
        // that many times over, so that both halves of a pair last about
        // as long and a burst of other work is as likely to land in
        // either (the shorter one would meet fewer, which biases the
        // per-pair error up under load).
        java.util.Map<Integer, Integer> reps = new java.util.HashMap<>();
        for (int pair = 0; pair < pairs; pair++) {
            for (int size : sizes) {
                double bare = 0, prof = 0, pbare = 0, pprof = 0;
                String file = null;
                int rep = reps.getOrDefault(size, 1);
                for (int half = 0; half < 2; half++) {
                    boolean on = (half == 0) == (pair % 2 == 1);
                    if (on) cmd("start");
                    int n = on ? 1 : rep;
                    long t0 = mx.getCurrentThreadCpuTime();
                    for (int i = 0; i < n; i++)
                        Accuracy.drive(size, CALLS);
                    double per = (mx.getCurrentThreadCpuTime() - t0) / (double) (CALLS * n);
                    double pr = probe(size);
                    if (on) {
                        String r = cmd("end");
                        file = r.substring(r.lastIndexOf(' ') + 1);
                        prof = per;
                        pprof = pr;
                    } else {
                        bare = per;
                        pbare = pr;
                    }
                }
                reps.put(size, (int) Math.max(1, Math.min(16, Math.round(prof / bare))));
                System.out.printf("ab %d %.1f %.1f %s%n", size, bare, prof, file);
                System.out.printf("probe %d %.1f %.1f%n", size, pbare, pprof);
            }
        }
        cmd("exit_rtdriver");
        s.close();
        System.out.println("accuracyab: sink=" + (sink + Accuracy.sink));
    }
}
