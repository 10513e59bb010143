// Sleeper is the JVM that the attach tests attach to: it says "ready"
// once its main method runs, then sleeps until it is killed.
public class Sleeper {
    public static void main(String[] args) throws InterruptedException {
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
