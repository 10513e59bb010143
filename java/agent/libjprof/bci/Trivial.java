package libjprof.bci;

import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
 * methods that make no event: java.base's (which is not instrumented)
 * and other trivial methods. That takes in empty methods, field getters
 * and setters, constant methods, one-line delegates to the JDK (an
 * AtomicInteger's get, a hashCode) and chains of them (a getter that
 * returns another object's getter, a constructor whose superclass's
 * constructor is empty): leaves of the profile that HotSpot always
 * inlines (its MaxInlineSize is 35 bytes, at every level of a chain),
 * whose own work, a few instructions, would cost less than the probes.
 * Their time, with that of the calls they make, counts in their
 * callers', as it does once the JIT has inlined them; a call that runs
 * an instrumented method anyway (an override of the trivial method
 * called, compareTo declared on a JDK type) shows that method under the
 * caller. (The NetBeans profiler, JFluid's successor, leaves out
 * getters, setters and empty methods by default.) A main method, a
 * thread's run and a ROOTS root are always instrumented: the tree
 * starts there.
 *
 * Whether a call's target is trivial is known from its class's scan:
 * the class itself, a class scanned before (its own load, or an earlier
 * lookup), or, read then, the class file its loader would define (the
 * JDK's loaders only; another loader's classes count as instrumented).
 * The scans are kept by class name, a set of method names each; a chain
 * is followed MAX_DEPTH classes deep. A scan is one pass of the class
 * file with the debug information and frames skipped.
 */
final class Trivial extends ClassVisitor {
    /** HotSpot's MaxInlineSize: methods up to it are inlined whatever their call count. */
    static final int MAX_BYTES = 35;
    /** Classes a lookup reads, one behind another, at most. */
    private static final int MAX_DEPTH = 4;

    /** Trivial methods by class, for the calls of classes scanned later;
     *  by name alone (two loaders' classes of one name may differ: then
     *  a tiny caller may be left out whose callee is instrumented, and
     *  the callee shows under the caller's caller). */
    private static final ConcurrentHashMap<String, Set<String>> known = new ConcurrentHashMap<>();

    private final ClassLoader loader;
    private final Selective sel;
    private final int depth;
    private String cls;
    /** Methods small and plain enough, each with the calls it makes
     *  that may make an event: {owner, name+desc}. */
    private final Map<String, List<String[]>> candidates = new HashMap<>();

    private Trivial(ClassLoader loader, Selective sel, int depth) {
        super(Opcodes.ASM9);
        this.loader = loader;
        this.sel = sel;
        this.depth = depth;
    }

    /** scan returns the name+descriptor of the class's trivial methods,
     *  without the roots of sel, and keeps them for later lookups. */
    static Set<String> scan(ClassReader cr, ClassLoader loader, Selective sel) {
        Set<String> found = new Trivial(loader, sel, 0).run(cr);
        known.put(cr.getClassName(), found);
        return found;
    }

    private Set<String> run(ClassReader cr) {
        cr.accept(this, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        Set<String> found = new HashSet<>();
        Map<String, Boolean> done = new HashMap<>();
        for (String m : candidates.keySet())
            if (trivial(m, done))
                found.add(m);
        return found.isEmpty() ? Set.of() : found;
    }

    /** trivial resolves a candidate of this class: its calls must all
     *  make no event. A cycle among the class's own methods is not
     *  trivial (it is a loop). */
    private boolean trivial(String m, Map<String, Boolean> done) {
        Boolean b = done.get(m);
        if (b != null)
            return b;
        List<String[]> calls = candidates.get(m);
        if (calls == null)
            return false;
        done.put(m, false);
        for (String[] c : calls) {
            boolean ok = c[0].equals(cls) ? trivial(c[1], done) : lookup(c[0], depth + 1).contains(c[1]);
            if (!ok || (sel != null && sel.isRoot(c[0], c[1].substring(0, c[1].indexOf('(')))))
                return false;
        }
        done.put(m, true);
        return true;
    }

    /** lookup returns what is known of another class's trivial methods,
     *  reading its class file when nothing is. */
    private Set<String> lookup(String owner, int d) {
        Set<String> s = known.get(owner);
        if (s != null || d > MAX_DEPTH)
            return s != null ? s : Set.of();
        byte[] b = classFile(owner);
        if (b == null) {
            known.putIfAbsent(owner, Set.of());
            return Set.of();
        }
        try {
            s = new Trivial(loader, sel, d).run(new ClassReader(Transformer.asmReadable(b)));
        } catch (RuntimeException e) {
            s = Set.of(); // a class file ASM cannot read: its methods count as instrumented
        }
        Set<String> had = known.putIfAbsent(owner, s);
        return had != null ? had : s;
    }

    /** classFile reads a class as the loader scanning it would find it:
     *  through a loader of the JDK's (the boot loader's classes through
     *  the platform loader, which finds any module's); another loader's
     *  resources could run the program's code or load its classes in the
     *  middle of a class load, so the system loader is asked instead. */
    private byte[] classFile(String owner) {
        ClassLoader l = loader == null ? ClassLoader.getPlatformClassLoader() : loader;
        if (l.getClass().getModule() != Object.class.getModule()) {
            l = ClassLoader.getSystemClassLoader();
            if (l.getClass().getModule() != Object.class.getModule())
                return null;
        }
        try (InputStream in = l.getResourceAsStream(owner + ".class")) {
            return in == null ? null : in.readAllBytes();
        } catch (Throwable e) {
            return null;
        }
    }

    /** entryPoint: a program's main and a thread's run, where a profile's
     *  tree starts, are always instrumented, however small. */
    static boolean entryPoint(String name, String desc) {
        // main()V: JDK 25's launcher also runs a main without String[].
        return (name.equals("main") && (desc.equals("([Ljava/lang/String;)V") || desc.equals("()V")))
                || (name.equals("run") && desc.equals("()V"));
    }

    @Override
    public void visit(int version, int access, String name, String sig, String sup, String[] ifs) {
        cls = name;
    }

    @Override
    public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
        if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_SYNCHRONIZED)) != 0 || entryPoint(name, desc)
                || (sel != null && sel.isRoot(cls, name)))
            return null;
        final String key = name + desc;
        return new MethodVisitor(Opcodes.ASM9) {
            int bytes;
            boolean heavy;
            final Set<Label> seen = new HashSet<>();
            final List<String[]> calls = new ArrayList<>();

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
                // Another is resolved once the class is scanned.
                if (owner.charAt(0) != '[' && !Transformer.neverInstrumented(owner))
                    calls.add(new String[] {owner, n + d});
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
                    candidates.put(key, calls);
            }
        };
    }
}
