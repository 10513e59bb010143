package libjprof.bci;

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

    /** Retransforms the loaded classes of these names. */
    static native void retransform(String[] names);

    /** Makes module from read module to (JVMTI AddModuleReads). */
    static native void addReads(Module from, Module to);
}
