package libjprof.bci;

import java.util.ArrayList;
import java.util.List;

import org.objectweb.asm.Label;
import org.objectweb.asm.Opcodes;

/** CaughtGuard is the caught probe's protected call in one exception
 *  handler (MethodProbes): start and end of the call, the guard's handler
 *  (at the method's end) and where it goes back to, with the frame there;
 *  and the expanded-frame arithmetic its frames need. */
final class CaughtGuard {
    final Label start = new Label(), end = new Label(), handler = new Label(), back = new Label();
    Object[] locals;
    int nLocal;
    /** The exception's type at the handler's start. */
    Object caught;
    /** Whether the probe was placed: else the guard covers a nop and
     *  its handler rethrows (never run, but it must verify). */
    boolean placed, seen;
    /** Whether the guard's code gets stack map frames, and whether
     *  the handler is inside a range of its own (no probe). */
    boolean framed, selfCovered;

    /** slots is how many local slots an expanded frame's locals fill. */
    static int slots(Object[] locals, int n) {
        int s = 0;
        for (int i = 0; i < n; i++)
            s += locals[i] == Opcodes.LONG || locals[i] == Opcodes.DOUBLE ? 2 : 1;
        return s;
    }
    /** setLocal returns locals (an expanded frame's, one entry per value)
     *  with local var set to type, a one-slot value. */
    static Object[] setLocal(Object[] locals, int n, int var, Object type) {
        List<Object> out = new ArrayList<>();
        int slot = 0;
        boolean set = false;
        for (int i = 0; i < n; i++) {
            Object v = locals[i];
            boolean wide = v == Opcodes.LONG || v == Opcodes.DOUBLE;
            // A wide value the store lands in (either half) is gone.
            if (slot == var) {
                out.add(type);
                if (wide)
                    out.add(Opcodes.TOP);
                set = true;
            } else if (wide && slot + 1 == var) {
                out.add(Opcodes.TOP);
                out.add(type);
                set = true;
            } else {
                out.add(v);
            }
            slot += wide ? 2 : 1;
        }
        if (!set) {
            for (; slot < var; slot++)
                out.add(Opcodes.TOP);
            out.add(type);
        }
        return out.toArray();
    }
}
