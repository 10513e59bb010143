import java.io.InputStream;
import java.lang.reflect.Method;

/**
 * MethodChurn loads one class with many methods through many class
 * loaders and calls every method of every copy once: each copy's methods
 * are distinct methods to the JVM (class-loader churn, as in application
 * servers and scripting engines). Args: loaders (default 100). The class
 * has MethodChurn.Many.METHODS methods.
 */
public class MethodChurn {
    static final class Loader extends ClassLoader {
        private final byte[] bytes;

        Loader(byte[] bytes) {
            super(MethodChurn.class.getClassLoader());
            this.bytes = bytes;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.equals("ManyMethods")) {
                synchronized (getClassLoadingLock(name)) {
                    Class<?> c = findLoadedClass(name);
                    if (c == null) {
                        c = defineClass(name, bytes, 0, bytes.length);
                    }
                    return c;
                }
            }
            return super.loadClass(name, resolve);
        }
    }

    public static void main(String[] args) throws Exception {
        int loaders = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        byte[] bytes;
        try (InputStream in = MethodChurn.class.getResourceAsStream("/ManyMethods.class")) {
            bytes = in.readAllBytes();
        }
        long calls = 0;
        for (int l = 0; l < loaders; l++) {
            Class<?> c = new Loader(bytes).loadClass("ManyMethods");
            Object o = c.getDeclaredConstructor().newInstance();
            calls += (Integer) c.getMethod("callAll").invoke(o);
        }
        System.out.println("MethodChurn: " + loaders + " loaders, " + calls + " calls");
    }
}
