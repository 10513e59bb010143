/**
 * The trainer's other passes (see Trainer): patterns run with many frames
 * below them, threads that start and end (the JVM's own calls from thread
 * roots, and an exception leaving run()), and JDK native methods, which
 * work without the trainer's native library.
 */
final class TrainerDeep {
    /** Runs every callable from Java drivers at the given depth. */
    static Trainer.Tally run(int[] cs, int reps, int depth) {
        if (depth > 0)
            return run(cs, reps, depth - 1);
        Trainer.Tally t = new Trainer.Tally();
        for (int c : cs) {
            t.add(c, reps, TrainerCases.iDrive(c, reps));
            t.add(c, reps, TrainerCases.R.IDrive(c, reps));
        }
        return t;
    }

    /** A short-lived thread: one pattern, then it returns or throws out of run(). */
    static final class Worker extends Thread {
        final int callable;
        final boolean throwOut;
        int caught = -1;

        Worker(int callable, boolean throwOut) {
            super("trainer-worker");
            this.callable = callable;
            this.throwOut = throwOut;
            setUncaughtExceptionHandler(Quiet.INSTANCE);
        }

        @Override
        public void run() {
            caught = TrainerCases.iDrive(callable, 1);
            if (throwOut)
                throw TrainerCases.EX;
        }
    }

    /** Swallows the exceptions workers throw out of run(). */
    static final class Quiet implements Thread.UncaughtExceptionHandler {
        static final Quiet INSTANCE = new Quiet();

        @Override
        public void uncaughtException(Thread t, Throwable e) { }
    }

    static Trainer.Tally threads(int[] cs, int n) {
        Trainer.Tally t = new Trainer.Tally();
        for (int i = 0; i < n; i++) {
            int c = cs[i % cs.length];
            Worker w = new Worker(c, i % 2 == 1);
            w.start();
            try {
                w.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                t.bad = true;
                return t;
            }
            t.add(c, 1, w.caught);
        }
        return t;
    }

    // JDK natives, interpreted callers: HotSpot posts method events for all
    // of these with events on (none is an interpreter intrinsic then).
    static final Object LOCK = new Object();

    static void jStatic() { Thread.currentThread(); }               // i -> n
    void jInstance() { hashCode(); }                                 // I -> N (Object.hashCode)
    static void jSeq() { Thread.currentThread(); LOCK.hashCode(); }  // i -> n, n -> N
    static void jThrowStatic() { try { Thread.sleep(-1); } catch (IllegalArgumentException | InterruptedException e) { } }
    void jThrowInstance() {
        synchronized (LOCK) {
            try { LOCK.wait(-1); } catch (IllegalArgumentException | InterruptedException e) { }
        }
    }

    static Trainer.Tally jdkNatives(int reps) {
        Trainer.Tally t = new Trainer.Tally();
        TrainerDeep o = new TrainerDeep();
        for (int r = 0; r < reps; r++) {
            jStatic();
            o.jInstance();
            jSeq();
        }
        // Their exceptions are built with stack traces: fewer of them.
        int few = Math.max(1, reps / 20);
        for (int r = 0; r < few; r++) {
            jThrowStatic();
            o.jThrowInstance();
        }
        t.calls = 3L * reps + 2L * few;
        t.events = 2L * (7L * reps + 4L * few);
        return t;
    }
}
