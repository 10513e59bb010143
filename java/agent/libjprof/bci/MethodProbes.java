package libjprof.bci;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.objectweb.asm.AnnotationVisitor;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.TypePath;
import org.objectweb.asm.TypeReference;
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
 *   and at the start of each of the method's own handlers, once the
 *   handler has stored (or dropped) its exception:
 *       try { Probe.caught(id); } catch (StackOverflowError e) { }
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
 * The caught probe mends that: the handler that catches the exception
 * tells the agent which frame runs, and the frames above it are closed
 * as exception exits (else the caller's later calls nest under the dead
 * constructor until its own exit pops it). Its guard, first in the
 * exception table so that no handler of the method's own sees the
 * error, keeps a handler near the stack's end running as it would
 * without the agent: there the call itself may overflow.
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
    static final String[] ALL = {"enter", "exit", "unwind", "caught"}, FFM = {"fenter", "fexit", "funwind", "caught"},
            ROOT = {"rootEnter", "rootExit", "rootUnwind", "caught"}, SUB = {"subEnter", "subExit", "subUnwind", "subCaught"};
    private final String[] probes;
    private static final int ENTER = 0, EXIT = 1, UNWIND = 2, CAUGHT = 3;

    /** The method's own exception table entries, held back until its
     *  code starts so that the guards of the caught probes go first. */
    private final List<Object[]> tryBlocks = new ArrayList<>();
    private boolean tryFlushed;
    /** CaughtGuards written ahead of the method's own entries. */
    private int guardsFirst;
    /** Per handler of the method's own: its guard. */
    private final Map<Label, CaughtGuard> guards = new LinkedHashMap<>();
    /** The handler whose start is being visited, and its frame (expanded,
     *  the method's own local numbering). */
    private CaughtGuard atHandler;
    /** The method's labels visited so far. */
    private final Set<Label> seen = new HashSet<>();


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
    public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
        if (tryFlushed) { // not from a class file: no guard
            super.visitTryCatchBlock(start, end, handler, type);
            return;
        }
        tryBlocks.add(new Object[] {start, end, handler, type});
        guards.putIfAbsent(handler, new CaughtGuard()); // no lambda: Transformer.id
    }

    /** A type annotation of a catch's exception names its entry of the
     *  exception table by index: the guards ahead move it. */
    @Override
    public AnnotationVisitor visitTryCatchAnnotation(int typeRef, TypePath typePath, String desc, boolean visible) {
        flushTry();
        int i = new TypeReference(typeRef).getTryCatchBlockIndex() + guardsFirst;
        return super.visitTryCatchAnnotation(TypeReference.newTryCatchReference(i).getValue(), typePath, desc, visible);
    }

    /** flushTry writes the exception table held back: the guards first. */
    private void flushTry() {
        if (tryFlushed)
            return;
        tryFlushed = true;
        guardsFirst = guards.size();
        for (CaughtGuard g : guards.values())
            mv.visitTryCatchBlock(g.start, g.end, g.handler, "java/lang/StackOverflowError");
        for (Object[] b : tryBlocks)
            super.visitTryCatchBlock((Label) b[0], (Label) b[1], (Label) b[2], (String) b[3]);
    }

    /** handlerStart is called before each instruction: the first of a
     *  handler places its guard (op the opcode, var its local). */
    private void handlerStart(int op, int var) {
        flushTry();
        if (pending != null)
            place(pending);
        CaughtGuard g = atHandler;
        if (g == null)
            return;
        atHandler = null;
        // No frame at a handler of a class file that should have them: a
        // retransformation's bytes of a class HotSpot keeps without its
        // stack maps (one from the CDS archive, never verified). The guard
        // gets none either.
        g.framed = frames && g.locals != null;
        if ((ctor && uninit) || g.selfCovered) {
            nopGuard(g);
        } else if (op == Opcodes.ASTORE || op == Opcodes.POP) {
            // The exception is off the stack: after this instruction,
            // the call and its guard leave the handler as it was.
            g.placed = true;
            if (op == Opcodes.ASTORE && g.framed) {
                g.locals = CaughtGuard.setLocal(g.locals, g.nLocal, var, g.caught);
                g.nLocal = g.locals.length;
            }
        } else if (g.framed || !frames) {
            // Other compilers' and tools' handlers may use the exception
            // at once (a call on it, a dup): it waits in a local of its
            // own around the call, and is back on the stack for the
            // handler's code. With frames, the first slot past the
            // handler frame's (through the sorter, as the method's own
            // locals); without (verified by inference), a new local, which
            // no frame of the method's can contradict.
            int tmp;
            if (g.framed) {
                tmp = CaughtGuard.slots(g.locals, g.nLocal);
                super.visitVarInsn(Opcodes.ASTORE, tmp);
                g.locals = CaughtGuard.setLocal(g.locals, g.nLocal, tmp, g.caught);
                g.nLocal = g.locals.length;
            } else {
                tmp = newLocal(Type.getType(Throwable.class));
                mv.visitVarInsn(Opcodes.ASTORE, tmp);
            }
            g.placed = true;
            place(g);
            if (g.framed)
                super.visitVarInsn(Opcodes.ALOAD, tmp);
            else
                mv.visitVarInsn(Opcodes.ALOAD, tmp);
        } else {
            nopGuard(g);
        }
    }

    /** nopGuard has g's guard cover a nop, where no probe is placed: its
     *  entry in the exception table stays, with a handler that rethrows
     *  (never run: a nop cannot overflow). */
    private void nopGuard(CaughtGuard g) {
        g.seen = true;
        mv.visitLabel(g.start);
        mv.visitInsn(Opcodes.NOP);
        mv.visitLabel(g.end);
    }

    /** afterHandlerStart has the probe placed after the handler's first
     *  instruction, when handlerStart chose to: before the instruction
     *  after it, past the labels between. A range that ends there (it
     *  covered the store) must not cover the probe: its handler's frame
     *  never had the stored local checked. */
    private void afterHandlerStart(CaughtGuard g) {
        if (g != null && g.placed && !g.seen)
            pending = g;
    }

    /** The guard whose probe is to be placed before the next instruction. */
    private CaughtGuard pending;

    /** place places a guard's probe (where afterHandlerStart chose). */
    private void place(CaughtGuard g) {
        pending = null;
        if (!g.placed) { // a frame between said the stack is not empty
            nopGuard(g);
            return;
        }
        g.seen = true;
        // The call starts a block of its own: C1 compiles no handler whose
        // entry block holds a call it covers itself (a synchronized
        // block's handler covers its own code).
        mv.visitJumpInsn(Opcodes.GOTO, g.start);
        mv.visitLabel(g.start);
        if (g.framed)
            super.visitFrame(Opcodes.F_NEW, g.locals.length, g.locals, 0, new Object[0]);
        call(CAUGHT);
        mv.visitLabel(g.end);
        mv.visitLabel(g.back);
        if (g.framed)
            super.visitFrame(Opcodes.F_NEW, g.locals.length, g.locals, 0, new Object[0]);
        // A frame of the method's own may follow at this offset.
        mv.visitInsn(Opcodes.NOP);
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
        flushTry();
        if (pending != null && type == Opcodes.F_NEW) {
            // The state the method's own frame declares here is the one
            // the probe's frames must declare too.
            if (pending.framed) {
                pending.locals = Arrays.copyOf(local, nLocal);
                pending.nLocal = nLocal;
            }
            if (nStack != 0)
                pending.placed = false; // the probe's frames say the stack is empty
        }
        if (atHandler != null && type == Opcodes.F_NEW && nStack == 1) {
            atHandler.locals = Arrays.copyOf(local, nLocal);
            atHandler.nLocal = nLocal;
            atHandler.caught = stack[0];
        }
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
        flushTry();
        seen.add(label);
        CaughtGuard g = guards.get(label);
        if (g != null) {
            atHandler = g;
            // A handler inside a range of its own (javac's for a
            // synchronized block, which releases the monitor, retrying if
            // that throws; a finally's after a catch) is cleanup that
            // throws on: it catches nothing for good, and C1 compiles no
            // call there (it would join the handler with itself). No
            // probe: the exception's next handler is the one that says.
            for (Object[] b : tryBlocks)
                if (b[2] == label && seen.contains(b[0]) && !seen.contains(b[1]))
                    g.selfCovered = true;
        }
        super.visitLabel(label);
        if (ctor && !frames && !uninit && uninitTargets.contains(label))
            cut(label, label);
    }

    @Override
    public void visitJumpInsn(int opcode, Label label) {
        handlerStart(opcode, -1);
        if (ctor && uninit)
            uninitTargets.add(label);
        super.visitJumpInsn(opcode, label);
    }

    @Override
    public void visitTableSwitchInsn(int min, int max, Label dflt, Label... labels) {
        handlerStart(Opcodes.TABLESWITCH, -1);
        if (ctor && uninit) {
            uninitTargets.add(dflt);
            uninitTargets.addAll(Arrays.asList(labels));
        }
        super.visitTableSwitchInsn(min, max, dflt, labels);
    }

    @Override
    public void visitLookupSwitchInsn(Label dflt, int[] keys, Label[] labels) {
        handlerStart(Opcodes.LOOKUPSWITCH, -1);
        if (ctor && uninit) {
            uninitTargets.add(dflt);
            uninitTargets.addAll(Arrays.asList(labels));
        }
        super.visitLookupSwitchInsn(dflt, keys, labels);
    }

    @Override
    public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
        handlerStart(opcode, -1);
        if (ctor && uninit && opcode == Opcodes.INVOKESPECIAL && name.equals("<init>")) {
            lastInit = new Label();
            mv.visitLabel(lastInit);
        }
        super.visitMethodInsn(opcode, owner, name, desc, itf);
    }

    @Override
    public void visitVarInsn(int opcode, int var) {
        CaughtGuard g = atHandler;
        handlerStart(opcode, var);
        if (ctor && uninit && var == 0 && opcode >= Opcodes.ISTORE && opcode <= Opcodes.ASTORE)
            thisStored = true;
        super.visitVarInsn(opcode, var);
        afterHandlerStart(g);
    }

    @Override
    public void visitIincInsn(int var, int increment) {
        handlerStart(Opcodes.IINC, -1);
        if (ctor && uninit && var == 0)
            thisStored = true;
        super.visitIincInsn(var, increment);
    }

    @Override
    public void visitInsn(int opcode) {
        CaughtGuard g = atHandler;
        handlerStart(opcode, -1);
        super.visitInsn(opcode);
        afterHandlerStart(g);
    }

    @Override
    public void visitIntInsn(int opcode, int operand) {
        handlerStart(opcode, -1);
        super.visitIntInsn(opcode, operand);
    }

    @Override
    public void visitTypeInsn(int opcode, String type) {
        handlerStart(opcode, -1);
        super.visitTypeInsn(opcode, type);
    }

    @Override
    public void visitFieldInsn(int opcode, String owner, String name, String desc) {
        handlerStart(opcode, -1);
        super.visitFieldInsn(opcode, owner, name, desc);
    }

    @Override
    public void visitInvokeDynamicInsn(String name, String desc, org.objectweb.asm.Handle bsm, Object... args) {
        handlerStart(Opcodes.INVOKEDYNAMIC, -1);
        super.visitInvokeDynamicInsn(name, desc, bsm, args);
    }

    @Override
    public void visitLdcInsn(Object value) {
        handlerStart(Opcodes.LDC, -1);
        super.visitLdcInsn(value);
    }

    @Override
    public void visitMultiANewArrayInsn(String desc, int dims) {
        handlerStart(Opcodes.MULTIANEWARRAY, -1);
        super.visitMultiANewArrayInsn(desc, dims);
    }

    @Override
    public void visitLineNumber(int line, Label start) {
        flushTry();
        super.visitLineNumber(line, start);
    }

    @Override
    protected void onMethodExit(int opcode) {
        if (opcode != Opcodes.ATHROW)
            call(EXIT);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
        if (pending != null)
            place(pending);
        Label end = new Label();
        mv.visitLabel(end);
        if (ctor) {
            (uninit ? preRanges : mainRanges).add(rangeStart);
            (uninit ? preRanges : mainRanges).add(uninit && lastInit != null ? lastInit : end);
        } else if (bodyStarted) {
            mainRanges.add(body);
            mainRanges.add(end);
        }
        flushTry();
        // The caught probes' guards, outside every range of the
        // catch-all: a guard only drops the error (the call overflowed),
        // and the handler goes on as it would without the agent.
        for (CaughtGuard g : guards.values()) {
            mv.visitLabel(g.handler);
            if (g.framed)
                super.visitFrame(Opcodes.F_NEW, g.nLocal, g.locals, 1, new Object[] {"java/lang/StackOverflowError"});
            if (g.placed) {
                mv.visitInsn(Opcodes.POP);
                mv.visitJumpInsn(Opcodes.GOTO, g.back);
            } else {
                mv.visitInsn(Opcodes.ATHROW); // never run: a nop cannot overflow
            }
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
