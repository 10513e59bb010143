/** A CPU-bound workload with two hot methods of known relative cost:
 *  every round, heavy() does light()'s work three times, both under
 *  outer(). The sampled tree must show that path and about that ratio.
 *  Args: rounds (default 400), or "driven": then "run N" on stdin runs N
 *  rounds and answers "done N", "quit" ends. */
public class SampleHot {
    static long mix(long x, int n) {
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    // heavy repeats light's unit rather than running one three times as
    // long: while mix is still interpreted or being compiled, the two
    // then keep the 3:1 ratio call for call, instead of heavy alone
    // absorbing a slow warm-up.
    static long heavy(long x) { return mix(mix(mix(x, 100_000), 100_000), 100_000); }

    static long light(long x) { return mix(x, 100_000); }

    static long outer(long x) {
        x = heavy(x);
        return light(x);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("driven")) {
            driven();
            return;
        }
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 400;
        long x = 88172645463325252L;
        for (int r = 0; r < rounds; r++)
            x = outer(x);
        System.out.println("samplehot: " + (x & 0xff));
    }

    static void driven() throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        long x = 88172645463325252L;
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("quit"))
                break;
            if (line.startsWith("run ")) {
                int n = Integer.parseInt(line.substring(4).trim());
                for (int r = 0; r < n; r++)
                    x = outer(x);
                System.out.println("done " + n);
                System.out.flush();
            }
        }
        System.out.println("samplehot: " + (x & 0xff));
    }
}
