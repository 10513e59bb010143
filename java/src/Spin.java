/**
 * Spin runs a loop in main, calling nothing, for the milliseconds its
 * argument says (after printing "ready PID"), then exits: a program an
 * attached BCI profile sees nothing of.
 */
public class Spin {
    static volatile long x;

    public static void main(String[] args) {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        System.out.println("ready " + ProcessHandle.current().pid());
        while (System.nanoTime() < end)
            x++;
    }
}
