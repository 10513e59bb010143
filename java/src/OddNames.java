/** Threads whose names hold a line break, spaces, a tab, a backslash,
 *  non-ASCII letters and a character outside the BMP (which the JVM hands
 *  to agents as modified UTF-8, i.e. bytes that are not valid UTF-8), each
 *  making a known number of calls. */
public class OddNames {
    static final String EVIL = "evil\nname with spaces\tand\\slash";
    static final String WIDE = "ünïcödé 日本 \uD83D\uDE00";
    static final int CALLS = 100;

    static int work(int x) { return leaf(x) + 1; }
    static int leaf(int x) { return x ^ 0x5a; }

    static class Named extends Thread {
        long sum;
        Named(String name) { super(name); }
        @Override public void run() {
            for (int i = 0; i < CALLS; i++) {
                sum += work(i);
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        Named evil = new Named(EVIL), wide = new Named(WIDE);
        evil.start();
        evil.join();
        wide.start();
        wide.join();
        System.out.println("oddnames: sum=" + (evil.sum + wide.sum));
    }
}
