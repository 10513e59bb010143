import java.io.BufferedReader;
import java.io.InputStreamReader;

/** A program driven from stdin, so tests can interleave its work with
 *  rtdriver commands: "call N" calls work() N times and answers "done N";
 *  "ncall N" calls the native nmul() N times and answers "ndone N";
 *  "quit" ends it. */
public class Driven {
    static long total;

    static long work(int x) { return leaf(x) + 1; }
    // A loop: not trivial, so neither is work (BCI instruments both).
    static long leaf(int x) { long s = x; for (int i = 0; i < 2; i++) s = s * 31 + i; return s; }
    static native long nmul(int x);

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("quit")) {
                break;
            }
            if (line.startsWith("call ")) {
                int n = Integer.parseInt(line.substring(5).trim());
                for (int i = 0; i < n; i++) {
                    total += work(i);
                }
                System.out.println("done " + n);
                System.out.flush();
            }
            if (line.startsWith("ncall ")) {
                System.loadLibrary("jpnative");
                int n = Integer.parseInt(line.substring(6).trim());
                for (int i = 0; i < n; i++) {
                    total += nmul(i);
                }
                System.out.println("ndone " + n);
                System.out.flush();
            }
        }
        System.out.println("total=" + total);
    }
}
