/** Ten hot methods of known relative self time: mK runs K units of the
 *  same loop in its own body (no callee), so of the time the ten take, mK
 *  has K/55 as its self time, in the interpreter and compiled alike (each
 *  method is compiled on its own; nothing is inlined into another). The
 *  accuracy benchmark compares sampled self-time shares with the exact
 *  tree's and with JFR's on it. SampleMix keeps its work in one callee,
 *  which suits inclusive times, not self times.
 *  Args: rounds (default 100), unit iterations (default 20000). */
public class SelfMix {
    static int u = 20_000;

    static long m1(long x) { for (int i = 0, n = 1 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m2(long x) { for (int i = 0, n = 2 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m3(long x) { for (int i = 0, n = 3 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m4(long x) { for (int i = 0, n = 4 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m5(long x) { for (int i = 0, n = 5 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m6(long x) { for (int i = 0, n = 6 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m7(long x) { for (int i = 0, n = 7 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m8(long x) { for (int i = 0, n = 8 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m9(long x) { for (int i = 0, n = 9 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }
    static long m10(long x) { for (int i = 0, n = 10 * u; i < n; i++) { x ^= x << 13; x ^= x >>> 7; x ^= x << 17; } return x; }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        if (args.length > 1) u = Integer.parseInt(args[1]);
        long x = 88172645463325252L;
        long t0 = System.nanoTime();
        for (int r = 0; r < rounds; r++) {
            x = m1(x); x = m2(x); x = m3(x); x = m4(x); x = m5(x);
            x = m6(x); x = m7(x); x = m8(x); x = m9(x); x = m10(x);
        }
        System.out.printf("selfmix: %d rounds in %.3f s (%d)%n", rounds, (System.nanoTime() - t0) / 1e9, x & 0xff);
    }
}
