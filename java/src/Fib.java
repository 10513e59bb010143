/** Recursion: fib(n) makes 2*fib(n+1)-1 calls of fib. */
public class Fib {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        System.out.println("fib(" + n + ")=" + fib(n));
    }
}
