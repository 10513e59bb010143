/** Exceptions unwinding three frames: level3 throws, level2 and level1 pass
 *  it on, run catches it. Each round: 3 exits by exception. */
public class Exceptions {
    static final int ROUNDS = 100;

    static void level1(int i) { level2(i); }
    static void level2(int i) { level3(i); }
    static void level3(int i) { throw new IllegalStateException("round " + i); }

    static int run() {
        int caught = 0;
        for (int i = 0; i < ROUNDS; i++) {
            try {
                level1(i);
            } catch (IllegalStateException e) {
                caught++;
            }
            after();
        }
        return caught;
    }

    static void after() { }

    public static void main(String[] args) {
        System.out.println("caught=" + run());
    }
}
