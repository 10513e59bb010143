package libjprof.bci;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Trivial finds the methods of a class that cannot hold a profile's
 * answer, which the transformer leaves uninstrumented unless ALLMETHODS
 * is given: methods that have no loop, recover from no exception (a
 * handler's work, an exception's cost, is an answer; a handler that only
 * throws again is a throw's path), take no monitor, and whose normal
 * paths (those that reach a return) have at most MAX_BYTES of bytecode
 * and call nothing but methods that make no event: java.base's (which is
 * not instrumented) and other trivial methods, with at most MAX_CLOSURE
 * bytes of bytecode for the method and the trivial methods it calls
 * together. A path that can only end in a throw (a check's failure), or
 * in a call to a method of the class's own that has no return (a static
 * or private one: javac's Assert.check calling Assert.error()), does
 * not count: it is rare by design, and its work, the exception's, counts
 * in the caller. Nor does an assert statement's code where no class can
 * have its assertions on (NO_ASSERTS: the command line has no switch):
 * the $assertionsDisabled test always jumps past it, and the JIT folds
 * the test. That takes in empty methods, field getters and setters,
 * constant methods, argument checks, one-line delegates to the JDK (an
 * AtomicInteger's get, a hashCode) and short chains of them (a getter
 * that returns another object's getter, a constructor whose superclass's
 * constructor only sets fields): leaves of the profile that HotSpot
 * inlines (always up to its MaxInlineSize of 35 bytes; a check with a
 * long throw path where it is hot), whose own work, a few instructions,
 * would cost less than the probes. Their time, with that of the calls they make, counts in their
 * callers', as it does once the JIT has inlined them. A call that runs an
 * instrumented method anyway (an override of the trivial method called,
 * compareTo declared on a JDK type) shows that method under the trivial
 * method's caller. A call naming a class that inherits the method is
 * resolved as the JVM resolves it, to the nearest superclass's. A call
 * to an interface's method on a path that returns is never trivial (a
 * default method is overridden as a rule). (The NetBeans profiler,
 * JFluid's successor, leaves out getters, setters and empty methods by
 * default.) A main method, a thread's run and a ROOTS root are always
 * instrumented: the tree starts there. Only the classes of the JDK's
 * loaders (the boot layer and the class path) are known to the others:
 * a class of a program's own loader (an application server's, a fat
 * jar's) may be left out for its calls within itself, not for calls to
 * the classes of its loader.
 *
 * Whether another class's method is trivial comes from that class's own
 * scan, or from its class file read then: from the boot layer's modules
 * (the JDK's) or the class path, never through a class loader, whose
 * code would run in the middle of a class load (a program's loader may
 * do anything; the JDK's own URL handlers load and initialise classes).
 * A class on neither counts as instrumented. Reads follow a chain
 * MAX_DEPTH classes deep (a deeper one counts as instrumented, in the
 * classes where it was first met); each class is read once, its answer
 * kept by class name, for MAX_KNOWN classes (a set of small methods
 * each). Nothing is read while java.base is instrumented
 * (-Dlibjprof.bci.base), whose classes the reads themselves need. A scan
 * is one pass of the class file with the debug information and frames
 * skipped.
 */
final class Trivial extends ClassVisitor {
    /** HotSpot's MaxInlineSize: methods up to it are inlined whatever their call count. */
    static final int MAX_BYTES = 35;
    /** A trivial method's bytecode with that of the trivial methods it
     *  calls, each call counted, at most. */
    static final int MAX_CLOSURE = 2 * MAX_BYTES;
    /** Classes a lookup reads, one behind another, at most. */
    private static final int MAX_DEPTH = 4;
    /** Calls among a class's own methods followed, nested, at most. */
    private static final int MAX_CHAIN = 8;
    /** Classes whose trivial methods are kept, at most. */
    private static final int MAX_KNOWN = 1 << 16;

    /** Trivial methods by class: name+desc -> bytecode with its trivial
     *  callees'. By name alone: a class of a loader of the program's that
     *  has the name of a class-path class may differ from it; then a tiny
     *  caller may be left out whose callee is instrumented, which shows
     *  under the caller's caller. */
    private static final ConcurrentHashMap<String, Known> known = new ConcurrentHashMap<>();

    /** A class's trivial methods, each with its closure, and what the
     *  decisions depend on beyond the class's own file (deps): every
     *  other class file asked, whatever it answered, so the class's
     *  rewrite depends on those files too. */
    static final class Known {
        final Map<String, Integer> methods;
        final int deps;
        /** Its superclass (null: none known), and the hashes of the
         *  methods it declares, sorted: a call to a method it does not
         *  declare runs its superclass's (a hash shared by chance only
         *  makes a method count as declared, so as instrumented). */
        final String superName;
        private final int[] declared;
        /** Where the class's file is, once asked: 1 + its level. */
        private volatile int origin;

        Known(Map<String, Integer> methods, int deps, String superName, int[] declared) {
            this.methods = methods;
            this.deps = deps;
            this.superName = superName;
            this.declared = declared;
        }

        boolean declares(String m) {
            return Arrays.binarySearch(declared, m.hashCode()) >= 0;
        }
    }

    /** Levels of what a rewrite depends on, for BCICACHE: on no file that
     *  can change while its context stays the same (the context holds the
     *  JDK, its runtime image included: jvmti/bci_packs.c); on the class
     *  path's jars (their stamps are then part of the entry's name); on
     *  other files (a directory's, a module's outside the image, one found
     *  nowhere): not kept. */
    static final int FIXED = 0, JARS = 1, FILES = 2;

    /** level says where the class's file is. By name, as the answers are
     *  kept: the class path's first holder is the one the application
     *  loader loads. */
    private static int level(String owner, Known k) {
        if (k == NONE) // not readable: another run may read it
            return FILES;
        if (k == ABSENT)
            return ClassPath.absentLevel(owner);
        // Not read (a chain too deep): nothing of its file decided, and
        // what a cut decides is only ever to instrument, which is exact
        // whatever the file holds. So the entry is kept: a later run that
        // would read further finds the class rewritten as this one did.
        if (k == UNREAD)
            return FIXED;
        int o = k.origin;
        if (o == 0) {
            Module m = Transformer.bootModule(owner);
            int l = m != null ? (Transformer.inImage(m) ? FIXED : FILES)
                    : !Transformer.foreign() && ClassPath.inStampedJar(owner + ".class") ? JARS : FILES;
            k.origin = o = 1 + l;
        }
        return o - 1;
    }

    private final Selective sel;
    private final int depth;
    /** No class can have its assertions on (NO_ASSERTS). */
    private final boolean noAsserts = Transformer.noAsserts();
    private String cls;
    /** Methods small and plain enough, with their calls that may make an event. */
    private final Map<String, MethodPaths.Candidate> candidates = new HashMap<>();
    /** What the trivial methods found depend on (a level). */
    private int deps;
    private String superName;
    /** Hashes of the methods the class declares. */
    private final Set<Integer> declared = new HashSet<>();
    /** Its methods read whose paths are yet to settle (MethodPaths), its
     *  methods without a return, and its private methods. */
    private final List<MethodPaths> pending = new ArrayList<>();
    private final Set<String> noReturn = new HashSet<>(), privates = new HashSet<>();

    private Trivial(Selective sel, int depth) {
        super(Opcodes.ASM9);
        this.sel = sel;
        this.depth = depth;
    }

    /** scan returns the class's trivial methods, without the roots of
     *  sel; a class of the JDK's loaders (builtin) is kept for later
     *  lookups. */
    static Known scan(ClassReader cr, boolean builtin, Selective sel) {
        // Scanned again when it was read for a lookup before: that read
        // may have stopped short at MAX_DEPTH.
        Trivial t = new Trivial(sel, 0);
        Known k = t.known(cr);
        if (builtin)
            keep(cr.getClassName(), k, true);
        return k;
    }

    /** keep remembers a class's answer: its own scan's over a lookup's,
     *  which may have stopped short at MAX_DEPTH; none past MAX_KNOWN
     *  classes (said once in log-msg: later classes' calls to other
     *  classes then count as instrumented). */
    private static void keep(String owner, Known k, boolean own) {
        if (known.size() >= MAX_KNOWN) {
            if (!full) {
                full = true;
                Probe.note("BCI: trivial methods of " + MAX_KNOWN + " classes known: later classes' calls to others count as instrumented");
            }
            return;
        }
        if (own)
            known.put(owner, k);
        else
            known.putIfAbsent(owner, k);
    }

    private static volatile boolean full;

    /** known scans a class. */
    private Known known(ClassReader cr) {
        Map<String, Integer> m = run(cr);
        return new Known(m, deps, superName, sorted(declared));
    }

    /** sorted: no streams or lambdas here, whose first use would spin
     *  classes in the middle of a class load. */
    private static int[] sorted(Set<Integer> hs) {
        int[] d = new int[hs.size()];
        int i = 0;
        for (int h : hs)
            d[i++] = h;
        Arrays.sort(d);
        return d;
    }

    private Map<String, Integer> run(ClassReader cr) {
        cr.accept(this, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        for (MethodPaths p : pending)
            p.resolve(privates);
        Map<String, Integer> found = new HashMap<>();
        Map<String, Integer> done = new HashMap<>();
        for (String m : candidates.keySet()) {
            int n = closure(m, done, 0);
            if (n >= 0)
                found.put(m, n);
        }
        return found.isEmpty() ? Map.of() : found;
    }

    /** closure resolves a candidate of this class: its bytecode with that
     *  of the trivial methods it calls, or -1 when it is not trivial. A
     *  cycle among the class's methods is not trivial (it is a loop). */
    private int closure(String m, Map<String, Integer> done, int nest) {
        Integer b = done.get(m);
        if (b != null)
            return b;
        MethodPaths.Candidate c = candidates.get(m);
        if (c == null)
            return -1;
        if (nest > MAX_CHAIN)
            return -1;
        done.put(m, -1);
        int total = c.bytes;
        for (String[] call : c.calls) {
            if (sel != null && sel.isRoot(call[0], call[1].substring(0, call[1].indexOf('(')))) {
                total = -1;
                break;
            }
            int n;
            if (!call[0].equals(cls))
                n = other(call[0], call[1]);
            else if (candidates.containsKey(call[1]) || declared.contains(call[1].hashCode()) || superName == null)
                n = closure(call[1], done, nest + 1);
            else // inherited: this class's own name on a superclass's method
                n = other(superName, call[1]);
            if (n < 0 || (total += n) > MAX_CLOSURE) {
                total = -1;
                break;
            }
        }
        done.put(m, total);
        return total;
    }

    /** other is another class's method's closure, -1 if not trivial: the
     *  method the owner declares or, as the JVM resolves a call, the one
     *  its nearest superclass declares (a class of java.base's: a call
     *  that makes no event, if it declares the method with code). */
    private int other(String owner, String m) {
        if (Transformer.BASE)
            return -1;
        for (int up = 0; up < MAX_SUPERS; up++) {
            if (Transformer.neverInstrumented(owner))
                return baseDeclares(owner, m) ? 0 : -1;
            Known k = lookup(owner);
            Integer n = k.methods.get(m);
            // Its answer, trivial or not, came from its file (that it
            // declares the method or not), and from what the files it
            // depends on answered: a class's rewrite depends on every
            // class it asked.
            deps = Math.max(deps, Math.max(k.deps, level(owner, k)));
            if (n != null)
                return n;
            if (k.declares(m) || k.superName == null)
                return -1;
            owner = k.superName;
        }
        return -1;
    }

    /** Superclasses a call's resolution climbs, at most. */
    private static final int MAX_SUPERS = 8;

    /** java.base's classes by name: the hashes of the methods each
     *  declares with code, sorted (an empty array: unreadable). */
    private static final ConcurrentHashMap<String, int[]> base = new ConcurrentHashMap<>();

    /** baseDeclares: a class of java.base declares m with code (an
     *  abstract method or none: an interface's default, or a subclass's
     *  override, may run: not trivial). Read from java.base's module. */
    private static boolean baseDeclares(String owner, String m) {
        int[] d = base.get(owner);
        if (d == null) {
            d = new int[0];
            byte[] b = classFile(owner);
            if (b != null) {
                Set<Integer> hs = new HashSet<>();
                try {
                    new ClassReader(Transformer.asmReadable(b)).accept(new ClassVisitor(Opcodes.ASM9) {
                        @Override
                        public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
                            if ((access & Opcodes.ACC_ABSTRACT) == 0)
                                hs.add((name + desc).hashCode());
                            return null;
                        }
                    }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
                } catch (RuntimeException e) {
                    hs.clear(); // a class file ASM cannot read: nothing counts as declared
                }
                d = sorted(hs);
            }
            if (base.size() < MAX_KNOWN)
                base.put(owner, d);
        }
        return Arrays.binarySearch(d, m.hashCode()) >= 0;
    }

    /** lookup returns what is known of another class's trivial methods,
     *  reading its class file when nothing is. */
    private Known lookup(String owner) {
        Known k = known.get(owner);
        if (k != null)
            return k;
        if (depth >= MAX_DEPTH || known.size() >= MAX_KNOWN)
            return UNREAD;
        byte[] b = classFile(owner);
        k = b == null ? ABSENT : NONE;
        if (b != null) {
            Trivial t = new Trivial(sel, depth + 1);
            try {
                k = t.known(new ClassReader(Transformer.asmReadable(b)));
            } catch (RuntimeException e) {
                // a class file ASM cannot read: its methods count as instrumented
            }
        }
        // Kept even where a chain went past MAX_DEPTH: a class is read
        // once, and what such a chain decides is only ever to instrument.
        keep(owner, k, false);
        return k;
    }

    /** A class file not readable, not found, or not read: its methods
     *  count as instrumented. */
    private static final Known NONE = new Known(Map.of(), FIXED, null, new int[0]);
    private static final Known ABSENT = new Known(Map.of(), FIXED, null, new int[0]);
    private static final Known UNREAD = new Known(Map.of(), FIXED, null, new int[0]);

    /** classFile reads a class of the boot layer's modules or of the
     *  class path, null if it is in neither. A module's reader and a
     *  class path of files are read directly: no class loader's code,
     *  no URL handler. */
    private static byte[] classFile(String owner) {
        String name = owner + ".class";
        Module m = Transformer.bootModule(owner);
        try {
            if (m != null) {
                try (InputStream in = m.getResourceAsStream(name)) {
                    return in == null ? null : in.readAllBytes();
                }
            }
            return ClassPath.read(name);
        } catch (IOException | RuntimeException e) {
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

    /** The class declares an assert statements' switch, as javac writes
     *  it (static final synthetic boolean $assertionsDisabled), and no
     *  class can have its assertions on: its assert statements never
     *  run. (Fields are visited before methods.) Not another class's:
     *  an interface's asserts read a class of its own. */
    private boolean assertSwitch;

    @Override
    public FieldVisitor visitField(int access, String name, String desc, String sig, Object value) {
        int sw = Opcodes.ACC_STATIC | Opcodes.ACC_FINAL | Opcodes.ACC_SYNTHETIC;
        if (noAsserts && name.equals("$assertionsDisabled") && desc.equals("Z") && (access & sw) == sw)
            assertSwitch = true;
        return null;
    }

    @Override
    public void visit(int version, int access, String name, String sig, String sup, String[] ifs) {
        cls = name;
        // An interface's methods are called with invokeinterface, never
        // trivial: nothing to resolve through it.
        superName = (access & Opcodes.ACC_INTERFACE) != 0 ? null : sup;
    }

    @Override
    public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
        declared.add((name + desc).hashCode());
        if ((access & Opcodes.ACC_PRIVATE) != 0)
            privates.add(name + desc);
        if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_SYNCHRONIZED)) != 0 || entryPoint(name, desc)
                || (sel != null && sel.isRoot(cls, name)))
            return null;
        return new MethodPaths(cls, assertSwitch, candidates, name + desc, pending, noReturn);
    }
}
