// LoopMain: a program whose main thread runs one loop for its whole life,
// in the class of main, calling work in a class of its own
// (LoopWork.step). For the test that a BCI profile attached to it leaves
// LoopMain as it was (a retransformation would leave main's loop
// interpreted until it returned: never) and instruments LoopWork. step's
// loop is as long as main's own, so that the thread's stack changes depth
// as often as it can while the agent looks at it.
public class LoopMain {
    static volatile long sink;

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        long end = System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L;
        long s = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++)
                s = s * 31 + (i ^ (s >>> 7));
            s += LoopWork.step(s);
            sink = s;
        }
    }
}

/** LoopDelegate's run loop. */
final class LoopRun {
    static void loop(long end) {
        long s = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++)
                s = s * 31 + (i ^ (s >>> 7));
            s += LoopWork.step(s);
            LoopMain.sink = s;
        }
    }
}

final class LoopWork {
    static long step(long x) {
        long h = x;
        for (int i = 0; i < 1000; i++)
            h = h * 6364136223846793005L + i;
        return h;
    }
}
