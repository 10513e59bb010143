// LoopDelegate: a program whose main calls the loop it runs for its whole
// life (LoopRun.loop), which calls work in a class of its own
// (LoopWork.step, in LoopMain.java). main has a loop of its own, not
// running: for the test that an attached BCI profile leaves LoopRun as it
// was, and instruments LoopDelegate and LoopWork. With "thread" after the
// seconds, the loop runs on a thread of its own whose lambda calls it, as
// an engine's thread does, main waiting for it; with "virtual", on a
// virtual thread (JDK 21+, beside one asleep; started by reflection so that this compiles
// with older javac; "vthreads: unsupported" without them).
public class LoopDelegate {
    public static void main(String[] args) throws InterruptedException {
        for (String a : args)
            if (a.isEmpty())
                throw new IllegalArgumentException("an empty argument");
        long end = System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L;
        if (args.length > 1 && (args[1].equals("thread") || args[1].equals("virtual"))) {
            Runnable r = () -> LoopRun.loop(end);
            Thread t;
            if (args[1].equals("thread")) {
                t = new Thread(r, "engine");
                t.start();
            } else {
                try {
                    Object b = Thread.class.getMethod("ofVirtual").invoke(null);
                    java.lang.reflect.Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
                    // A virtual thread asleep the whole run, unmounted:
                    // the looks walk its stack too (one walk of such a
                    // stack crashed JDK 25).
                    start.invoke(b, (Runnable) () -> {
                        try {
                            Thread.sleep(Long.MAX_VALUE / 1_000_000);
                        } catch (InterruptedException e) {
                            // the run is over
                        }
                    });
                    t = (Thread) start.invoke(b, r);
                } catch (NoSuchMethodException e) {
                    System.out.println("vthreads: unsupported");
                    return;
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            }
            System.out.println("ready " + ProcessHandle.current().pid());
            t.join();
            return;
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        LoopRun.loop(end);
    }
}
