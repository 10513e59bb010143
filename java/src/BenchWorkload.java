/**
 * The benchmark workload: a deterministic, call-heavy phase whose number of
 * method calls is known exactly, timed by the program itself so that the
 * harness (bench/) measures the phase and not JVM start-up.
 *
 *   java BenchWorkload <ops> [warm-up ops] [repetitions]
 *
 * runs the measured phase once per repetition (default 1) and prints one
 * line for each:
 *
 *   rep=<i> calls=<n> events=<2n> ns=<phase time> cpu=<phase thread CPU time> ops=<ops> check=<value>
 *
 * One op is CALLS_PER_OP calls:
 *   op()                        1  instance (I:)
 *   fib(FIB_N)                177  static recursion (i:)
 *   STEPS calls of Step.step()  8  instance, two receiver classes (I:)
 *   System.identityHashCode     1  static native (n:)
 *   Object.hashCode             1  instance native (N:)
 *   unwind1 -> unwind2 -> unwind3  3  static, all three exit by exception
 * and the measured phase() adds 1: calls = 1 + ops * CALLS_PER_OP, and with
 * method events on, events = 2 * calls (every call has an entry and an exit),
 * per repetition.
 *
 * ns is wall time (System.nanoTime); cpu is the thread's CPU time over the
 * same phase, which other processes competing for the CPU do not inflate
 * (the agent's per-event work runs on this thread, so it is in it).
 *
 * Repetitions let a harness on a shared machine keep the fastest one of a
 * run: bursts of other work inflate some repetitions, never deflate one.
 *
 * The warm-up runs the same code through warmUp(), so that under a call-tree
 * profiler the measured phase is the subtree main -> phase alone.
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class BenchWorkload {
    static final int FIB_N = 10;
    static final int FIB_CALLS = 177; // calls made by fib(10), itself included
    static final int STEPS = 8;
    static final int CALLS_PER_OP = 1 + FIB_CALLS + STEPS + 2 + 3;

    /** Preallocated, without a stack trace: a throw runs no Java code
     *  (no constructor, no fillInStackTrace), so the call count stays exact. */
    static final class Unwind extends RuntimeException {
        Unwind() { super("unwind", null, false, false); }
    }
    static final Unwind UNWIND = new Unwind();

    interface Step { long step(long acc, int j); }
    static final class Add implements Step {
        public long step(long acc, int j) { return acc + j; }
    }
    static final class Mix implements Step {
        public long step(long acc, int j) { return (acc ^ j) * 31; }
    }

    /** Identity hashes differ from run to run: they go here, not in check. */
    static long hashSink;

    final Step[] steps = { new Add(), new Mix() };
    final Object token = new Object();

    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    static void unwind1(int i) { unwind2(i); }
    static void unwind2(int i) { unwind3(i); }
    static void unwind3(int i) { if (i >= 0) throw UNWIND; }

    long op(int i) {
        long acc = fib(FIB_N);
        for (int j = 0; j < STEPS; j++)
            acc = steps[(i + j) & 1].step(acc, j);
        hashSink += System.identityHashCode(token) + token.hashCode();
        try {
            unwind1(i);
        } catch (Unwind e) {
            acc++;
        }
        return acc;
    }

    static long phase(BenchWorkload w, int ops) {
        long check = 0;
        for (int i = 0; i < ops; i++)
            check += w.op(i);
        return check;
    }

    static long warmUp(BenchWorkload w, int ops) { return phase(w, ops); }

    public static void main(String[] args) {
        int ops = args.length > 0 ? Integer.parseInt(args[0]) : 10000;
        int warm = args.length > 1 ? Integer.parseInt(args[1]) : Math.max(ops / 4, 1);
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        BenchWorkload w = new BenchWorkload();
        long check = warmUp(w, warm);
        long calls = 1 + (long) ops * CALLS_PER_OP;
        for (int r = 0; r < reps; r++) {
            long c0 = mx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            check += phase(w, ops);
            long t1 = System.nanoTime();
            long c1 = mx.getCurrentThreadCpuTime();
            System.out.println("rep=" + r + " calls=" + calls + " events=" + 2 * calls + " ns=" + (t1 - t0)
                    + " cpu=" + (c1 - c0) + " ops=" + ops + " check=" + check);
        }
    }
}
