// LoopDelegate: a program whose main calls the loop it runs for its whole
// life (LoopRun.loop), which calls work in a class of its own
// (LoopWork.step, in LoopMain.java). main has a loop of its own, not
// running: for the test that an attached BCI profile leaves LoopRun as it
// was, and instruments LoopDelegate and LoopWork. With "thread" after the
// seconds, the loop runs on a thread of its own whose lambda calls it, as
// an engine's thread does, main waiting for it.
public class LoopDelegate {
    public static void main(String[] args) throws InterruptedException {
        for (String a : args)
            if (a.isEmpty())
                throw new IllegalArgumentException("an empty argument");
        long end = System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L;
        if (args.length > 1 && args[1].equals("thread")) {
            Thread t = new Thread(() -> LoopRun.loop(end), "engine");
            t.start();
            System.out.println("ready " + ProcessHandle.current().pid());
            t.join();
            return;
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        LoopRun.loop(end);
    }
}
