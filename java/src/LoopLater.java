// LoopLater: a program whose main thread starts its lifelong loop
// (LaterRun.loop) once FILE exists, waiting for it in a loop of its own
// (LaterGate.await) before: for the test that a BCI profile attached
// before FILE appears leaves LaterGate as it was at its start and, at the
// detach, leaves LaterRun instrumented (loaded and instrumented during
// the profile, its loop running: restored, it would run interpreted).
// Arguments: FILE, then the seconds the loop runs.
public class LoopLater {
    public static void main(String[] args) throws InterruptedException {
        System.out.println("ready " + ProcessHandle.current().pid());
        LaterGate.await(java.nio.file.Path.of(args[0]));
        LaterRun.loop(System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L);
    }
}

final class LaterGate {
    static void await(java.nio.file.Path p) throws InterruptedException {
        while (!java.nio.file.Files.exists(p))
            Thread.sleep(10);
    }
}

final class LaterRun {
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
