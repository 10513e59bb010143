package libjprof.bci;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.objectweb.asm.AnnotationVisitor;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.TypePath;

/**
 * MonitorProbes reports the monitors a method takes, for the exact lock
 * monitor (JLM). It sits after MethodProbes, before the writer:
 *
 *   [o] dup; System.identityHashCode; swap; dup_x1    [o h o]
 *   monitorenter                                       [o h]
 *   Probe.locked(o, h, site)                           []
 *   ...
 *   Probe.unlocking(); monitorexit
 *
 * and, in a synchronized method, Probe.locked(this or the class, ...)
 * after MethodProbes' entry probe and Probe.unlocking() before its exit
 * and unwind probes. The hash is read before monitorenter, while the
 * object is unlocked: reading it from a stack-locked object would make
 * HotSpot inflate the monitor. A synchronized method's monitor is taken
 * before its first instruction, so there the hash is read with the
 * monitor held: with HotSpot's legacy stack locking (JDK 22 and before),
 * an object hashed for the first time that way gets an inflated monitor.
 *
 * HotSpot's JIT compiles a method only if no instruction that can throw
 * runs with a monitor held outside a catch-all handler (GenerateOopMap's
 * monitor matching). javac's synchronized block covers the code from
 * the instruction after monitorenter with a catch-all that releases the
 * monitor; the call to locked() comes before that range, so it gets a
 * range of its own with javac's handler, first in the exception table
 * (the first catch-all that covers an instruction is the one the JIT
 * takes; an enclosing block's would release the wrong monitor): the
 * method's entries are held back and written after these. Code not shaped so (other
 * compilers) keeps the call uncovered: it runs, but interpreted, and
 * log-msg names the method. C1 compiles no method where a call sits in a
 * handler's block that the handler covers itself, as javac's does (its
 * handler releases the monitor inside its own range): there unlocking()
 * moves after the monitorexit, to the first instruction past that range.
 */
final class MonitorProbes extends MethodVisitor {
    private final String owner, name;
    private final int access;
    /** Whether the method is synchronized and its monitor reportable (a
     *  static one's class is loaded with ldc: class files 49 and later). */
    private final boolean sync;
    private int blocks, line;
    /** javac's catch-all ranges: start label to handler. */
    private final Map<Label, Label> catchAll = new HashMap<>();
    /** The last locked() call's range, until the next label tells
     *  whether javac's range begins there. */
    private Label coverStart, coverEnd;
    private boolean uncovered;
    /** Catch-all handlers that cover themselves: handler to range end;
     *  the end of the one being visited; whether its monitorexit's
     *  unlocking() waits for that end, or for the next instruction. */
    private final Map<Label, Label> selfCovered = new HashMap<>();
    /** The method's exception table entries, held back ({start, end,
     *  handler, type}), and the ranges of the locked() calls. */
    private final List<Object[]> table = new ArrayList<>(), covers = new ArrayList<>();
    /** A catch clause with a type annotation came: entries pass through
     *  at once (an annotation goes with the entry before it). */
    private boolean passThrough;
    private Label selfEnd;
    /** A monitorexit in such a handler was just visited; unlocking()
     *  is due at the next instruction (the range ended right after). */
    private boolean afterExit, unlockNext;

    MonitorProbes(MethodVisitor mv, String owner, int access, String name, boolean ldcClass) {
        super(Opcodes.ASM9, mv);
        this.owner = owner;
        this.name = name;
        this.access = access;
        boolean isStatic = (access & Opcodes.ACC_STATIC) != 0;
        sync = (access & Opcodes.ACC_SYNCHRONIZED) != 0 && (!isStatic || ldcClass);
    }

