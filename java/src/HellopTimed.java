/** HellopTimed: hellop's program with its loop timed from inside, for the
 *  benchmark's repeatability section: run without an agent, it shows how
 *  much the work of main's 1000 calls of myA (each calling myC) moves
 *  from one JVM run to the next on its own, beside the spread of the
 *  profiled runs of hellop. myA and myC are hellop's, unchanged. Prints
 *  the loop's wall time in ns. */
public class HellopTimed {
    static final int LOOPS = 1000;
    long value;

    void myA() {
        value += myC();
    }

    long myC() {
        long x = 0;
        for (int i = 0; i < 100; i++) {
            x += i * 3 + 1;
        }
        return x;
    }

    public static void main(String[] args) {
        HellopTimed h = new HellopTimed();
        long t0 = System.nanoTime();
        for (int i = 0; i < LOOPS; i++) {
            h.myA();
        }
        long t1 = System.nanoTime();
        System.out.println("loop_ns " + (t1 - t0) + " value=" + h.value);
    }
}
