package libjprof.bci;

import java.lang.invoke.MethodHandle;

/**
 * Probe is what instrumented code calls: static native methods that the
 * agent registers with RegisterNatives (jvmti/bci.c), or on JDK 22 and
 * later FFM critical downcalls (fenter, fexit, funwind). The argument is
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
     * With ROOTS, whether a root frame runs in any thread. While it is 0
     * the other probes do not call the agent, which would drop their
     * events (a thread's events count only inside a root): a volatile
     * read and a branch once the JIT inlines them. The agent keeps it
     * (jvmti/bci.c) from the root probes, which are natives so that no
     * Java frame of theirs can overflow the stack between counting a
     * root frame and recording it.
     */
    private static volatile int rooted;

    /** A root method was entered. */
    public static native void rootEnter(int id);

    /** A root method returned normally. */
    public static native void rootExit(int id);

    /** A root method is being left by t, an exception. */
    public static native void rootUnwind(int id, Throwable t);

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
    public static void subUnwind(int id, Throwable t) {
        if (rooted != 0)
            unwind(id, t);
    }

    /** A method that may run inside a root caught an exception. */
    public static void subCaught(int id) {
        if (rooted != 0)
            caught(id);
    }

    /**
     * Catch-all handlers whose unwind call overflowed the stack (a
     * StackOverflowError near the stack's end: the native call needs
     * room the frame has not), and the exception they were passing on.
     * Such a handler has no room to call anything; it counts here
     * (field stores only) and throws its exception on. The next unwind
     * that passes the same exception on, further up that thread's
     * stack, tells the agent, which closes that many frames first:
     * otherwise, in a recursion, each exit would close the frame below
     * the one it left, and the thread's later calls would nest under
     * frames long gone. A handler passing on another exception than
     * the one counted starts the count again (the last one was caught
     * before any frame passed it on: those frames stay open). Global,
     * not per thread: a handler that overflows cannot find its thread;
     * two threads overflowing at the same moment can mix their counts.
     */
    public static int unwindsLost;
    public static Throwable unwindsLostBy;

    /**
     * With FFMPROBES, on JDK 22 and later, the probes of every method are
     * fenter, fexit and funwind: FFM critical downcalls into the same C code, without
     * the JNIEnv and thread-state transitions that are most of a JNI
     * call's cost, compiled by the JIT as a plain C call (jvmti/bci.c).
     * The C side returns 1 for an event it must not make there (a
     * thread's first, one that grows a map); the JNI native makes it.
     * Null without FFMPROBES and on older JDKs, where the transformer
     * calls the natives directly. A class of their own, which the agent
     * initializes once the natives are registered (JNI's FindClass
     * initializes the class it finds, Probe before that).
     */
    static final class Fast {
        private Fast() {}

        static final MethodHandle ENTER, EXIT, UNWIND;

        static {
            MethodHandle[] h = Downcall.handles(downcalls());
            ENTER = h != null ? h[0] : null;
            EXIT = h != null ? h[1] : null;
            UNWIND = h != null ? h[2] : null;
        }
    }

    /** The C entry points of the downcalls, or null for JNI probes. */
    private static native long[] downcalls();

    /** A method was entered (FFM). */
    public static void fenter(int id) throws Throwable {
        if ((int) Fast.ENTER.invokeExact(id) != 0)
            enter(id);
    }

    /** A method returned normally (FFM). */
    public static void fexit(int id) throws Throwable {
        if ((int) Fast.EXIT.invokeExact(id) != 0)
            exit(id);
    }

    /** A method is being left by an exception (FFM); after lost unwinds,
     *  through JNI, which can read them. */
    public static void funwind(int id, Throwable t) throws Throwable {
        if (unwindsLost != 0 || (int) Fast.UNWIND.invokeExact(id) != 0)
            unwind(id, t);
    }

    /** A method was entered. */
    public static native void enter(int id);

    /** A method returned normally. */
    public static native void exit(int id);

    /** A method is being left by t, an exception (its catch-all handler). */
    public static native void unwind(int id, Throwable t);

    /** One of a method's own exception handlers caught an exception:
     *  frames the agent still has open above it died without an exit
     *  it could see (a superclass constructor that threw: its call
     *  cannot be covered by the constructor's handler). */
    public static native void caught(int id);

    /** JLM: the monitor of o (whose identity hash is hash) was taken at
     *  site; its hash was read before it was taken, while unlocked, so
     *  that reading it never inflates a held monitor. */
    public static native void locked(Object o, int hash, int site);

    /** JLM: the monitor taken last is about to be released. */
    public static native void unlocking();

    /** JLM: registers a site where monitors are taken; returns its id. */
    static native int lockSite(String name);

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
}