    private void locked(int site) {
        MethodProbes.pushInt(mv, site);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, Transformer.PROBE, "locked", "(Ljava/lang/Object;II)V", false);
    }

    private void unlocking() {
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, Transformer.PROBE, "unlocking", "()V", false);
    }

    private Label here() {
        Label l = new Label();
        mv.visitLabel(l);
        return l;
    }

    /** instruction: an instruction comes before any label after the last
     *  locked(): no javac range starts right after it. */
    private void instruction() {
        if (coverStart != null) {
            coverStart = null;
            uncovered = true;
        }
        if (afterExit || unlockNext) {
            // Right after the monitorexit (the range goes on: not javac's
            // shape, C1 then declines the method) or past the range.
            afterExit = unlockNext = false;
            unlocking();
        }
    }

    @Override
    public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
        if (type == null) {
            // javac's own handler of a synchronized block covers itself
            // too; an inner try-finally's may start at the same label.
            if (start == handler)
                selfCovered.put(handler, end);
            Label h = catchAll.get(start);
            if (h == null || !selfCovered.containsKey(h))
                catchAll.put(start, handler);
        }
        if (passThrough)
            super.visitTryCatchBlock(start, end, handler, type);
        else
            table.add(new Object[] {start, end, handler, type});
    }

    @Override
    public AnnotationVisitor visitTryCatchAnnotation(int typeRef, TypePath typePath, String desc, boolean visible) {
        if (!passThrough) {
            passThrough = true;
            flushTable();
        }
        return super.visitTryCatchAnnotation(typeRef, typePath, desc, visible);
    }

    private void flushTable() {
        for (List<Object[]> l : List.of(covers, table))
            for (Object[] e : l)
                super.visitTryCatchBlock((Label) e[0], (Label) e[1], (Label) e[2], (String) e[3]);
        covers.clear();
        table.clear();
    }

    @Override
    public void visitLabel(Label label) {
        if (afterExit) {
            afterExit = false;
            if (label == selfEnd)
                unlockNext = true; // javac's: at the first instruction past it
            else
                unlocking(); // before another label, which may be a jump's target
        }
        super.visitLabel(label);
        if (coverStart != null) {
            Label h = catchAll.get(label);
            if (h != null && !passThrough)
                covers.add(new Object[] {coverStart, coverEnd, h, null});
            else
                uncovered = true;
            coverStart = null;
        }
        if (label == selfEnd)
            selfEnd = null;
        Label end = selfCovered.get(label);
        if (end != null)
            selfEnd = end;
    }

    @Override
    public void visitLineNumber(int l, Label start) {
        line = l;
        super.visitLineNumber(l, start);
    }

    @Override
    public void visitInsn(int op) {
        instruction();
        if (op == Opcodes.MONITORENTER) {
            int site = Transformer.lockSite(owner, name, ++blocks, line);
            mv.visitInsn(Opcodes.DUP);
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, "java/lang/System", "identityHashCode", "(Ljava/lang/Object;)I", false);
            mv.visitInsn(Opcodes.SWAP);
            mv.visitInsn(Opcodes.DUP_X1);
            super.visitInsn(op);
            coverStart = here();
            locked(site);
            coverEnd = here();
            return;
        }
        if (op == Opcodes.MONITOREXIT && selfEnd == null)
            unlocking();
        super.visitInsn(op);
        if (op == Opcodes.MONITOREXIT && selfEnd != null)
            afterExit = true;
    }

    @Override
    public void visitMethodInsn(int op, String owner, String name, String desc, boolean itf) {
        instruction();
        boolean probe = owner.equals(Transformer.PROBE) && (desc.equals("(I)V") || desc.equals("(ILjava/lang/Throwable;)V"));
        if (sync && probe && isExitProbe(name))
            unlocking();
        super.visitMethodInsn(op, owner, name, desc, itf);
        if (sync && probe && isEntryProbe(name)) {
            if ((access & Opcodes.ACC_STATIC) != 0)
                mv.visitLdcInsn(Type.getObjectType(this.owner));
            else
                mv.visitVarInsn(Opcodes.ALOAD, 0);
            mv.visitInsn(Opcodes.DUP);
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, "java/lang/System", "identityHashCode", "(Ljava/lang/Object;)I", false);
            locked(Transformer.lockSite(this.owner, this.name, 0, 0));
        }
    }

    private static boolean isEntryProbe(String n) {
        return n.equals("enter") || n.equals("rootEnter") || n.equals("subEnter");
    }

    private static boolean isExitProbe(String n) {
        return n.equals("exit") || n.equals("rootExit") || n.equals("subExit")
                || n.equals("unwind") || n.equals("rootUnwind") || n.equals("subUnwind");
    }

    @Override
    public void visitIntInsn(int op, int operand) {
        instruction();
        super.visitIntInsn(op, operand);
    }

    @Override
    public void visitVarInsn(int op, int var) {
        instruction();
        super.visitVarInsn(op, var);
    }

    @Override
    public void visitTypeInsn(int op, String type) {
        instruction();
        super.visitTypeInsn(op, type);
    }

    @Override
    public void visitFieldInsn(int op, String owner, String name, String desc) {
        instruction();
        super.visitFieldInsn(op, owner, name, desc);
    }

    @Override
    public void visitInvokeDynamicInsn(String name, String desc, Handle bsm, Object... args) {
        instruction();
        super.visitInvokeDynamicInsn(name, desc, bsm, args);
    }

    @Override
    public void visitJumpInsn(int op, Label label) {
        instruction();
        super.visitJumpInsn(op, label);
    }

    @Override
    public void visitLdcInsn(Object value) {
        instruction();
        super.visitLdcInsn(value);
    }

    @Override
    public void visitIincInsn(int var, int increment) {
        instruction();
        super.visitIincInsn(var, increment);
    }

    @Override
    public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
        instruction();
        super.visitTableSwitchInsn(min, max, dflt, labels);
    }

    @Override
    public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
        instruction();
        super.visitLookupSwitchInsn(dflt, keys, labels);
    }

    @Override
    public void visitMultiANewArrayInsn(String desc, int dims) {
        instruction();
        super.visitMultiANewArrayInsn(desc, dims);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
        // Nothing after the last instruction: a call there would fall off
        // the end of the code.
        afterExit = unlockNext = false;
        instruction();
        if (uncovered)
            Probe.note("JLM: " + owner.replace('/', '.') + "." + name
                    + ": a monitorenter not followed by a catch-all range (not javac's shape): the method stays interpreted");
        flushTable();
        // Up to three more than MethodProbes counted (one of its own):
        // the object, its hash and the site.
        super.visitMaxs(maxStack + 2, maxLocals);
    }
}
