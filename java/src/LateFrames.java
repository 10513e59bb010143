/** Frames entered before profiling started: the Finalizer and Reference
 *  Handler threads sit in methods entered before VMInit, so once objects
 *  are finalized their exits arrive without entries. */
public class LateFrames {
    static int finalized;

    static final class Doomed {
        @Override
        @SuppressWarnings("deprecation")
        protected void finalize() {
            synchronized (LateFrames.class) {
                finalized++;
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 1000; i++) {
                new Doomed();
            }
            System.gc();
            System.runFinalization();
            Thread.sleep(20);
        }
        System.out.println("lateframes: done");
    }
}
