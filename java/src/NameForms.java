import java.util.Arrays;
import java.util.Comparator;
import java.util.Random;
import java.util.function.IntUnaryOperator;

/** Methods whose names exercise jprof's name forms: the JDK's TimSort
 *  (Arrays.sort of objects with a comparator: mergeLo(IIII)V and its
 *  kin), overloads that differ in parameters only, arrays of arrays, a
 *  nested class and its constructor, a lambda (a hidden class). */
public class NameForms {
    static final int N = 2000;

    static final class Box {
        final int v;
        Box(int v) { this.v = v; }
        int get() { return v; }
    }

    static long over(int x) { return x + 1; }
    static long over(String s) { return s.length(); }

    static int cells(String[][] grid, int[] extra) {
        int n = extra.length;
        for (String[] row : grid) n += row.length;
        return n;
    }

    public static void main(String[] args) {
        Random rnd = new Random(42);
        Box[] boxes = new Box[N];
        for (int i = 0; i < N; i++) boxes[i] = new Box(rnd.nextInt(N));
        Arrays.sort(boxes, Comparator.comparingInt(Box::get));
        IntUnaryOperator twice = x -> 2 * x;
        long sum = 0;
        for (int i = 0; i < 100; i++) {
            sum += over(i) + over("n" + i) + twice.applyAsInt(i);
        }
        sum += cells(new String[][] {{"a", "b"}, {"c"}}, new int[3]);
        System.out.println("nameforms: first=" + boxes[0].get() + " sum=" + sum);
    }
}
