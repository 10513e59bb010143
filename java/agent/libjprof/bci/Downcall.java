package libjprof.bci;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.lang.reflect.Method;

/**
 * Downcall makes the method handles of Probe's FFM critical downcalls
 * (java.lang.foreign, JDK 22 and later): int f(int) at each address the
 * agent gives. Reflection, because the agent's classes are compiled for
 * Java 11 and run on 17, where the API is missing: there handles returns
 * null and the probes stay JNI natives.
 */
final class Downcall {
    private Downcall() {}

    /** Why the last handles call returned null (for log-msg), or null. */
    static String why;

    static MethodHandle[] handles(long[] addresses) {
        if (addresses == null)
            return null;
        try {
            Class<?> linkerC = Class.forName("java.lang.foreign.Linker");
            Class<?> optionC = Class.forName("java.lang.foreign.Linker$Option");
            Class<?> segmentC = Class.forName("java.lang.foreign.MemorySegment");
            Class<?> descC = Class.forName("java.lang.foreign.FunctionDescriptor");
            Class<?> layoutC = Class.forName("java.lang.foreign.MemoryLayout");
            Class<?> valueC = Class.forName("java.lang.foreign.ValueLayout");
            Object linker = linkerC.getMethod("nativeLinker").invoke(null);
            Object jint = valueC.getField("JAVA_INT").get(null);
            Object args = Array.newInstance(layoutC, 1);
            Array.set(args, 0, jint);
            Object desc = descC.getMethod("of", layoutC, args.getClass()).invoke(null, jint, args);
            // critical(false): no heap segments are passed, so the
            // downcall needs no GC lock either.
            Object options = Array.newInstance(optionC, 1);
            Array.set(options, 0, optionC.getMethod("critical", boolean.class).invoke(null, false));
            Method ofAddress = segmentC.getMethod("ofAddress", long.class);
            Method downcall = linkerC.getMethod("downcallHandle", segmentC, descC, options.getClass());
            MethodHandle[] h = new MethodHandle[addresses.length];
            for (int i = 0; i < h.length; i++)
                h[i] = (MethodHandle) downcall.invoke(linker, ofAddress.invoke(null, addresses[i]), desc, options);
            return h;
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            why = "this JDK has no FFM critical downcalls, which JDK 22 and later have";
        } catch (java.lang.reflect.InvocationTargetException e) {
            why = "FFM downcalls could not be made: " + e.getCause();
        } catch (Throwable e) {
            why = "FFM downcalls could not be made: " + e;
        }
        return null;
    }
}
