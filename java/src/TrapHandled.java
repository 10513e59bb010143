import java.lang.reflect.Proxy;

/**
 * TrapHandled installs a Java handler for SIGTRAP (HotSpot then installs
 * a native one for it), then computes for args[0] seconds: a program
 * whose SIGTRAP SAMPLE must leave alone when a profiler attaches, its
 * perf events signalling with SIGPROF instead. A SIGTRAP sent to it is
 * counted and printed at the end ("traps: N"). sun.misc.Signal is
 * reached by reflection: named in the source, it makes javac warn.
 */
public class TrapHandled {
    static volatile long sink;
    static volatile int traps;

    static long step(long x) {
        return x * 6364136223846793005L + 1442695040888963407L;
    }

    public static void main(String[] args) throws Exception {
        Class<?> sig = Class.forName("sun.misc.Signal"), handler = Class.forName("sun.misc.SignalHandler");
        Object h = Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler}, (p, m, a) -> {
            if (m.getName().equals("handle"))
                traps++;
            return null;
        });
        sig.getMethod("handle", sig, handler).invoke(null, sig.getConstructor(String.class).newInstance("TRAP"), h);
        System.out.println("trap handler installed");
        long end = System.nanoTime() + (long) (Double.parseDouble(args.length > 0 ? args[0] : "5") * 1e9);
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100000; i++)
                x = step(x);
            sink = x;
        }
        Thread.sleep(100); // the handler runs on a thread of its own
        System.out.println("traps: " + traps);
    }
}
