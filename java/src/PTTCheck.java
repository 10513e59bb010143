import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** Two threads whose CPU time the JVM itself measures, to check the PTT
 *  against: "spinner" spins for args[0] ms of its own CPU time, "sleeper"
 *  sleeps args[1] times args[2] ms. Each prints the CPU time its work()
 *  took by the JVM's thread CPU clock: "<name> cpu=<ns>". An optional
 *  args[3] "sleeper-first" starts the sleeper first, so that JVMs sharing
 *  one PTT work area do not start their threads in the same order. */
public class PTTCheck {
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static volatile long sink;

    static void spin(long ms) {
        long c0 = MX.getCurrentThreadCpuTime();
        long x = 0;
        while (MX.getCurrentThreadCpuTime() - c0 < ms * 1_000_000L) {
            for (int i = 0; i < 200_000; i++) x = x * 31 + i;
        }
        sink = x;
    }

    static void nap(int n, long ms) throws InterruptedException {
        for (int i = 0; i < n; i++) Thread.sleep(ms);
    }

    static Thread worker(String name, Runnable work) {
        return new Thread(() -> {
            long c0 = MX.getCurrentThreadCpuTime();
            work.run();
            long c1 = MX.getCurrentThreadCpuTime();
            System.out.println(name + " cpu=" + (c1 - c0));
        }, name);
    }

    public static void main(String[] args) throws InterruptedException {
        long spinMs = Long.parseLong(args[0]);
        int naps = Integer.parseInt(args[1]);
        long napMs = Long.parseLong(args[2]);
        Thread spinner = worker("spinner", () -> spin(spinMs));
        Thread sleeper = worker("sleeper", () -> {
            try { nap(naps, napMs); } catch (InterruptedException e) { throw new RuntimeException(e); }
        });
        boolean sleeperFirst = args.length > 3 && args[3].equals("sleeper-first");
        (sleeperFirst ? sleeper : spinner).start();
        (sleeperFirst ? spinner : sleeper).start();
        spinner.join();
        sleeper.join();
    }
}
