// AllocSites: three allocation sites with known shares of the bytes
// allocated, for the allocation profile's tests. args[0] is the MiB to
// allocate in all (at least 200 for the accuracy the tests ask); with a
// second argument it repeats until killed, printing "ready" first.
// Each site allocates arrays whose sizes are known exactly on 64-bit
// HotSpot (a 16-byte array header, sizes rounded to 8 bytes):
//   big:    byte[4080]  = 4096 bytes, 50% of the bytes
//   medium: long[126]   = 1024 bytes, 30%
//   small:  int[12]     = 64 bytes,   20%
// It prints each site's bytes when done, and the time the allocations
// took (ms, without the JVM's start and end): "bytes big=N medium=N
// small=N ms=T".
public class AllocSites {
    static volatile Object sink;

    static void big() {
        sink = new byte[4080];
    }

    static void medium() {
        sink = new long[126];
    }

    static void small() {
        sink = new int[12];
    }

    /** round allocates 40960 bytes: 5 big (20480), 12 medium (12288),
     *  128 small (8192). */
    static void round() {
        for (int i = 0; i < 5; i++)
            big();
        for (int i = 0; i < 12; i++)
            medium();
        for (int i = 0; i < 128; i++)
            small();
    }

    public static void main(String[] args) {
        long total = Long.parseLong(args[0]) << 20;
        boolean forever = args.length > 1;
        if (forever)
            System.out.println("ready " + ProcessHandle.current().pid());
        do {
            long t0 = System.nanoTime();
            long big = 0, medium = 0, small = 0;
            for (long done = 0; done < total; done += 40960) {
                round();
                big += 20480;
                medium += 12288;
                small += 8192;
            }
            if (!forever)
                System.out.println("bytes big=" + big + " medium=" + medium + " small=" + small + " ms="
                        + (System.nanoTime() - t0) / 1_000_000);
        } while (forever);
    }
}
