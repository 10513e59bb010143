/**
 * JLMClasses takes monitors of six classes at one site, take(): C1's
 * 100 times, C2's 200, ... C6's 600. JLM gives the first four classes
 * seen there a row each, and C5 and C6 share the row "(other)".
 */
public class JLMClasses {
    static class C1 {}
    static class C2 {}
    static class C3 {}
    static class C4 {}
    static class C5 {}
    static class C6 {}

    static int c;

    static void take(Object o) {
        synchronized (o) {
            c++;
        }
    }

    public static void main(String[] args) {
        Object[] os = {new C1(), new C2(), new C3(), new C4(), new C5(), new C6()};
        for (int r = 0; r < 100; r++)
            for (int i = 0; i < os.length; i++)
                for (int k = 0; k <= i; k++)
                    take(os[i]);
        System.out.println("jlmclasses: " + c);
    }
}
