package libjprof.bci;

import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * MethodProbes instruments one method:
 *
 *   Probe.enter(id)          first thing, also before super() in constructors
 *   try {                    from after enter (constructors: after super())
 *       body, with Probe.exit(id) before each return
 *   } catch (any t) { Probe.unwind(id); throw t; }
 *
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
 */
final class MethodProbes extends AdviceAdapter {
    private final int id;
    private final boolean frames;
    private final boolean ctor;
    private final Label preSuper = new Label(), body = new Label();
    private Label lastInit; // before the last invokespecial <init> seen before super() returned
    private boolean bodyStarted;
    // Local 0 overwritten before super(): the pre-super handler's frame
    // (uninitializedThis in local 0) would not match; no such handler then.
    private boolean thisStored;

    /** Probe's methods called: enter, exit, unwind (for every method, the
     *  roots of selective instrumentation, or the other methods there). */
    static final String[] ALL = {"enter", "exit", "unwind"}, ROOT = {"rootEnter", "rootExit", "rootUnwind"},
            SUB = {"subEnter", "subExit", "subUnwind"};
    private final String[] probes;
    private static final int ENTER = 0, EXIT = 1, UNWIND = 2;

    MethodProbes(MethodVisitor mv, int access, String name, String desc, int id, boolean frames, String[] probes) {
        super(Opcodes.ASM9, mv, access, name, desc);
        this.id = id;
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
        if (id <= Byte.MAX_VALUE)
            mv.visitIntInsn(Opcodes.BIPUSH, id);
        else if (id <= Short.MAX_VALUE)
            mv.visitIntInsn(Opcodes.SIPUSH, id);
        else
            mv.visitLdcInsn(id);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, Transformer.PROBE, probes[what], "(I)V", false);
    }

    @Override
    public void visitCode() {
        super.visitCode();
        if (ctor) {
            call(ENTER);
            mv.visitLabel(preSuper);
        }
    }

    @Override
    protected void onMethodEnter() {
        if (!ctor)
            call(ENTER);
        mv.visitLabel(body);
        bodyStarted = true;
    }

    @Override
    public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
        if (ctor && !bodyStarted && opcode == Opcodes.INVOKESPECIAL && name.equals("<init>")) {
            lastInit = new Label();
            mv.visitLabel(lastInit);
        }
        super.visitMethodInsn(opcode, owner, name, desc, itf);
    }

    @Override
    public void visitVarInsn(int opcode, int var) {
        if (ctor && !bodyStarted && var == 0 && opcode >= Opcodes.ISTORE && opcode <= Opcodes.ASTORE)
            thisStored = true;
        super.visitVarInsn(opcode, var);
    }

    @Override
    public void visitIincInsn(int var, int increment) {
        if (ctor && !bodyStarted && var == 0)
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
        if (ctor && frames && !thisStored) {
            Label h = new Label();
            mv.visitTryCatchBlock(preSuper, bodyStarted ? lastInit : end, h, null);
            mv.visitLabel(h);
            mv.visitFrame(Opcodes.F_NEW, 1, new Object[] {Opcodes.UNINITIALIZED_THIS}, 1, new Object[] {"java/lang/Throwable"});
            call(UNWIND);
            mv.visitInsn(Opcodes.ATHROW);
        }
        if (bodyStarted) {
            Label h = new Label();
            mv.visitTryCatchBlock(body, end, h, null);
            mv.visitLabel(h);
            if (frames)
                mv.visitFrame(Opcodes.F_NEW, 0, new Object[0], 1, new Object[] {"java/lang/Throwable"});
            call(UNWIND);
            mv.visitInsn(Opcodes.ATHROW);
        }
        // The probes push one int where the stack holds at most
        // maxStack (entry, returns), or on a lone Throwable (handlers);
        // they add no local. So the maxima are known without ASM's
        // control-flow analysis (COMPUTE_MAXS), the costly part.
        super.visitMaxs(Math.max(maxStack + 1, 2), maxLocals);
    }
}
