/** Native methods, static and instance, including one that calls back into Java. */
public class Natives {
    static final int ROUNDS = 200;

    static native int staticNative(int x);
    native int instanceNative(int x);
    native int callsBack(int x);

    int callback(int x) { return x + 1; }

    public static void main(String[] args) {
        System.loadLibrary("jpnative");
        Natives n = new Natives();
        long sum = 0;
        for (int i = 0; i < ROUNDS; i++) {
            sum += staticNative(i);
            sum += n.instanceNative(i);
            sum += n.callsBack(i);
        }
        System.out.println("natives: sum=" + sum);
    }
}
