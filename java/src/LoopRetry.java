// LoopRetry: a program whose main calls its server loop again whenever
// it fails (a retry loop around a lifelong loop), the server loop calling
// its work in a class of its own (LoopWork.step, in LoopMain.java): for
// the test that an attached BCI profile, which leaves the outermost loop's
// class as it was and cannot tell the server's loop from work that
// returns, names the server's loop in log-msg once it runs interpreted.
// Argument: the seconds it runs.
public class LoopRetry {
    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args.length > 0 ? args[0] : "60") * 1_000_000_000L;
        System.out.println("ready " + ProcessHandle.current().pid());
        while (System.nanoTime() < end) {
            try {
                RetryServer.serve(end);
            } catch (IllegalStateException e) {
                System.out.println("restarting: " + e.getMessage());
            }
        }
    }
}

final class RetryServer {
    static long sink;

    static void serve(long end) {
        long x = 1;
        while (System.nanoTime() < end) {
            x = LoopWork.step(x);
            sink = x;
        }
        if (sink == 42)
            throw new IllegalStateException("unlucky");
    }
}
