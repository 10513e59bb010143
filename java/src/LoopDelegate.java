// LoopDelegate: a program whose main calls the loop it runs for its whole
// life (LoopRun.loop), which calls work in a class of its own
// (LoopWork.step, in LoopMain.java). main has a loop of its own, not
// running: for the test that an attached BCI profile leaves LoopRun as it
// was, and instruments LoopDelegate and LoopWork.
public class LoopDelegate {
    public static void main(String[] args) {
        for (String a : args)
            if (a.isEmpty())
                throw new IllegalArgumentException("an empty argument");
        System.out.println("ready " + ProcessHandle.current().pid());
        LoopRun.loop(System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L);
    }
}
