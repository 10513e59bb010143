/** hellop: the example of the Performance Inspector paper (seed 000, Figure 6).
 *  main calls myA() 1000 times; myA calls myC, which computes a value; main prints it. */
public class hellop {
    static final int LOOPS = 1000;
    long value;

    void myA() {
        value += myC();
    }

    long myC() {
        long x = 0;
        for (int i = 0; i < 100; i++) {
            x += i * 3 + 1;
        }
        return x;
    }

    public static void main(String[] args) {
        hellop h = new hellop();
        for (int i = 0; i < LOOPS; i++) {
            h.myA();
        }
        System.out.println("hellop: value=" + h.value);
    }
}
