package libjprof.bci;

import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.Handle;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Hierarchy is what selective instrumentation (Selective) knows of the
 * classes loaded since the agent started: each class's supertypes, its
 * methods and, read when first asked for, their call sites; and the
 * questions asked of it: which declarations a call of a kind may run
 * (mayRun). It describes classes, not roots, so it is shared by every
 * set of roots, and it forgets the classes of loaders the collector
 * cleared.
 */
final class Hierarchy {
    private Hierarchy() {}

    /** Call kinds: new O() runs O's constructor only; invokestatic and
     *  invokespecial run O's method or one it inherits (a superclass's);
     *  invokevirtual and invokeinterface run the method of the receiver's
     *  class or of one of its superclasses. */
    static final char CONSTRUCTOR = 'n', DIRECT = 's', VIRTUAL = 'v';

    /** What is known of a class: supertypes, and for the classes that
     *  may be instrumented its methods. */
    static final class Info {
        /** The superclass (null for Object), then the interfaces. */
        final String[] supers;
        final boolean itf;
        /** name+desc of its methods, with code or not; empty for the
         *  classes known for their place in the hierarchy only. */
        final Set<String> methods;
        /** name+desc -> its call sites {kind, owner, name+desc}, empty
         *  without code: read from the class file the first time they are
         *  asked for (most classes never are), which is kept until then. */
        private Map<String, List<String[]>> calls;
        private byte[] bytes;
        /** All supertypes, once they are all known. */
        volatile Set<String> ancestors;

        Info(String[] supers, boolean itf, Set<String> methods, byte[] bytes) {
            this.supers = supers;
            this.itf = itf;
            this.methods = methods;
            this.bytes = bytes;
        }

        synchronized Map<String, List<String[]>> calls() {
            if (calls == null) {
                calls = bytes == null ? Map.of() : callSites(new ClassReader(bytes));
                bytes = null;
            }
            return calls;
        }
    }

