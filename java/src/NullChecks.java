/** A hot loop whose NullPointerExceptions come from HotSpot's implicit null
 *  checks (a SIGSEGV the JVM handles) once the loop is JIT-compiled: the
 *  agent's own signal handlers must pass those through. */
public class NullChecks {
    static final class Box { int v; }

    static int read(Box b) { return b.v; }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 200000;
        Box[] boxes = { new Box(), null };
        int npes = 0;
        long sum = 0;
        for (int i = 0; i < n; i++) {
            try {
                sum += read(boxes[i & 1]);
            } catch (NullPointerException e) {
                npes++;
            }
        }
        System.out.println("nullchecks: npes=" + npes + " sum=" + sum);
    }
}
