package libjprof.bci;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.Adler32;
import java.util.zip.CRC32;

import org.objectweb.asm.ClassReader;

/**
 * TransformCache keeps rewritten class files on disk between runs
 * (BCICACHE): a class whose bytes were rewritten before, by the same
 * transformer with the same settings on the same JVM, is read back
 * instead of being rewritten. Rewriting runs ASM on the class-loading
 * thread while ASM itself is still cold, a large part of a short run's
 * cost under BCI; reading an entry is a file read and a few stores.
 *
 * Each entry is keyed by the class's name, length and two checksums of
 * its bytes (CRC-32 and Adler-32, both computed natively), in a
 * directory named by a checksum of what decides the output: this
 * format, the transformer's and ASM's own class files, the flags and
 * the JVM. The probes' method handles differ from run to run: in a
 * cached class each handle is its own CONSTANT_Integer (ldc, not an
 * immediate), and the entry records where each is with its method's
 * name; a hit registers the names and writes this run's handles there
 * (marked with CACHED_ID).
 * A class whose own constants include a handle's value, or whose
 * rewriting left methods out, is not cached.
 *
 * Only first loads without ROOTS or JLM use it (a retransformation, a
 * selective subgraph and lock sites depend on the run). The directory is
 * checked by the agent before (owned by this user, not writable by
 * others); entries appear whole (a temporary file renamed) and a bad one
 * is a miss.
 */
final class TransformCache {
    private TransformCache() {}

    private static final int MAGIC = 0x4a504331; // "JPC1"
    /**
     * CACHED_ID marks a handle in a class kept in the cache (the agent
     * takes it off, bci.h's bci_id): so marked, a handle's constant is
     * almost never one the class has of its own (a static final int's
     * ConstantValue, often a small number like the first handles), which
     * would share its pool entry and keep the class out of the cache.
     */
    static final int CACHED_ID = 0x40000000;

    /** The context's directory, or null: off. */

    /** init turns the cache on: spec is "r:" (only read) or "w:", the
     *  directory, a newline and the path of the agent's jar (whose bytes,
     *  the transformer's and ASM's, decide the output); "" for off. It
     *  returns the directory of this context's entries, or null. */
    static String init(String spec, int flags, boolean base, String include, String exclude) {
        int nl = spec == null ? -1 : spec.indexOf('\n');
        if (nl < 3 || (flags & Transformer.JLM) != 0)
            return null;
        try {
            CRC32 c = new CRC32();
            Adler32 a = new Adler32();
            byte[] ctx = (MAGIC + " " + flags + " " + base + " " + include + " " + exclude + " "
                    + System.getProperty("java.vm.version") + " " + System.getProperty("java.home")).getBytes(StandardCharsets.UTF_8);
            byte[] jar = Files.readAllBytes(Path.of(spec.substring(nl + 1)));
            c.update(ctx);
            a.update(ctx);
            c.update(jar);
            a.update(jar);
            // The agent makes it (the user's alone) and reads it.
            return Path.of(spec.substring(2, nl)).resolve("ctx-" + Long.toHexString(c.getValue() << 32 | a.getValue())).toString();
        } catch (IOException | RuntimeException e) {
            Probe.note("BCI: BCICACHE off: " + e);
            return null;
        }
    }

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
    static byte[] entry(byte[] in, byte[] out, Map<Integer, Handle> handles, long trivial, long wrapped) {
        if (out == null)
            return header(in.length, 0, 0, 0, 0);
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
                byte[] nb = h.nameDesc.getBytes(StandardCharsets.UTF_8);
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
        byte[] e = header(in.length, trivial, wrapped, n, size + 4 + out.length);
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

    private static byte[] header(int inLen, long trivial, long wrapped, int n, int rest) {
        byte[] e = new byte[HEADER + (n == 0 && rest == 0 ? 4 : rest)];
        int p = putInt(e, 0, MAGIC);
        p = putInt(e, p, inLen);
        p = putInt(e, p, (int) trivial);
        p = putInt(e, p, (int) wrapped);
        putInt(e, p, n);
        return e;
    }

    private static int putInt(byte[] b, int p, int v) {
        b[p] = (byte) (v >> 24);
        b[p + 1] = (byte) (v >> 16);
        b[p + 2] = (byte) (v >> 8);
        b[p + 3] = (byte) v;
        return p + 4;
    }
}
