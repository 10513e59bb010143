import java.util.Arrays;
import java.util.Locale;

/**
 * The trainer's --env mode: without the agent (and under -Xint, the
 * execution mode method events force), the cost of each call pattern —
 * a caller of type i, I, n or N calling a leaf of type i, I, n or N that
 * returns (Ex) or throws (Xx) — measured by differential timing: the same
 * loop with and without the call, many calls, the median of several trials.
 * Output, one line per pattern: "env CALLER CALLEE EXIT NS", NS in ns per
 * call; lines starting with '#' are comments.
 */
final class TrainerEnv {
    static final String LETTERS = "iInN";

    static void run(boolean natives, int trials, long targetNs) {
        String info = System.getProperty("java.vm.info", "");
        System.out.println("# libjprof trainer env: " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.vm.version") + " (" + info + "), " + trials + " trials");
        if (!info.contains("interpreted")) {
            System.out.println("# warning: not running interpreted (-Xint): these are not the costs"
                    + " of the execution mode method events force");
        }
        char[] callers = natives ? new char[] {'i', 'I', 'n', 'N'} : new char[] {'i', 'I'};
        for (char caller : callers) {
            for (int leaf = 0; leaf < TrainerCases.NLEAVES; leaf++) {
                if (!natives && TrainerCases.NATIVE[leaf])
                    continue;
                double ns = measure(caller, leaf, trials, targetNs);
                System.out.println(String.format(Locale.ROOT, "env %c %c %s %.2f", caller,
                        LETTERS.charAt(leaf / 2), leaf % 2 == 0 ? "Ex" : "Xx", ns));
            }
        }
    }

    /** ns for n calls of leaf (nothing for leaf < 0) from a caller of the given type. */
    static long time(char caller, int leaf, int n) {
        switch (caller) {
        case 'n': return TrainerCases.nEnv(leaf, n);
        case 'N': return TrainerCases.R.NEnv(leaf, n);
        default: return TrainerCases.envJava(caller, leaf, n);
        }
    }

    static double measure(char caller, int leaf, int trials, long targetNs) {
        time(caller, leaf, 100); // resolve and warm up
        time(caller, -1, 100);
        int n = 1000;
        while (n < (1 << 26) && time(caller, leaf, n) < targetNs)
            n *= 2;
        double[] d = new double[trials];
        for (int t = 0; t < trials; t++) {
            long base = time(caller, -1, n);
            long with = time(caller, leaf, n);
            d[t] = (with - base) / (double) n;
        }
        Arrays.sort(d);
        return d[trials / 2];
    }
}
