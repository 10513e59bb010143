import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

// HeapHold: holds a known number of objects of its own classes, for the
// heap tests. It starts holding args[0] Leaf objects (each with a 64-byte
// array) and, for each "grow N" line on stdin, N more; it answers each
// line with "held <leaves>" and ends at end of input.
public class HeapHold {
    static final class Leaf {
        final byte[] payload = new byte[64];
        final int id;

        Leaf(int id) {
            this.id = id;
        }
    }

    static final List<Leaf> held = new ArrayList<>();

    static void grow(int n) {
        for (int i = 0; i < n; i++)
            held.add(new Leaf(held.size()));
    }

    public static void main(String[] args) throws Exception {
        grow(Integer.parseInt(args[0]));
        System.out.println("held " + held.size());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null;) {
            String[] f = line.trim().split(" ");
            if (f.length == 2 && f[0].equals("grow"))
                grow(Integer.parseInt(f[1]));
            System.out.println("held " + held.size());
        }
    }
}
