/** Ten hot methods of known relative cost: mK does K units of the same
 *  work each round, so its share of the CPU time is K/55. For comparing a
 *  sampled profile's shares with the truth, the exact mode and JFR.
 *  Args: rounds (default 300). */
public class SampleMix {
    static long unit(long x, int n) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    static final int U = 20_000;

    static long m1(long x) { return unit(x, 1 * U); }
    static long m2(long x) { return unit(x, 2 * U); }
    static long m3(long x) { return unit(x, 3 * U); }
    static long m4(long x) { return unit(x, 4 * U); }
    static long m5(long x) { return unit(x, 5 * U); }
    static long m6(long x) { return unit(x, 6 * U); }
    static long m7(long x) { return unit(x, 7 * U); }
    static long m8(long x) { return unit(x, 8 * U); }
    static long m9(long x) { return unit(x, 9 * U); }
    static long m10(long x) { return unit(x, 10 * U); }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        long x = 88172645463325252L;
        for (int r = 0; r < rounds; r++) {
            x = m1(x); x = m2(x); x = m3(x); x = m4(x); x = m5(x);
            x = m6(x); x = m7(x); x = m8(x); x = m9(x); x = m10(x);
        }
        System.out.println("samplemix: " + (x & 0xff));
    }
}
