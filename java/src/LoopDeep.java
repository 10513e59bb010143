// LoopDeep: a program whose main runs its lifelong loop (LoopRun.loop, in
// LoopMain.java) under 70 frames of recursion, deeper than an attached
// BCI profile looks for running loops: for the test that the loop it
// misses, left running interpreted in a replaced method version, is
// named in log-msg. Argument: the seconds it runs.
public class LoopDeep {
    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L;
        System.out.println("ready " + ProcessHandle.current().pid());
        down(70, end);
    }

    static void down(int n, long end) {
        if (n == 0)
            LoopRun.loop(end);
        else
            down(n - 1, end);
    }
}
