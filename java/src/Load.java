/** Heavy load for flush tests: THREADS threads each call work() CALLS
 *  times (args: threads calls), then the program prints "load: done". */
public class Load {
    static int work(int x) { return leaf(x) + 1; }
    static int leaf(int x) { return x * 3; }

    public static void main(String[] args) throws InterruptedException {
        int threads = Integer.parseInt(args[0]);
        int calls = Integer.parseInt(args[1]);
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            ts[i] = new Thread(() -> {
                long s = 0;
                for (int c = 0; c < calls; c++) s += work(c);
                if (s == 42) System.out.println("unlikely");
            }, "load-" + i);
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        System.out.println("load: done");
    }
}
