package libjprof.bci;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * Selective instrumentation (ROOTS), as JFluid does it: only the call
 * subgraph of the root methods is instrumented, found while it runs.
 *
 * A class is instrumented whole or not at all. At first it is the classes
 * declaring a root. When an instrumented method runs for the first time
 * inside a root (jvmti/bci.c tells, once per method), its call sites
 * (invoke instructions, read from the class file kept for it) are
 * followed LOOKAHEAD levels deep: the classes declaring a target, the owner named
 * at the call site or a class related to it (a subclass: virtual dispatch;
 * a superclass: an inherited implementation; where the hierarchy is not
 * known, conservatively, any class declaring that method), become
 * instrumented before the method's body runs: by retransformation on that
 * thread if loaded already (Transformer.expand), else as they load. What
 * lies deeper is followed only when the methods reached run inside a
 * root in turn, so what is instrumented is what ran under the roots plus
 * a few levels of calls, not everything a static analysis would reach (through
 * visitors and Object's methods, nearly the whole program).
 *
 * Events of non-root methods count only inside a root (jvmti/bci.c keeps
 * a per-thread root depth), so log-rt holds the roots' subgraph even
 * though whole classes are instrumented.
 */
final class Selective {
    private final Pattern[] classes, methods;
    /** Modules whose classes may be instrumented besides the class path:
     *  those the roots are in (JDK modules are otherwise left alone). */
    final Set<Module> modules = new HashSet<>();

    /** name+desc -> owners it was called on from code that ran inside a root. */
    private final ConcurrentHashMap<String, Set<String>> reached = new ConcurrentHashMap<>();

    /** What is known of every class seen: supertypes and methods. Shared
     *  by all Selective instances (it describes classes, not roots). */
    static final class Info {
        final String[] supers;
        /** name+desc of its methods, with code or not. */
        final Set<String> methods;
        /** name+desc -> its call sites {owner, name+desc}, empty without
         *  code: read from the class file the first time they are asked
         *  for (most classes never are), which is kept until then. */
        private Map<String, List<String[]>> calls;
        private byte[] bytes;
        /** All supertypes reachable through known classes, made when first
         *  asked; base/unknown: one of them is in java.base (whose own
         *  supertypes are not recorded) or not known at all. */
        volatile Set<String> ancestors;
        boolean base, unknown;
        Info(String[] supers, Set<String> methods, byte[] bytes) {
            this.supers = supers;
            this.methods = methods;
            this.bytes = bytes;
        }

        synchronized Map<String, List<String[]>> calls() {
            if (calls == null) {
                calls = callSites(new ClassReader(bytes));
                bytes = null;
            }
            return calls;
        }
    }

    /** callSites reads the invoke instructions of every method. */
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
                        l.add(new String[] {owner, n + d});
                    }
                };
            }
        }, ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        return calls;
    }
    static final ConcurrentHashMap<String, Info> known = new ConcurrentHashMap<>();
    /** name+desc -> classes declaring it. */
    static final ConcurrentHashMap<String, Set<String>> declaring = new ConcurrentHashMap<>();

    Selective(String spec, Map<String, Module> bootModules) {
        List<Pattern> cs = new ArrayList<>(), ms = new ArrayList<>();
        for (String p : spec.split("[+:]")) {
            p = p.trim().replace('/', '.');
            if (p.isEmpty())
                continue;
            int dot = p.lastIndexOf('.');
            if (dot <= 0 || dot == p.length() - 1)
                throw new IllegalArgumentException("root " + p + ": want Class.method (globs with *)");
            String c = p.substring(0, dot), m = p.substring(dot + 1);
            cs.add(glob(c));
            ms.add(glob(m));
            String lit = c.indexOf('*') < 0 ? c : c.substring(0, c.indexOf('*'));
            for (Map.Entry<String, Module> e : bootModules.entrySet()) {
                String pkg = e.getKey().replace('/', '.') + ".";
                if (lit.startsWith(pkg) || pkg.startsWith(lit))
                    modules.add(e.getValue());
            }
        }
        if (cs.isEmpty())
            throw new IllegalArgumentException("no root given");
        classes = cs.toArray(new Pattern[0]);
        methods = ms.toArray(new Pattern[0]);
    }

    private static Pattern glob(String g) {
        StringBuilder b = new StringBuilder();
        String[] parts = g.split("\\*", -1);
        for (int i = 0; i < parts.length; i++) {
            if (i > 0)
                b.append(".*");
            if (!parts[i].isEmpty())
                b.append(Pattern.quote(parts[i]));
        }
        return Pattern.compile(b.toString());
    }

    boolean isRoot(String cls, String name) {
        String dotted = cls.replace('/', '.');
        for (int i = 0; i < classes.length; i++)
            if (methods[i].matcher(name).matches() && classes[i].matcher(dotted).matches())
                return true;
        return false;
    }

    private boolean wants(String cls, String name, String desc) {
        if (isRoot(cls, name))
            return true;
        Set<String> owners = reached.get(name + desc);
        if (owners == null)
            return false;
        for (String o : owners)
            if (related(cls, o))
                return true;
        return false;
    }

    /** related: equal, or one a subtype of the other, or not known. */
    static boolean related(String a, String b) {
        if (a.equals(b))
            return true;
        int x = subtype(a, b), y = subtype(b, a);
        return x != 0 || y != 0;
    }

    /** subtype: 1 if a is a subtype of b, 0 if not, -1 if not known. */
    private static int subtype(String a, String b) {
        if (b.equals("java/lang/Object"))
            return 1;
        Info i = known.get(a);
        if (i == null)
            return Transformer.inBase(a) && !Transformer.inBase(b) ? 0 : -1;
        Set<String> anc = ancestors(i);
        if (anc.contains(b))
            return 1;
        if (i.unknown || (i.base && Transformer.inBase(b)))
            return -1; // java.base classes never extend anything outside it
        return 0;
    }

    private static Set<String> ancestors(Info i) {
        Set<String> anc = i.ancestors;
        if (anc != null)
            return anc;
        anc = new HashSet<>();
        boolean base = false, unknown = false;
        List<String> work = new ArrayList<>();
        for (String s : i.supers)
            work.add(s);
        while (!work.isEmpty()) {
            String c = work.remove(work.size() - 1);
            if (c == null || !anc.add(c))
                continue;
            if (Transformer.inBase(c)) {
                base = true;
                continue;
            }
            Info ci = known.get(c);
            if (ci == null) {
                unknown = true;
                continue;
            }
            for (String s : ci.supers)
                work.add(s);
        }
        i.base = base;
        i.unknown = unknown;
        i.ancestors = anc;
        return anc;
    }

    /** Classes instrumented whole: they declare a root or a method
     *  called from one that ran inside a root. */
    private final Set<String> active = ConcurrentHashMap.newKeySet();

    /** select returns the methods of a class to instrument (name+desc):
     *  all of them if the class is active or declares a method reached
     *  already, else none. It records the class (supertypes, methods, and
     *  its bytes, for its call sites if they are ever needed). */
    Set<String> select(ClassReader cr, String cls, byte[] bytes) {
        Set<String> methods = new HashSet<>();
        cr.accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
                methods.add(name + desc);
                return null;
            }
        }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        String[] ifs = cr.getInterfaces();
        String[] supers = new String[ifs.length + 1];
        supers[0] = cr.getSuperName();
        System.arraycopy(ifs, 0, supers, 1, ifs.length);
        known.put(cls, new Info(supers, methods, bytes));
        for (String nd : methods)
            declaring.computeIfAbsent(nd, k -> ConcurrentHashMap.newKeySet()).add(cls);

        boolean on = active.contains(cls);
        for (String nd : methods) {
            if (on)
                break;
            int p = nd.indexOf('(');
            on = wants(cls, nd.substring(0, p), nd.substring(p));
        }
        if (!on)
            return Set.of();
        active.add(cls);
        return methods;
    }

    /** markRoots activates the classes known already that declare a root
     *  (after a change of roots); the caller retransforms every class. */
    void markRoots() {
        for (Map.Entry<String, Info> e : known.entrySet())
            for (String nd : e.getValue().methods)
                if (isRoot(e.getKey(), nd.substring(0, nd.indexOf('('))))
                    active.add(e.getKey());
    }

    /** How many levels of calls expand follows at once. Each level it
     *  leaves to later first runs may cost another retransformation, a
     *  stop of the whole VM (HotSpot walks every class and compiled
     *  method each time: about 10 ms in javac); each level it follows
     *  instruments classes that may not run under the roots. On javac,
     *  eight levels rewrite about as many classes as five with half the
     *  retransformations or fewer (the bench's ROOTS rows). */
    static final int LOOKAHEAD = Integer.getInteger("libjprof.bci.lookahead", 8);

    /** cls.name+desc already followed. */
    private final Set<String> followed = ConcurrentHashMap.newKeySet();

    /** expand follows the call sites of a method that ran inside a root
     *  for the first time, LOOKAHEAD levels deep: the classes declaring
     *  their targets become active. It returns those that were not, all
     *  known, so loaded (or loading): the caller retransforms them. */
    List<String> expand(String cls, String nd) {
        List<String> activated = new ArrayList<>();
        List<String[]> level = new ArrayList<>();
        level.add(new String[] {cls, nd});
        for (int d = 0; d < LOOKAHEAD && !level.isEmpty(); d++) {
            List<String[]> next = new ArrayList<>();
            for (String[] m : level) {
                if (!followed.add(m[0] + "." + m[1]))
                    continue;
                Info i = known.get(m[0]);
                List<String[]> sites = i == null ? null : i.calls().get(m[1]);
                if (sites == null)
                    continue;
                for (String[] c : sites) {
                    String owner = c[0], target = c[1];
                    reached.computeIfAbsent(target, k -> ConcurrentHashMap.newKeySet()).add(owner);
                    Set<String> decl = declaring.get(target);
                    if (decl == null)
                        continue;
                    for (String k : decl) {
                        if (!related(k, owner))
                            continue;
                        if (active.add(k))
                            activated.add(k);
                        next.add(new String[] {k, target});
                    }
                }
            }
            level = next;
        }
        return activated;
    }
}