    /** callSites reads the calls of every method: invoke instructions and
     *  the method handles of invokedynamic (lambdas and method references,
     *  whose targets run from the JDK's generated classes). */
    private static Map<String, List<String[]>> callSites(ClassReader cr) {
        Map<String, List<String[]>> calls = new HashMap<>();
        cr.accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
                List<String[]> l = new ArrayList<>();
                calls.put(name + desc, l);
                if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0)
                    return null;
                return new MethodVisitor(Opcodes.ASM9) {
                    @Override
                    public void visitMethodInsn(int op, String owner, String n, String d, boolean itf) {
                        add(n.equals("<init>") ? CONSTRUCTOR : op == Opcodes.INVOKESTATIC || op == Opcodes.INVOKESPECIAL ? DIRECT : VIRTUAL,
                                owner, n + d);
                    }

                    @Override
                    public void visitInvokeDynamicInsn(String n, String d, Handle bsm, Object... args) {
                        for (Object a : args) {
                            if (!(a instanceof Handle))
                                continue;
                            Handle h = (Handle) a;
                            switch (h.getTag()) {
                            case Opcodes.H_NEWINVOKESPECIAL:
                                add(CONSTRUCTOR, h.getOwner(), h.getName() + h.getDesc());
                                break;
                            case Opcodes.H_INVOKESTATIC:
                            case Opcodes.H_INVOKESPECIAL:
                                add(DIRECT, h.getOwner(), h.getName() + h.getDesc());
                                break;
                            case Opcodes.H_INVOKEVIRTUAL:
                            case Opcodes.H_INVOKEINTERFACE:
                                add(VIRTUAL, h.getOwner(), h.getName() + h.getDesc());
                                break;
                            default: // field handles
                            }
                        }
                    }

                    private void add(char kind, String owner, String nd) {
                        if (owner.charAt(0) != '[') // an array's clone: Object's, native
                            l.add(new String[] {String.valueOf(kind), owner, nd});
                    }
                };
            }
        }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return calls;
    }

    static final ConcurrentHashMap<String, Info> known = new ConcurrentHashMap<>();
    /** class -> its direct subtypes (subclasses and implementors). */
    static final ConcurrentHashMap<String, Set<String>> subtypes = new ConcurrentHashMap<>();
    /** name+desc -> classes declaring it with code (only those can run it). */
    static final ConcurrentHashMap<String, Set<String>> declaring = new ConcurrentHashMap<>();

    /*
     * Bounded under class churn. Everything above is keyed by class name
     * (or by method name+desc of the classes known), and a class's entries
     * live as long as a loader that defined it: a loader is held weakly,
     * with the names it defined, and when the collector clears it (its
     * classes unloaded; classes in throwaway loaders, generated ones with
     * new names each time) purge drops what was known of each name no
     * other live loader defined: its Info and class file, its place in
     * subtypes and declaring, and in the current roots' state (active,
     * followed, reached). So these maps hold the classes of the loaders
     * alive now, and of the JDK (the boot loader's, never unloaded),
     * however many were loaded and dropped before. A purge that runs while
     * the same name loads again in a new loader may drop the new class's
     * entries too (its hierarchy is then not known, and answered
     * conservatively: may run; the subclasses recorded before the purge
     * are not seen by commonSubtype).
     */
    private static final class Definer extends WeakReference<ClassLoader> {
        final Set<String> names = ConcurrentHashMap.newKeySet();

        Definer(ClassLoader l) {
            super(l, gone);
        }
    }

    private static final ReferenceQueue<ClassLoader> gone = new ReferenceQueue<>();
    private static final Map<ClassLoader, Definer> definers = Collections.synchronizedMap(new WeakHashMap<>());
    /** class name -> how many live loaders (other than the boot loader) defined it. */
    private static final ConcurrentHashMap<String, Integer> definedBy = new ConcurrentHashMap<>();
    /** Classes forgotten so far (for log-msg's BCI summary). */
    static final AtomicLong forgotten = new AtomicLong();

    /** defined notes that a loader (null: the boot loader) defined a class. */
    static void defined(ClassLoader l, String cls) {
        if (l == null)
            return; // never unloaded
        Definer d = definers.computeIfAbsent(l, Definer::new);
        if (d.names.add(cls))
            definedBy.merge(cls, 1, Integer::sum);
    }

    /** purge forgets the classes of loaders the collector cleared. Cheap
     *  when none was: called at every class the transformer sees. */
    static void purge() {
        Set<String> dead = null;
        for (Reference<? extends ClassLoader> r; (r = gone.poll()) != null;) {
            for (String c : ((Definer) r).names) {
                if (definedBy.computeIfPresent(c, (k, v) -> v <= 1 ? null : v - 1) == null) {
                    if (dead == null)
                        dead = new HashSet<>();
                    dead.add(c);
                }
            }
        }
        if (dead == null)
            return;
        for (String c : dead) {
            Info i = known.remove(c);
            if (i == null)
                continue;
            for (String sup : i.supers)
                if (sup != null)
                    removeFrom(subtypes, sup, c);
            for (String nd : i.methods)
                removeFrom(declaring, nd, c);
            forgotten.incrementAndGet();
        }
        subtypes.keySet().removeAll(dead);
        Selective sel = Transformer.selective;
        if (sel != null)
            sel.forget(dead);
    }

    /** addTo and removeFrom change a set in a map of sets, dropping it
     *  once empty: atomically per key, so that an add never goes to a set
     *  just dropped. */
    static void addTo(ConcurrentHashMap<String, Set<String>> m, String k, String v) {
        m.compute(k, (key, set) -> {
            if (set == null)
                set = ConcurrentHashMap.newKeySet();
            set.add(v);
            return set;
        });
    }

    static void removeFrom(ConcurrentHashMap<String, Set<String>> m, String k, String v) {
        m.computeIfPresent(k, (key, set) -> {
            set.remove(v);
            return set.isEmpty() ? null : set;
        });
    }

    /** record makes a class known: for classes that may be instrumented
     *  with its methods and class file, for the others its place in the
     *  hierarchy only (the JDK's interfaces that the program's classes
     *  implement decide where a call on them may go). */
    static Info record(ClassReader cr, String cls, Set<String> methods, byte[] bytes, ClassLoader loader) {
        purge();
        defined(loader, cls);
        String[] ifs = cr.getInterfaces();
        String[] supers = new String[ifs.length + 1];
        supers[0] = cr.getSuperName();
        System.arraycopy(ifs, 0, supers, 1, ifs.length);
        Info i = new Info(supers, (cr.getAccess() & Opcodes.ACC_INTERFACE) != 0, methods, bytes);
        known.put(cls, i);
        for (String s : supers)
            if (s != null)
                addTo(subtypes, s, cls);
        return i;
    }

    /** info is what is known of a class; java.base classes loaded before
     *  the agent saw any are looked up by reflection (the boot loader's,
     *  never instrumented here, so loading one now changes nothing). */
    static Info info(String cls) {
        Info i = known.get(cls);
        if (i != null || !Transformer.inBase(cls))
            return i;
        try {
            Class<?> c = Class.forName(cls.replace('/', '.'), false, null);
            Class<?>[] ifs = c.getInterfaces();
            String[] supers = new String[ifs.length + 1];
            supers[0] = c.getSuperclass() == null ? null : c.getSuperclass().getName().replace('.', '/');
            for (int k = 0; k < ifs.length; k++)
                supers[k + 1] = ifs[k].getName().replace('.', '/');
            i = new Info(supers, c.isInterface(), Set.of(), null);
            Info had = known.putIfAbsent(cls, i);
            if (had != null)
                return had;
            for (String s : supers)
                if (s != null)
                    addTo(subtypes, s, cls);
            return i;
        } catch (Throwable e) {
            return null;
        }
    }

    /** mayRun: whether a call of this kind naming owner may run the
     *  method as cls declares it (or when not known, true). */
    static boolean mayRun(String cls, char kind, String owner) {
        if (cls.equals(owner))
            return true;
        if (kind == CONSTRUCTOR)
            return false;
        if (subtype(owner, cls) != 0) // inherited
            return true;
        if (kind == DIRECT)
            return false;
        // Virtual: the receiver's class R is owner or below it, and runs
        // its own method or a superclass's: cls is R or above R.
        return subtype(cls, owner) != 0 || commonSubtype(cls, owner);
    }

    /** subtype: 1 if a is b or a subtype of it, 0 if not, -1 if not known. */
    static int subtype(String a, String b) {
        if (a.equals(b) || b.equals("java/lang/Object"))
            return 1;
        Info i = info(a);
        if (i == null)
            return -1;
        Set<String> anc = i.ancestors;
        if (anc == null) {
            anc = new HashSet<>();
            if (!ancestors(i, anc))
                return anc.contains(b) ? 1 : -1;
            i.ancestors = anc; // kept once complete
        }
        return anc.contains(b) ? 1 : 0;
    }

    /** ancestors collects the supertypes of a class; false if some are
     *  not known (not loaded yet, or loaded before the agent looked). */
    static boolean ancestors(Info i, Set<String> anc) {
        boolean complete = true;
        List<String> work = new ArrayList<>();
        for (String s : i.supers)
            if (s != null)
                work.add(s);
        while (!work.isEmpty()) {
            String c = work.remove(work.size() - 1);
            if (!anc.add(c))
                continue;
            Info ci = info(c);
            if (ci == null) {
                complete = false;
                continue;
            }
            for (String s : ci.supers)
                if (s != null)
                    work.add(s);
        }
        return complete;
    }

    /** commonSubtype: whether some known class below a (the class
     *  declaring the method) is a subtype of b too (it inherits a's method
     *  while implementing b). Two classes have none unless one is below
     *  the other. The walk goes down from a: a was recorded when it
     *  loaded, and so was every class below it, which loaded after it
     *  (b may be a JDK type whose implementors loaded before the agent);
     *  a class below both that is not loaded yet is looked at as it
     *  loads (inherited). */
    private static boolean commonSubtype(String a, String b) {
        Info ia = info(a), ib = info(b);
        if (ia == null || ib == null)
            return true;
        if (!ia.itf && !ib.itf)
            return false;
        Set<String> seen = new HashSet<>();
        List<String> work = new ArrayList<>();
        work.add(a);
        while (!work.isEmpty()) {
            Set<String> subs = subtypes.get(work.remove(work.size() - 1));
            if (subs == null)
                continue;
            for (String r : subs) {
                if (!seen.add(r))
                    continue;
                if (subtype(r, b) != 0)
                    return true;
                work.add(r);
            }
        }
        return false;
    }
}
