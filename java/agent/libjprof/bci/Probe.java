package libjprof.bci;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Probe is what instrumented code calls: static native methods that the
 * agent registers with RegisterNatives (jvmti/bci.c). The argument is
 * the engine's method handle, fixed when the class was transformed.
 *
 * A static native call with an int constant is the cheapest way from
 * JIT-compiled code into the C engine that needs no VM internals: the
 * compiled caller passes the constant in a register and the JNI wrapper
 * costs about as much as a Java ThreadLocal append would (jvmti/bci.c
 * has the measurement and the choice); it touches no object, so it is
 * legal before super() in a constructor.
 */
public final class Probe {
    private Probe() {}

    /**
     * With ROOTS, the root frames running in all threads. While it is 0
     * the other probes do not call the agent, which would drop their
     * events (a thread's events count only inside a root): a volatile
     * read and a branch once the JIT inlines them. Root probes keep it,
     * in the same method version as their pair, so that an exit is
     * counted where its entry was.
     */
    private static volatile int rooted;
    private static final VarHandle ROOTED;
    static {
        try {
            ROOTED = MethodHandles.lookup().findStaticVarHandle(Probe.class, "rooted", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** A root method was entered. */
    public static void rootEnter(int id) {
        ROOTED.getAndAdd(1);
        enter(id);
    }

    /** A root method returned normally. */
    public static void rootExit(int id) {
        exit(id);
        ROOTED.getAndAdd(-1);
    }

    /** A root method is being left by an exception. */
    public static void rootUnwind(int id) {
        unwind(id);
        ROOTED.getAndAdd(-1);
    }

    /** A method that may run inside a root was entered. */
    public static void subEnter(int id) {
        if (rooted != 0)
            enter(id);
    }

    /** A method that may run inside a root returned normally. */
    public static void subExit(int id) {
        if (rooted != 0)
            exit(id);
    }

    /** A method that may run inside a root is being left by an exception. */
    public static void subUnwind(int id) {
        if (rooted != 0)
            unwind(id);
    }

    /** A method was entered. */
    public static native void enter(int id);

    /** A method returned normally. */
    public static native void exit(int id);

    /** A method is being left by an exception (its catch-all handler). */
    public static native void unwind(int id);

    /** Registers a method with the engine; returns its handle. */
    static native int register(String name, int type);

    /** Says something in log-msg. */
    static native void note(String msg);

    /** Marks a method as a root of selective instrumentation. */
    static native void markRoot(int id);

    /** Asks for Transformer.expand(-1) at the next entry inside a root. */
    static native void pending();

    /** Retransforms the loaded classes of these names. */
    static native void retransform(String[] names);

    /** Makes module from read module to (JVMTI AddModuleReads). */
    static native void addReads(Module from, Module to);
}
