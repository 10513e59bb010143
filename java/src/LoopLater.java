// LoopLater: a program whose main thread starts its lifelong loop
// (LoopRun.loop, in LoopMain.java) once FILE exists, waiting for it in a
// loop of its own (LaterGate.await) before: for the test that a BCI
// profile attached before FILE appears leaves LaterGate as it was at its
// start and, at the detach, leaves LoopRun instrumented (loaded and
// instrumented during the profile, its loop running: restored, it would
// run interpreted).
// Arguments: FILE, the seconds the loop runs, and optionally the seconds
// the program stays after it (for the test that the class is given its
// own bytes back once the loop has returned).
public class LoopLater {
    public static void main(String[] args) throws InterruptedException {
        System.out.println("ready " + ProcessHandle.current().pid());
        LaterGate.await(java.nio.file.Path.of(args[0]));
        LoopRun.loop(System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L);
        if (args.length > 2)
            Thread.sleep(Long.parseLong(args[2]) * 1000);
    }
}

final class LaterGate {
    static void await(java.nio.file.Path p) throws InterruptedException {
        while (!java.nio.file.Files.exists(p))
            Thread.sleep(10);
    }
}
