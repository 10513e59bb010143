import java.util.ArrayList;
import java.util.List;

/**
 * libjprof's calibration trainer (seed 000 §4, seed 004): drives method
 * events into every sequence of method types and transitions HotSpot
 * produces with JVMTI method events on — interpreted and native, static and
 * instance, normal and exception exits, from Java, native and thread-root
 * callers, shallow and deep — many times each, so that the agent finds the
 * true minimum delta of each sequence (CALOUT= writes them).
 *
 * <pre>
 *   java -agentpath:build/libjprof.so=RTARCF,START,METRICS=PTT_TIME,CALOUT=t.cal \
 *        -Djava.library.path=build/native -cp build/java Trainer [--reps N]
 *   java -Xint -Djava.library.path=build/native -cp build/java Trainer --env
 * </pre>
 *
 * Each pattern runs --reps times (default 5000) from each of four drivers
 * (static and instance, Java and native) and reps/2 times from the thread
 * root, so every sequence it targets gets more than 20 000 events per run.
 * The patterns are in TrainerCases (generated) and java/native/trainer.c
 * (library jptrainer); without that library the native patterns are
 * skipped, except a few with JDK natives. --env measures, without the
 * agent, the cost of each call pattern by differential timing and prints
 * lines "env CALLER CALLEE EXIT NS" (type letters, Ex or Xx, ns per call)
 * for package trainer to parse.
 */
public final class Trainer {
    static int reps = 5000;
    static int threads = 200;
    static int trials = 7;
    static long targetNs = 10_000_000;
    static boolean env;
    static boolean verbose;

    public static void main(String[] args) {
        try {
            parseArgs(args);
        } catch (IllegalArgumentException e) {
            System.err.println("Trainer: " + e.getMessage());
            System.err.println("usage: Trainer [--reps N] [--threads N] [--verbose] [--env [--trials N] [--target-ms N]]");
            System.exit(2);
        }
        boolean natives = loadNatives();
        if (env) {
            TrainerEnv.run(natives, trials, targetNs);
            return;
        }
        System.exit(train(natives) ? 0 : 1);
    }

    static void parseArgs(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
            case "--env": env = true; break;
            case "--verbose": verbose = true; break;
            case "--reps": reps = intArg(args, ++i, a, 1); break;
            case "--threads": threads = intArg(args, ++i, a, 0); break;
            case "--trials": trials = intArg(args, ++i, a, 1); break;
            case "--target-ms": targetNs = intArg(args, ++i, a, 1) * 1_000_000L; break;
            default: throw new IllegalArgumentException("unknown argument " + a);
            }
        }
    }

    static int intArg(String[] args, int i, String name, int min) {
        if (i >= args.length)
            throw new IllegalArgumentException(name + " needs a number");
        try {
            int v = Integer.parseInt(args[i]);
            if (v < min)
                throw new IllegalArgumentException(name + " must be at least " + min);
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " " + args[i] + ": not a number");
        }
    }

    /** Loads jptrainer and hands it the callables; false without it. */
    static boolean loadNatives() {
        try {
            System.loadLibrary("jptrainer");
        } catch (UnsatisfiedLinkError e) {
            System.out.println("# trainer: native library jptrainer not found (" + e.getMessage()
                    + "): native patterns skipped, JDK natives only");
            return false;
        }
        TrainerCases.register();
        return true;
    }

    /** Runs every pattern; false if the patterns did not behave. */
    static boolean train(boolean natives) {
        long t0 = System.nanoTime();
        List<Integer> usable = new ArrayList<>();
        for (int c = 0; c < TrainerCases.NCALLABLES; c++)
            if (natives || !TrainerCases.NATIVE[c])
                usable.add(c);
        int[] cs = usable.stream().mapToInt(Integer::intValue).toArray();

        Tally t = new Tally();
        // Every b-role and leaf from drivers of each type.
        for (int c : cs) {
            long c0 = System.nanoTime();
            t.add(c, reps, TrainerCases.iDrive(c, reps));
            t.add(c, reps, TrainerCases.R.IDrive(c, reps));
            if (natives) {
                t.add(c, reps, TrainerCases.nDrive(c, reps));
                t.add(c, reps, TrainerCases.R.NDrive(c, reps));
            }
            if (verbose)
                System.out.printf("# %-16s %8d us%n", TrainerCases.NAMES[c], (System.nanoTime() - c0) / 1000);
        }
        phase("patterns", t0);
        // From the root of a native thread attached to the JVM: Other calls
        // every pattern, and every leaf after every leaf, so that the root
        // runs between each kind of return and each kind of call.
        if (natives) {
            int[] seq = new int[cs.length + 2 * TrainerCases.NLEAVES * TrainerCases.NLEAVES];
            System.arraycopy(cs, 0, seq, 0, cs.length);
            int k = cs.length;
            for (int a = 0; a < TrainerCases.NLEAVES; a++) {
                for (int b = 0; b < TrainerCases.NLEAVES; b++) {
                    seq[k++] = a;
                    seq[k++] = b;
                }
            }
            int rootReps = Math.max(1, reps / 2);
            int caught = TrainerCases.rootDrive(seq, rootReps);
            if (caught < 0) {
                System.out.println("# trainer: the root driver could not attach a thread");
                t.bad = true;
            } else {
                t.addAll(seq, rootReps, caught);
            }
        }
        phase("thread root", t0);
        // Deep: the same patterns with many frames below.
        int deepReps = Math.max(1, reps / 20);
        t.merge(TrainerDeep.run(cs, deepReps, 100));
        phase("deep", t0);
        // Thread starts and ends: the JVM's own calls from thread roots.
        t.merge(TrainerDeep.threads(cs, threads));
        phase("threads", t0);
        // JDK natives, which need no library.
        t.merge(TrainerDeep.jdkNatives(reps));
        phase("JDK natives", t0);

        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("trainer: %d patterns x %d drivers%s, %d reps: %d calls, %d method events, natives %s, %d ms%n",
                cs.length, natives ? 4 : 2, natives ? " + thread root" : "", reps, t.calls, t.events,
                natives ? "jptrainer" : "JDK only", ms);
        if (t.bad || t.caught != t.expected) {
            System.out.printf("trainer: FAILED: %d exceptions caught, %d expected%n", t.caught, t.expected);
            return false;
        }
        System.out.printf("trainer: ok: %d exceptions thrown and caught as expected%n", t.caught);
        return true;
    }

    static void phase(String name, long t0) {
        if (verbose)
            System.out.printf("# %s done at %d ms%n", name, (System.nanoTime() - t0) / 1_000_000);
    }

    /** Counts calls, events and exceptions against what the patterns promise. */
    static final class Tally {
        long calls, events, caught, expected;
        boolean bad;

        void add(int c, int n, int caught) {
            if (caught < 0) {
                bad = true;
                return;
            }
            calls += n;
            events += (long) n * 2 * invocations(c);
            this.caught += caught;
            if (TrainerCases.THROWS[c])
                expected += n;
        }

        void addAll(int[] cs, int n, int caught) {
            for (int c : cs)
                add(c, n, 0);
            add(0, 0, caught);
        }

        void merge(Tally o) {
            calls += o.calls;
            events += o.events;
            caught += o.caught;
            expected += o.expected;
            bad |= o.bad;
        }

        /** Method invocations in one call of callable c: the callable and its leaves. */
        static int invocations(int c) {
            String n = TrainerCases.NAMES[c];
            if (n.contains("seq"))
                return 3;
            return n.contains("(") ? 2 : 1;
        }
    }
}
