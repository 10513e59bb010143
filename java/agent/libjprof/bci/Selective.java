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
 * Selective instrumentation (ROOTS, as JFluid does it): only the root
 * methods and the methods reachable from them are instrumented.
 *
 * Reachability is found as classes are transformed: every class seen
 * leaves its supertypes and call sites here, and a wanted method's call
 * sites (invoke instructions) make their targets wanted, as
 * (name+descriptor, owner) pairs, followed at once through all the
 * classes known. A target is wanted in the owner and in every class
 * related to it (a subclass: virtual dispatch; a superclass: an inherited
 * implementation), and where the hierarchy is not known, conservatively,
 * in any class declaring that method. A class loaded later is
 * instrumented as it loads; one loaded already is queued and
 * retransformed by a daemon thread shortly after (calls it gets before
 * then are not seen).
 *
 * Events of non-root methods count only inside a root (jvmti/bci.c keeps
 * a per-thread root depth), so log-rt holds the roots' subgraph even
 * though the static over-approximation instruments more.
 */
final class Selective {
    final String spec;
    private final Pattern[] classes, methods;
    /** Modules whose classes may be instrumented besides the class path:
     *  those the roots are in (JDK modules are otherwise left alone). */
    final Set<Module> modules = new HashSet<>();

    /** name+desc -> owners it was called on from wanted code. */
    private final ConcurrentHashMap<String, Set<String>> reached = new ConcurrentHashMap<>();

    /** What is known of every class seen: supertypes and methods. Shared
     *  by all Selective instances (it describes classes, not roots). */
    static final class Info {
        final String[] supers;
        /** name+desc -> its call sites {owner, name+desc}; empty without code. */
        final Map<String, List<String[]>> calls;
        /** name+desc of the methods the class's current code is instrumented in. */
        volatile Set<String> instrumented = Set.of();
        /** All supertypes reachable through known classes, made when first
         *  asked; base/unknown: one of them is in java.base (whose own
         *  supertypes are not recorded) or not known at all. */
        volatile Set<String> ancestors;
        boolean base, unknown;
        Info(String[] supers, Map<String, List<String[]>> calls) { this.supers = supers; this.calls = calls; }
    }
    static final ConcurrentHashMap<String, Info> known = new ConcurrentHashMap<>();
    /** name+desc -> classes declaring it. */
    static final ConcurrentHashMap<String, Set<String>> declaring = new ConcurrentHashMap<>();
    /** Classes to retransform: they declare a method that became wanted. */
    static final Set<String> pending = ConcurrentHashMap.newKeySet();

    Selective(String spec, Map<String, Module> bootModules) {
        this.spec = spec;
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

    /** marked: class -> name+desc of its methods found wanted. */
    private final ConcurrentHashMap<String, Set<String>> marked = new ConcurrentHashMap<>();

    /** select returns the methods of a class to instrument (name+desc).
     *  It records the class (supertypes, call sites), marks its roots and
     *  the methods reached from them, and follows the calls through every
     *  class known so far at once: classes loaded already that this makes
     *  wanted are queued once per discovery wave, not once per method. */
    Set<String> select(ClassReader cr, String cls) {
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
        String[] ifs = cr.getInterfaces();
        String[] supers = new String[ifs.length + 1];
        supers[0] = cr.getSuperName();
        System.arraycopy(ifs, 0, supers, 1, ifs.length);
        Info info = new Info(supers, calls);
        known.put(cls, info);
        for (String nd : calls.keySet())
            declaring.computeIfAbsent(nd, k -> ConcurrentHashMap.newKeySet()).add(cls);

        List<String[]> work = new ArrayList<>();
        for (String nd : calls.keySet()) {
            int p = nd.indexOf('(');
            if (wants(cls, nd.substring(0, p), nd.substring(p)))
                mark(cls, nd, work);
        }
        propagate(work, cls);
        Set<String> want = new HashSet<>(marked.getOrDefault(cls, Set.of()));
        info.instrumented = want;
        return want;
    }

    /** markRoots marks the roots among the classes known already (after a
     *  change of roots), so that one retransformation finds them all. */
    void markRoots() {
        List<String[]> work = new ArrayList<>();
        for (Map.Entry<String, Info> e : known.entrySet())
            for (String nd : e.getValue().calls.keySet())
                if (isRoot(e.getKey(), nd.substring(0, nd.indexOf('('))))
                    mark(e.getKey(), nd, work);
        propagate(work, null);
        pending.clear(); // the caller retransforms every class
    }

    private void mark(String cls, String nd, List<String[]> work) {
        if (marked.computeIfAbsent(cls, k -> ConcurrentHashMap.newKeySet()).add(nd))
            work.add(new String[] {cls, nd});
    }

    /** propagate follows the marked methods' calls through the known
     *  classes; a loaded class (other than current) with a marked method
     *  it was not instrumented for is queued for retransformation. */
    private void propagate(List<String[]> work, String current) {
        while (!work.isEmpty()) {
            String[] w = work.remove(work.size() - 1);
            Info i = known.get(w[0]);
            if (i == null)
                continue;
            if (!w[0].equals(current) && !i.instrumented.contains(w[1]))
                pending.add(w[0]);
            List<String[]> sites = i.calls.get(w[1]);
            if (sites == null)
                continue;
            for (String[] c : sites) {
                String owner = c[0], nd = c[1];
                if (!reached.computeIfAbsent(nd, k -> ConcurrentHashMap.newKeySet()).add(owner))
                    continue;
                Set<String> decl = declaring.get(nd);
                if (decl == null)
                    continue;
                for (String k : decl)
                    if (related(k, owner))
                        mark(k, nd, work);
            }
        }
    }
}
