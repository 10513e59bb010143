package libjprof.bci;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * MethodProbes instruments one method:
 *
 *   Probe.enter(id)          first thing, also before super() in constructors
 *   try {                    from after enter (constructors: after super())
 *       body, with Probe.exit(id) before each return
 *   } catch (any t) {
 *       try { Probe.unwind(id, t); }
 *       catch (StackOverflowError e) { Probe.unwindsLost++; Probe.unwindsLostBy = t; }
 *       throw t;
 *   }
 *
 * (The inner catch: near the stack's end the unwind call itself
 * overflows; the handler then counts the lost exit with field stores,
 * which need no stack, and throws its own exception on, not the new
 * one; Probe.unwindsLost says what the agent does with the count.)
 * The catch-all is the last entry of the exception table, so the
 * method's own handlers see exceptions first; an exception that leaves
 * the method passes through it exactly once. In a constructor the code
 * before super() returns has an uninitialized this, which no handler of
 * the main range may cover: a second handler covers the code before the
 * super() call (the argument expressions), with a frame that holds
 * uninitializedThis and code that ends in athrow. The super() call itself
 * cannot be covered: HotSpot checks a handler of that instruction against
 * the state after it (this initialized) with the uninitialized flag still
 * set, which no stack map frame can match. So an exception thrown out of
 * the superclass constructor loses this constructor's exception exit
 * (the engine counts it as a missed exit when the caller's exit pops it).
 * Class files older than 51 carry no frames and are verified by
 * inference: there the code before super() is not covered either.
 *
 * A constructor may reach super() or this() on more than one path
 * (javac never writes one, other compilers and generators do: if (b)
 * super(1); else super(2);). Its code is then cut into ranges where this
 * is uninitialized and ranges where it is not, each covered by the
 * handler of its kind: this becomes initialized after the call
 * AdviceAdapter reports with onMethodEnter (once per path: it follows
 * forward jumps), and uninitialized again at a frame that says so, or,
 * without frames, at a label a jump reached while it was. The entry
 * probe stays the first instruction, so it runs once per call whatever
 * the path.
 */
final class MethodProbes extends AdviceAdapter {
    private final int id;
    private final boolean frames;
    private final boolean ctor;
    private final Label body = new Label();
    private boolean bodyStarted;
    // Constructors: whether this is uninitialized at the current point,
    // the label before the last <init> call seen while it was, the
    // start of the current range, the ranges closed so far ({start,
    // end} pairs, by kind), and labels a jump reached while this was
    // uninitialized (classes without frames).
    private boolean uninit;
    private Label lastInit, rangeStart;
    private final List<Label> preRanges = new ArrayList<>(), mainRanges = new ArrayList<>();
    private final Set<Label> uninitTargets = new HashSet<>();
    // Local 0 overwritten before super(): the pre-super handler's frame
    // (uninitializedThis in local 0) would not match; no such handler then.
    private boolean thisStored;

    /** Probe's methods called: enter, exit, unwind (for every method, as
     *  JNI natives or FFM downcalls; the roots of selective
     *  instrumentation, or the other methods there). */
    static final String[] ALL = {"enter", "exit", "unwind"}, FFM = {"fenter", "fexit", "funwind"}, ROOT = {"rootEnter", "rootExit", "rootUnwind"},
            SUB = {"subEnter", "subExit", "subUnwind"};
    private final String[] probes;
    private static final int ENTER = 0, EXIT = 1, UNWIND = 2;

    /** The handle as a constant of its own (ldc, marked CACHED_ID), which
     *  a cached class gets, so that a later run can put its own handle
     *  there. */
    private final boolean ldcId;

    MethodProbes(MethodVisitor mv, int access, String name, String desc, int id, boolean frames, String[] probes, boolean ldcId) {
        super(Opcodes.ASM9, mv, access, name, desc);
        this.id = id;
        this.ldcId = ldcId;
        this.probes = probes;
        this.frames = frames;
        this.ctor = name.equals("<init>");
    }

    private void call(int what) {
        // Straight to the next visitor: AdviceAdapter's own stack model
        // of a constructor must not see these (they leave the stack as it was).
        // An immediate where it fits: an ldc adds a constant per method,
        // and HotSpot matches each new constant of a retransformed class
        // against the whole old pool (the cost grows with methods x pool).
        if (ldcId)
            mv.visitLdcInsn(id < 0 ? id : id | TransformCache.CACHED_ID);
        else
            pushInt(mv, id);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, Transformer.PROBE, probes[what], "(I)V", false);
    }

    /** pushInt pushes an int constant, as an immediate where it fits. */
    static void pushInt(MethodVisitor mv, int v) {
        if (v >= Byte.MIN_VALUE && v <= Byte.MAX_VALUE)
            mv.visitIntInsn(Opcodes.BIPUSH, v);
        else if (v >= Short.MIN_VALUE && v <= Short.MAX_VALUE)
            mv.visitIntInsn(Opcodes.SIPUSH, v);
        else
            mv.visitLdcInsn(v);
    }

    @Override
    public void visitCode() {
        super.visitCode();
        if (ctor) {
            call(ENTER);
            uninit = true;
            rangeStart = new Label();
            mv.visitLabel(rangeStart);
        }
    }

    /** cut ends the current range of a constructor at end and starts one
     *  of the other kind at start. */
    private void cut(Label end, Label start) {
        (uninit ? preRanges : mainRanges).add(rangeStart);
        (uninit ? preRanges : mainRanges).add(end);
        uninit = !uninit;
        rangeStart = start;
        lastInit = null;
    }

    private Label here() {
        Label l = new Label();
        mv.visitLabel(l);
        return l;
    }

    @Override
    protected void onMethodEnter() {
        if (!ctor) {
            call(ENTER);
            mv.visitLabel(body);
        } else if (uninit) {
            // After the call that initialized this; the call itself is
            // left out of both ranges.
            Label end = lastInit;
            cut(end != null ? end : here(), here());
        }
        bodyStarted = true;
    }

    @Override
    public void visitFrame(int type, int nLocal, Object[] local, int nStack, Object[] stack) {
        super.visitFrame(type, nLocal, local, nStack, stack);
        if (!ctor || type != Opcodes.F_NEW)
            return;
        boolean u = false;
        for (int i = 0; i < nLocal && !u; i++)
            u = local[i] == Opcodes.UNINITIALIZED_THIS;
        for (int i = 0; i < nStack && !u; i++)
            u = stack[i] == Opcodes.UNINITIALIZED_THIS;
        if (u != uninit) {
            Label l = here();
            cut(!u && lastInit != null ? lastInit : l, l);
        }
    }

    @Override
    public void visitLabel(Label label) {
        super.visitLabel(label);
        if (ctor && !frames && !uninit && uninitTargets.contains(label))
            cut(label, label);
    }

    @Override
    public void visitJumpInsn(int opcode, Label label) {
        if (ctor && uninit)
            uninitTargets.add(label);
        super.visitJumpInsn(opcode, label);
    }

    @Override
    public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
        if (ctor && uninit) {
            uninitTargets.add(dflt);
            uninitTargets.addAll(Arrays.asList(labels));
        }
        super.visitTableSwitchInsn(min, max, dflt, labels);
    }

    @Override
    public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
        if (ctor && uninit) {
            uninitTargets.add(dflt);
            uninitTargets.addAll(Arrays.asList(labels));
        }
        super.visitLookupSwitchInsn(dflt, keys, labels);
    }

    @Override
    public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
        if (ctor && uninit && opcode == Opcodes.INVOKESPECIAL && name.equals("<init>")) {
            lastInit = new Label();
            mv.visitLabel(lastInit);
        }
        super.visitMethodInsn(opcode, owner, name, desc, itf);
    }

    @Override
    public void visitVarInsn(int opcode, int var) {
        if (ctor && uninit && var == 0 && opcode >= Opcodes.ISTORE && opcode <= Opcodes.ASTORE)
            thisStored = true;
        super.visitVarInsn(opcode, var);
    }

    @Override
    public void visitIincInsn(int var, int increment) {
        if (ctor && uninit && var == 0)
            thisStored = true;
        super.visitIincInsn(var, increment);
    }

    @Override
    protected void onMethodExit(int opcode) {
        if (opcode != Opcodes.ATHROW)
            call(EXIT);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
        Label end = new Label();
        mv.visitLabel(end);
        if (ctor) {
            (uninit ? preRanges : mainRanges).add(rangeStart);
            (uninit ? preRanges : mainRanges).add(uninit && lastInit != null ? lastInit : end);
        } else if (bodyStarted) {
            mainRanges.add(body);
            mainRanges.add(end);
        }
        if (ctor && frames && !thisStored && handler(preRanges)) {
            // No inner catch here: its frame could not hold the
            // uninitialized this, and this code is a constructor's
            // argument expressions, rarely where a stack ends.
            mv.visitFrame(Opcodes.F_NEW, 1, new Object[] {Opcodes.UNINITIALIZED_THIS}, 1, new Object[] {"java/lang/Throwable"});
            mv.visitInsn(Opcodes.DUP);
            unwind();
            mv.visitInsn(Opcodes.ATHROW);
        }
        if (handler(mainRanges)) {
            if (frames)
                mv.visitFrame(Opcodes.F_NEW, 0, new Object[0], 1, new Object[] {"java/lang/Throwable"});
            int t = newLocal(Type.getType(Throwable.class));
            mv.visitVarInsn(Opcodes.ASTORE, t);
            Label call = new Label(), called = new Label(), lost = new Label();
            mv.visitTryCatchBlock(call, called, lost, "java/lang/StackOverflowError");
            mv.visitLabel(call);
            mv.visitVarInsn(Opcodes.ALOAD, t);
            unwind();
            mv.visitLabel(called);
            mv.visitVarInsn(Opcodes.ALOAD, t);
            mv.visitInsn(Opcodes.ATHROW);
            mv.visitLabel(lost);
            if (frames) {
                Object[] locals = new Object[t + 1];
                Arrays.fill(locals, Opcodes.TOP);
                locals[t] = "java/lang/Throwable";
                mv.visitFrame(Opcodes.F_NEW, locals.length, locals, 1, new Object[] {"java/lang/StackOverflowError"});
            }
            mv.visitInsn(Opcodes.POP);
            // A count left by another exception (one caught where it
            // overflowed, before any frame passed it on) is not this
            // one's: it starts again.
            Label same = new Label();
            mv.visitFieldInsn(Opcodes.GETSTATIC, Transformer.PROBE, "unwindsLostBy", "Ljava/lang/Throwable;");
            mv.visitVarInsn(Opcodes.ALOAD, t);
            mv.visitJumpInsn(Opcodes.IF_ACMPEQ, same);
            mv.visitInsn(Opcodes.ICONST_0);
            mv.visitFieldInsn(Opcodes.PUTSTATIC, Transformer.PROBE, "unwindsLost", "I");
            mv.visitLabel(same);
            if (frames) {
                Object[] locals = new Object[t + 1];
                Arrays.fill(locals, Opcodes.TOP);
                locals[t] = "java/lang/Throwable";
                mv.visitFrame(Opcodes.F_NEW, locals.length, locals, 0, new Object[0]);
            }
            mv.visitFieldInsn(Opcodes.GETSTATIC, Transformer.PROBE, "unwindsLost", "I");
            mv.visitInsn(Opcodes.ICONST_1);
            mv.visitInsn(Opcodes.IADD);
            mv.visitFieldInsn(Opcodes.PUTSTATIC, Transformer.PROBE, "unwindsLost", "I");
            mv.visitVarInsn(Opcodes.ALOAD, t);
            mv.visitFieldInsn(Opcodes.PUTSTATIC, Transformer.PROBE, "unwindsLostBy", "Ljava/lang/Throwable;");
            mv.visitVarInsn(Opcodes.ALOAD, t);
            mv.visitInsn(Opcodes.ATHROW);
        }
        // The probes push one int where the stack holds at most
        // maxStack (entry, returns), or an int and the Throwable on the
        // Throwable (handlers); the handler adds one local (its
        // exception, kept through the inner catch), which this adapter
        // counts in the maxLocals it passes on. So the maxima are known
        // without ASM's control-flow analysis (COMPUTE_MAXS), the
        // costly part.
        super.visitMaxs(Math.max(maxStack + 1, 3), maxLocals);
    }

    /** unwind calls the unwind probe with the exception on the stack
     *  (consumed): the id goes beneath it. */
    private void unwind() {
        if (ldcId)
            mv.visitLdcInsn(id < 0 ? id : id | TransformCache.CACHED_ID);
        else
            pushInt(mv, id);
        mv.visitInsn(Opcodes.SWAP);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, Transformer.PROBE, probes[UNWIND], "(ILjava/lang/Throwable;)V", false);
    }

    /** handler adds a catch-all of these ranges (empty ones left out) and
     *  visits its label; false if every range is empty. */
    private boolean handler(List<Label> ranges) {
        Label h = null;
        for (int i = 0; i < ranges.size(); i += 2) {
            Label a = ranges.get(i), b = ranges.get(i + 1);
            if (b.getOffset() <= a.getOffset())
                continue;
            if (h == null)
                h = new Label();
            mv.visitTryCatchBlock(a, b, h, null);
        }
        if (h != null)
            mv.visitLabel(h);
        return h != null;
    }
}
