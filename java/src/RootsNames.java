import java.io.BufferedReader;
import java.io.InputStreamReader;

/** Classes and methods whose names the ROOTS grammar test matches
 *  patterns against through the real agent (agent/rootsgrammar_test.go
 *  asks rtdriver roots= for each pattern's count): it loads them all,
 *  says "ready", and reads stdin until "quit". */
public class RootsNames {
    static int n;

    static void run() { n++; }
    static void runA() { n += 2; }
    static void rux() { n += 3; }

    static final class Inner {
        static void run() { n += 4; }
        static void ran() { n += 5; }

        static final class Deep {
            static void run() { n += 6; }
        }
    }

    static final class Inner2 {
        static void run() { n += 7; }
    }

    public static void main(String[] args) throws Exception {
        run();
        runA();
        rux();
        Inner.run();
        Inner.ran();
        Inner.Deep.run();
        Inner2.run();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
            run();
        }
        System.out.println("n=" + n);
    }
}
