package libjprof.bci;

import java.util.Map;

import org.objectweb.asm.ClassReader;

/**
 * TransformCache makes a class's BCICACHE entry: the class as rewritten,
 * with where its probes' method handles are. The agent keeps entries
 * between runs (jvmti/bci_cache.c: the keys, the files, the lookups, all
 * in C) and, in a later run, answers the class file hook with a kept
 * class instead of calling the transformer, whose ASM is still cold in a
 * short run's first classes.
 *
 * Handles differ from run to run: in a kept class each is a constant of
 * its own (ldc of a CONSTANT_Integer, not an immediate, marked with
 * CACHED_ID), and the entry lists where each is with its method's name;
 * the agent registers the names and writes this run's handles there. A
 * class whose own constants include a marked handle's value, or whose
 * rewriting left methods out, is not kept. Only first loads without
 * ROOTS or JLM are (a retransformation, a selective subgraph and lock
 * sites depend on the run).
 */
final class TransformCache {
    private TransformCache() {}

    private static final int MAGIC = 0x4a504331; // "JPC1"
    /** An entry whose rewrite depends on the class path's jars (a trivial
     *  method calling theirs): the agent keeps it under a name with their
     *  stamps, as a JPC1 entry. */
    private static final int MAGIC_JARS = 0x4a504332; // "JPC2"
    /**
     * CACHED_ID marks a handle in a class kept in the cache (the agent
     * takes it off, bci.h's bci_id): so marked, a handle's constant is
     * almost never one the class has of its own (a static final int's
     * ConstantValue, often a small number like the first handles), which
     * would share its pool entry and keep the class out of the cache.
     */
    static final int CACHED_ID = 0x40000000;

    /** A probe's handle in a rewritten class: the method's name and
     *  descriptor, and its engine type. */
    static final class Handle {
        final String nameDesc;
        final int type;

        Handle(String nameDesc, int type) {
            this.nameDesc = nameDesc;
            this.type = type;
        }
    }

    /**
     * entry makes a class's cache entry, which the agent's hook writes to
     * the directory and takes the class from: out is the class as
     * rewritten, its probes' handles loaded by ldc (null: left as it
     * was). It returns out itself (a class file, which is not kept) if
     * a handle's value is also one of the class's own constants, which a
     * later run could not tell apart. Only arrays and ASM's reader here:
     * this runs inside a class load, which must not start loading a
     * class of the JDK that may need the one being loaded.
     */
    static byte[] entry(byte[] in, byte[] out, Map<Integer, Handle> handles, long trivial, long wrapped, boolean jars) {
        if (out == null) // left as it was: every method trivial, maybe through the jars'
            return header(in.length, trivial, 0, 0, 0, jars);
        for (int h : handles.keySet())
            if (h < 0) // the engine's overflow handle, shared by methods past its bound
                return out;
        ClassReader orig = new ClassReader(Transformer.asmReadable(in));
        for (int i = 1; i < orig.getItemCount(); i++) {
            int o = orig.getItem(i);
            if (o > 0 && orig.readByte(o - 1) == 3 && handles.containsKey(orig.readInt(o)))
                return out;
        }
        ClassReader cr = new ClassReader(Transformer.asmReadable(out));
        int n = 0, size = 0;
        int[] at = new int[handles.size()];
        byte[][] names = new byte[handles.size()][];
        int[] types = new int[handles.size()];
        for (int i = 1; i < cr.getItemCount(); i++) {
            int o = cr.getItem(i);
            if (o > 0 && cr.readByte(o - 1) == 3) {
                Handle h = handles.get(cr.readInt(o));
                if (h == null)
                    continue;
                if (n == at.length)
                    return out; // one handle in two constants: not ours to place
                byte[] nb = modifiedUtf8(h.nameDesc);
                if (nb.length > 0xffff)
                    return out;
                at[n] = o;
                types[n] = h.type;
                names[n++] = nb;
                size += 10 + nb.length;
            }
        }
        if (n != handles.size())
            return out;
        byte[] e = header(in.length, trivial, wrapped, n, size + 4 + out.length, jars);
        int p = HEADER;
        for (int i = 0; i < n; i++) {
            p = putInt(e, p, at[i]);
            p = putInt(e, p, types[i]);
            e[p++] = (byte) (names[i].length >> 8);
            e[p++] = (byte) names[i].length;
            System.arraycopy(names[i], 0, e, p, names[i].length);
            p += names[i].length;
        }
        p = putInt(e, p, out.length);
        System.arraycopy(out, 0, e, p, out.length);
        return e;
    }

    /** An entry's header: magic, the original's length, the counts, the
     *  number of handles; then the handles (place, type, name) and the
     *  class (length, bytes; length 0: left as it was), big-endian. */
    private static final int HEADER = 20;

    private static byte[] header(int inLen, long trivial, long wrapped, int n, int rest, boolean jars) {
        byte[] e = new byte[HEADER + (n == 0 && rest == 0 ? 4 : rest)];
        int p = putInt(e, 0, jars ? MAGIC_JARS : MAGIC);
        p = putInt(e, p, inLen);
        p = putInt(e, p, (int) trivial);
        p = putInt(e, p, (int) wrapped);
        putInt(e, p, n);
        return e;
    }

    /** modifiedUtf8 is s as JNI's GetStringUTFChars gives it, the name
     *  the engine registers: U+0000 in two bytes, a supplementary
     *  character as its two surrogates, three bytes each. */
    static byte[] modifiedUtf8(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            n += c >= 1 && c <= 0x7f ? 1 : c <= 0x7ff ? 2 : 3;
        }
        byte[] b = new byte[n];
        int p = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 1 && c <= 0x7f) {
                b[p++] = (byte) c;
            } else if (c <= 0x7ff) {
                b[p++] = (byte) (0xc0 | (c >> 6));
                b[p++] = (byte) (0x80 | (c & 0x3f));
            } else {
                b[p++] = (byte) (0xe0 | (c >> 12));
                b[p++] = (byte) (0x80 | ((c >> 6) & 0x3f));
                b[p++] = (byte) (0x80 | (c & 0x3f));
            }
        }
        return b;
    }

    private static int putInt(byte[] b, int p, int v) {
        b[p] = (byte) (v >> 24);
        b[p + 1] = (byte) (v >> 16);
        b[p + 2] = (byte) (v >> 8);
        b[p + 3] = (byte) v;
        return p + 4;
    }
}
