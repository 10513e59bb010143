// LoopLater: a program whose main thread starts its lifelong loop
// (LoopRun.loop, in LoopMain.java) once FILE exists, waiting for it in a
// loop of its own (LaterGate.await) before: for the test that a BCI
// profile attached before FILE appears leaves LaterGate as it was at its
// start and, at the detach, leaves LoopRun instrumented (loaded and
// instrumented during the profile, its loop running: restored, it would
// run interpreted).
// Arguments: FILE, the seconds the loop runs, and optionally the seconds
// the program stays after it (for the test that the class is given its
// own bytes back once the loop has returned), and "virtual": the loop
// runs on a virtual thread (JDK 21+, started by reflection so that this
// compiles with older javac; "vthreads: unsupported" without them).
public class LoopLater {
    public static void main(String[] args) throws Exception {
        boolean virtual = args.length > 3 && args[3].equals("virtual");
        Object builder = null;
        if (virtual) {
            try {
                builder = Thread.class.getMethod("ofVirtual").invoke(null);
            } catch (NoSuchMethodException e) {
                System.out.println("vthreads: unsupported");
                return;
            }
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        LaterGate.await(java.nio.file.Path.of(args[0]));
        long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        if (virtual) {
            Runnable r = () -> LoopRun.loop(end);
            Thread t = (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class).invoke(builder, r);
            t.join();
        } else {
            LoopRun.loop(end);
        }
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
