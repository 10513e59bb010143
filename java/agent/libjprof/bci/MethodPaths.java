package libjprof.bci;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.objectweb.asm.Handle;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * MethodPaths reads one method's code for Trivial: its instructions in
 * order, and whether it has a return at all (one without can never
 * return: a helper that only throws). Once every method of the class is
 * read (resolve), it says whether the paths that reach a return are
 * plain and small enough for the method to be trivial (Trivial's rule),
 * a call to a method of the class's own that never returns ending a path
 * as a throw does. If so it puts the method's Candidate, those paths'
 * bytes and the calls on them that may make an event, into the class's
 * candidates; whether those calls keep it trivial is Trivial's to
 * resolve.
 */
final class MethodPaths extends MethodVisitor {
    /** A method whose returning paths qualify. */
    static final class Candidate {
        int bytes;
        /** {owner, name+desc} */
        final List<String[]> calls = new ArrayList<>();
    }

    private final String cls;
    private final boolean assertSwitch;
    private final Map<String, Candidate> candidates;
    private final String key;
    /** The class's methods read so far that may be trivial (their paths
     *  are settled by resolve), and those with no return. */
    private final List<MethodPaths> pending;
    private final Set<String> noReturn;

    /** cls: the class; assertSwitch: its assert statements never run
     *  (Trivial.visitField); the method's Candidate goes into candidates
     *  under key; the method goes into pending if it may be trivial, its
     *  key into noReturn if it has no return. */
    MethodPaths(String cls, boolean assertSwitch, Map<String, Candidate> candidates, String key,
            List<MethodPaths> pending, Set<String> noReturn) {
        super(Opcodes.ASM9);
        this.cls = cls;
        this.assertSwitch = assertSwitch;
        this.candidates = candidates;
        this.key = key;
        this.pending = pending;
        this.noReturn = noReturn;
    }

    /** The method's instructions, in order: what each is (a
     *  bit set of the kinds below), its size, its jump's target
     *  and its call. Kept only while the method may still be
     *  trivial; a method is scanned once per class load. */
    private int n;
    private int[] kind = new int[32], size = new int[32];
    private Label[] target = new Label[32];
    private String[][] call = new String[32][];
    /** Where each label is: the instruction after it. */
    private final Map<Label, Integer> at = new HashMap<>();
    /** Past any line on every path: no more to record. */
    private boolean heavy;
    /** Bytes of all the instructions, an early way out. */
    private int all;
    /** A return seen, anywhere. */
    private boolean returns;
    private final Candidate c = new Candidate();

    private void add(int k, int b, Label l, String[] cl) {
        if (heavy)
            return;
        all += b;
        // Code on paths that end in a throw has no size limit, a
        // normal path's is MAX_BYTES: more than a few times that
        // is no check that throws, but a method.
        if (all > 8 * Trivial.MAX_BYTES) {
            heavy = true;
            return;
        }
        if (n == kind.length) {
            kind = Arrays.copyOf(kind, 2 * n);
            size = Arrays.copyOf(size, 2 * n);
            target = Arrays.copyOf(target, 2 * n);
            call = Arrays.copyOf(call, 2 * n);
        }
        kind[n] = k;
        size[n] = b;
        target[n] = l;
        call[n] = cl;
        n++;
    }

    private void add(int b) {
        add(0, b, null, null);
    }

    @Override
    public void visitLabel(Label l) {
        at.put(l, n);
        assertsOff = -1; // a jump may reach the test with another value
    }

    @Override
    public void visitInsn(int op) {
        if (op == Opcodes.MONITORENTER)
            heavy = true;
        if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN)
            returns = true;
        add(op == Opcodes.ATHROW ? THROW : op >= Opcodes.IRETURN && op <= Opcodes.RETURN ? RETURN : 0, 1, null, null);
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

    /** Where the last instruction read an assert statement's
     *  switch ($assertionsDisabled) while no class can have its
     *  assertions on: the jump that tests it is always taken. */
    private int assertsOff = -1;

    @Override
    public void visitFieldInsn(int op, String owner, String name, String d) {
        if (op == Opcodes.GETSTATIC && assertSwitch && owner.equals(cls) && name.equals("$assertionsDisabled")) {
            // The switch is a static final the JIT folds: no cost.
            add(0);
            assertsOff = n;
            return;
        }
        add(3);
    }

    @Override
    public void visitMethodInsn(int op, String owner, String n, String d, boolean itf) {
        // A call into a class that is never instrumented (java.base)
        // adds no node: the method is still a leaf of the profile.
        // Another is resolved once the class is scanned; an
        // interface's method may run anything.
        boolean event = owner.charAt(0) != '[' && !Transformer.neverInstrumented(owner);
        // A call whose target is this class's own method, whatever the
        // receiver (a static, a private or a constructor's call): it
        // ends the path if that method never returns (resolve).
        int own = owner.equals(cls) && (op == Opcodes.INVOKESTATIC || op == Opcodes.INVOKESPECIAL) ? OWN
                : owner.equals(cls) && op == Opcodes.INVOKEVIRTUAL ? OWN_VIRTUAL : 0;
        add((event && itf ? HEAVY : 0) | own, op == Opcodes.INVOKEINTERFACE ? 5 : 3, null, event ? new String[] {owner, n + d} : null);
    }

    @Override
    public void visitInvokeDynamicInsn(String n, String d, Handle bsm, Object... args) {
        // A lambda's or a string concatenation's call site: linked
        // at its first run (classes spun). On a path to a throw
        // (an exception's message) it is the throw's cost.
        add(HEAVY, 5, null, null);
    }

    @Override
    public void visitJumpInsn(int op, Label l) {
        // A jump to a label already seen goes backwards: a loop.
        if (at.containsKey(l) || op == Opcodes.JSR)
            heavy = true;
        if (op == Opcodes.IFNE && assertsOff == n) // assertions off: past the assert
            add(GOTO, 0, l, null);
        else
            add(op == Opcodes.GOTO ? GOTO : BRANCH, 3, l, null);
    }

    @Override
    public void visitLdcInsn(Object v) {
        add(v instanceof Long || v instanceof Double ? 3 : 2);
    }

    @Override
    public void visitIincInsn(int var, int inc) {
        add(3);
    }

    /** Exception handlers: one that can reach a return is work
     *  a program does (recovering), one that only throws again
     *  (wrapping the exception, a finally's copy) is a throw's. */
    private final List<Label> handlers = new ArrayList<>();

    @Override
    public void visitTryCatchBlock(Label start, Label end, Label handler, String type) {
        handlers.add(handler);
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

    /** A method's normal paths, those that reach a return, are
     *  what counts: at most MAX_BYTES, nothing heavy on them,
     *  their calls resolved. A path that can only end in a throw
     *  (a check's failure: the exception built, its message
     *  formatted) is taken rarely by design, and HotSpot compiles
     *  it as an uncommon trap once it has never run; its code and
     *  calls count in the caller, as the exception does. A
     *  method with no normal path always throws: kept. A call to a
     *  method of the class's own that has no return (javac's
     *  Assert.error(), a helper that builds and throws an exception)
     *  ends its path as a throw does. */
    @Override
    public void visitEnd() {
        if (!returns)
            noReturn.add(key);
        if (!heavy && n > 0)
            pending.add(this);
    }

    /** resolve settles the method once the class is read: noReturn, its
     *  methods without a return; privates, its private methods (a call
     *  to one, invokevirtual since JDK 11 between nestmates, has one
     *  target). */
    void resolve(Set<String> privates) {
        for (int i = 0; i < n; i++) {
            int k = kind[i];
            if ((k & (OWN | OWN_VIRTUAL)) == 0)
                continue;
            String m = call[i] != null ? call[i][1] : null;
            if (m != null && noReturn.contains(m) && ((k & OWN) != 0 || privates.contains(m)))
                kind[i] = THROW;
        }
        // Jumps go forward only (a backward one made it heavy):
        // one pass from the end settles which instructions
        // reach a return.
        boolean[] normal = new boolean[n + 1];
        for (int i = n - 1; i >= 0; i--) {
            int k = kind[i];
            Integer t = target[i] != null ? at.get(target[i]) : null;
            boolean jump = t != null && normal[t];
            normal[i] = (k & RETURN) != 0 || (k & GOTO) != 0 ? (k & RETURN) != 0 || jump
                    : (k & THROW) != 0 ? false
                    : normal[i + 1] || ((k & BRANCH) != 0 && jump);
        }
        if (!normal[0])
            return;
        for (Label h : handlers) {
            Integer i = at.get(h);
            if (i == null || normal[i])
                return;
        }
        // What runs: forward from the start (code a switched-off
        // assert skips never does).
        boolean[] runs = new boolean[n + 1];
        runs[0] = true;
        for (int i = 0; i < n; i++) {
            if (!runs[i])
                continue;
            int k = kind[i];
            if ((k & (RETURN | THROW | GOTO)) == 0)
                runs[i + 1] = true;
            Integer t = target[i] != null ? at.get(target[i]) : null;
            if (t != null)
                runs[t] = true;
        }
        for (int i = 0; i < n; i++) {
            if (!normal[i] || !runs[i])
                continue;
            if ((kind[i] & HEAVY) != 0 || (c.bytes += size[i]) > Trivial.MAX_BYTES)
                return;
            if (call[i] != null)
                c.calls.add(call[i]);
        }
        candidates.put(key, c);
    }

    /** What an instruction is, for the paths through a method. */
    private static final int RETURN = 1, THROW = 2, GOTO = 4, BRANCH = 8, HEAVY = 16, OWN = 32, OWN_VIRTUAL = 64;
}
