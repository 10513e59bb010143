/** Nested classes whose own names hold '$', named as roots in the
 *  source's spelling (RootsDollar.Inner$Dollar.m$ethod): calls args[0]
 *  (default 1000) times each root, outside any other root. */
public class RootsDollar {
    static long sink;

    static final class Inner$Dollar {
        static int m$ethod(int a) { return a * 2 + 1; }

        static final class Deep {
            static int run(int a) { return a ^ 0x5a; }
        }
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        for (int i = 0; i < n; i++) {
            sink += Inner$Dollar.m$ethod(i);
            sink += Inner$Dollar.Deep.run(i);
        }
        System.out.println("rootsdollar: sink=" + sink);
    }
}
