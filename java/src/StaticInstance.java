/** Static and instance methods of the same shape. */
public class StaticInstance {
    static final int ROUNDS = 300;
    int state;

    static int sMethod(int x) { return x * 2; }
    int iMethod(int x) { state += x; return state; }

    public static void main(String[] args) {
        StaticInstance o = new StaticInstance();
        long sum = 0;
        for (int i = 0; i < ROUNDS; i++) {
            sum += sMethod(i);
            sum += o.iMethod(i);
        }
        System.out.println("static-instance: sum=" + sum);
    }
}
