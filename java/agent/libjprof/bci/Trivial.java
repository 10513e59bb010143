package libjprof.bci;

import java.util.HashSet;
import java.util.Set;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Trivial finds the methods of a class that cannot hold a profile's
 * answer, which the transformer leaves uninstrumented unless ALLMETHODS
 * is given: methods that have no loop, throw nothing themselves, catch
 * nothing (a handler's work, an exception's cost, is an answer), take no
 * monitor, have at most MAX_BYTES of bytecode and call nothing but
 * methods of java.base (which is not instrumented). That takes in empty
 * methods, field getters and setters, constant methods and one-line
 * delegates to the JDK (an AtomicInteger's get, a hashCode): leaves of
 * the profile that HotSpot always inlines (its MaxInlineSize is 35
 * bytes), whose own work, a few instructions, would cost less than the
 * probes. Their time, with that of the JDK calls they make, counts in
 * their callers', as it does once the JIT has inlined them; a call
 * declared on a JDK type that runs the program's code (hashCode,
 * compareTo, Runnable.run) shows that code under the caller. (The NetBeans profiler, JFluid's successor,
 * leaves out getters, setters and empty methods by default.) A main
 * method and a thread's run are always instrumented: the tree starts
 * there.
 *
 * A scan is one pass of the class file with the debug information and
 * frames skipped.
 */
final class Trivial extends ClassVisitor {
    /** HotSpot's MaxInlineSize: methods up to it are inlined whatever their call count. */
    static final int MAX_BYTES = 35;

    private final Set<String> found = new HashSet<>();

    private Trivial() {
        super(Opcodes.ASM9);
    }

    /** scan returns the name+descriptor of the class's trivial methods. */
    static Set<String> scan(ClassReader cr) {
        Trivial t = new Trivial();
        cr.accept(t, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return t.found;
    }

    /** entryPoint: a program's main and a thread's run, where a profile's
     *  tree starts, are always instrumented, however small. */
    static boolean entryPoint(String name, String desc) {
        // main()V: JDK 25's launcher also runs a main without String[].
        return (name.equals("main") && (desc.equals("([Ljava/lang/String;)V") || desc.equals("()V")))
                || (name.equals("run") && desc.equals("()V"));
    }

    @Override
    public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
        if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_SYNCHRONIZED)) != 0 || entryPoint(name, desc))
            return null;
        final String key = name + desc;
        return new MethodVisitor(Opcodes.ASM9) {
            int bytes;
            boolean heavy;
            final Set<Label> seen = new HashSet<>();

            private void add(int n) {
                bytes += n;
                heavy |= bytes > MAX_BYTES;
            }

            @Override
            public void visitLabel(Label l) {
                seen.add(l);
            }

            @Override
            public void visitInsn(int op) {
                heavy |= op == Opcodes.ATHROW || op == Opcodes.MONITORENTER;
                add(1);
            }

            @Override
            public void visitIntInsn(int op, int operand) {
                add(op == Opcodes.SIPUSH ? 3 : 2);
            }

            @Override
            public void visitVarInsn(int op, int var) {
                add(var <= 3 ? 1 : var <= 255 ? 2 : 4);
            }

            @Override
            public void visitTypeInsn(int op, String type) {
                add(3);
            }

            @Override
            public void visitFieldInsn(int op, String owner, String n, String d) {
                add(3);
            }

            @Override
            public void visitMethodInsn(int op, String owner, String n, String d, boolean itf) {
                // A call into a class that is never instrumented (java.base)
                // adds no node: the method is still a leaf of the profile.
                heavy |= !Transformer.neverInstrumented(owner);
                add(op == Opcodes.INVOKEINTERFACE ? 5 : 3);
            }

            @Override
            public void visitInvokeDynamicInsn(String n, String d, Handle bsm, Object... args) {
                heavy = true;
            }

            @Override
            public void visitJumpInsn(int op, Label l) {
                // A jump to a label already seen goes backwards: a loop.
                heavy |= seen.contains(l) || op == Opcodes.JSR;
                add(3);
            }

            @Override
            public void visitLdcInsn(Object v) {
                add(v instanceof Long || v instanceof Double ? 3 : 2);
            }

            @Override
            public void visitIincInsn(int var, int inc) {
                add(3);
            }

            @Override
            public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
                heavy = true;
            }

            @Override
            public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
                heavy = true;
            }

            @Override
            public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
                heavy = true;
            }

            @Override
            public void visitMultiANewArrayInsn(String d, int dims) {
                add(4);
            }

            @Override
            public void visitEnd() {
                if (!heavy)
                    found.add(key);
            }
        };
    }
}
