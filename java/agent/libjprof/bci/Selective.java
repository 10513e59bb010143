package libjprof.bci;

import static libjprof.bci.Hierarchy.*;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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
 * inside a root (jvmti/bci.c tells, once per method), its calls (invoke
 * instructions and the method handles of invokedynamic, read from the
 * class file kept for it) are followed LOOKAHEAD levels deep, and the
 * classes declaring a method a call may run become instrumented before
 * the method's body runs: by retransformation on that thread if loaded
 * already (Transformer.expand), else as they load. Which declarations a
 * call may run follows the JVM's rules: a constructor call runs the
 * class named; a static or special call that class's method or an
 * inherited one; a virtual or interface call the method of any class at
 * or above a class at or below the one named. The hierarchy is that of
 * every class loaded since the agent started (the JDK's too, so that a
 * call on a JDK interface reaches only its implementors); where it is not
 * known, the answer is yes. What lies deeper is followed only when the
 * methods reached run inside a root in turn, so what is instrumented is
 * what ran under the roots plus a few levels of calls, not everything a
 * static analysis would reach (through visitors and Object's methods,
 * nearly the whole program). Calls through reflection are not followed.
 *
 * Events of non-root methods count only inside a root (jvmti/bci.c keeps
 * a per-thread root depth; Probe's sub probes do not call the agent while
 * no thread is inside one), so log-rt holds the roots' subgraph even
 * though whole classes are instrumented.
 */
final class Selective {
    /** The roots: globs on the dotted class name and the method name. */
    private final String[] classes, methods;
    /** Modules whose classes may be instrumented besides the class path:
     *  those the roots are in (JDK modules are otherwise left alone). */
    final Set<Module> modules = new HashSet<>();

    /** name+desc -> how it was called from code that ran inside a root:
     *  the call's kind (CONSTRUCTOR, DIRECT, VIRTUAL) followed by the
     *  owner named at the call site. */
    private final ConcurrentHashMap<String, Set<String>> reached = new ConcurrentHashMap<>();

    /** forget drops dead classes from the roots' state. */
    void forget(Set<String> dead) {
        active.removeAll(dead);
        followed.removeIf(f -> dead.contains(f.substring(0, f.indexOf('.'))));
        for (String nd : reached.keySet())
            reached.computeIfPresent(nd, (k, calls) -> {
                calls.removeIf(c -> dead.contains(c.substring(1)));
                return calls.isEmpty() ? null : calls;
            });
        synchronized (pending) {
            pending.removeAll(dead);
        }
    }

    /** Sizes for log-msg: classes known, methods declared, methods reached. */
    static long[] sizes() {
        Selective sel = Transformer.selective;
        return new long[] {known.size(), declaring.size(), sel == null ? 0 : sel.reached.size(), forgotten.get()};
    }

    /**
     * Selective takes the roots in the form agent/roots.go normalizes
     * them to ("a.b.C.m+d.E.*"; ':' and '/' are read too): class and
     * method globs, split at each root's last dot. The grammar is
     * roots.go's: '*' any run of characters, dots included, '?' one
     * character, and a '.' of a class pattern also matches a '$' after
     * the class name's last '.' (a nested class in the source's
     * spelling). jvmti/rootevents.c matches the same way.
     */
    Selective(String spec, Map<String, Module> bootModules) {
        List<String> cs = new ArrayList<>(), ms = new ArrayList<>();
        for (String p : spec.split("[+:]")) {
            p = p.trim().replace('/', '.');
            if (p.isEmpty())
                continue;
            int dot = p.lastIndexOf('.');
            if (dot <= 0 || dot == p.length() - 1)
                throw new IllegalArgumentException("root " + p + ": want Class.method");
            String c = p.substring(0, dot), m = p.substring(dot + 1);
            cs.add(c);
            ms.add(m);
            int g = 0;
            while (g < c.length() && c.charAt(g) != '*' && c.charAt(g) != '?')
                g++;
            String lit = c.substring(0, g);
            for (Map.Entry<String, Module> e : bootModules.entrySet()) {
                String pkg = e.getKey().replace('/', '.') + ".";
                if (lit.startsWith(pkg) || pkg.startsWith(lit))
                    modules.add(e.getValue());
            }
        }
        if (cs.isEmpty())
            throw new IllegalArgumentException("no root given");
        classes = cs.toArray(new String[0]);
        methods = ms.toArray(new String[0]);
    }

    /** glob matches a name against a pattern: '*' any run of characters,
     *  '?' one character (a code point), the rest itself. Greedy with one
     *  backtrack point, the last '*': the loop of roots.go's globMatch and
     *  rootevents.c's jp_roots_glob. */
    static boolean glob(String p, String n) {
        return glob(p, n, n.length());
    }

    /** classGlob matches a dotted binary class name against a class
     *  pattern as roots.go's classMatch does: a '.' of the pattern also
     *  matches a '$' after the name's last '.', since which '$' nest a
     *  class is not in its name (Outer$In$ner may be In$ner in Outer). */
    static boolean classGlob(String p, String dotted) {
        return glob(p, dotted, dotted.lastIndexOf('.') + 1);
    }

    /** glob, with a pattern's '.' also matching a '$' of the name at or
     *  after index nest. */
    private static boolean glob(String p, String n, int nest) {
        int pi = 0, ni = 0, star = -1, mark = 0;
        while (ni < n.length()) {
            char pc = pi < p.length() ? p.charAt(pi) : 0;
            if (pi < p.length() && pc == '?') {
                pi++;
                ni += Character.charCount(n.codePointAt(ni));
            } else if (pi < p.length() && pc == '*') {
                star = pi++;
                mark = ni;
            } else if (pi < p.length() && (pc == n.charAt(ni) || (pc == '.' && n.charAt(ni) == '$' && ni >= nest))) {
                pi++;
                ni++;
            } else if (star >= 0) {
                pi = star + 1;
                mark += Character.charCount(n.codePointAt(mark));
                ni = mark;
            } else {
                return false;
            }
        }
        while (pi < p.length() && p.charAt(pi) == '*')
            pi++;
        return pi == p.length();
    }

    /** isRoot: whether a method of a class (internal name) is a root. */
    boolean isRoot(String cls, String name) {
        String dotted = cls.replace('/', '.');
        for (int i = 0; i < classes.length; i++)
            if (glob(methods[i], name) && classGlob(classes[i], dotted))
                return true;
        return false;
    }

    /** wants: the class declares a root, or a method that a call
     *  reached inside a root may run. */
    private boolean wants(String cls, String name, String desc) {
        if (isRoot(cls, name))
            return true;
        Set<String> calls = reached.get(name + desc);
        if (calls == null)
            return false;
        for (String c : calls)
            if (mayRun(cls, c.charAt(0), c.substring(1)))
                return true;
        return false;
    }

    /** Classes instrumented whole: they declare a root or a method
     *  that a call reached inside a root may run. */
    private final Set<String> active = ConcurrentHashMap.newKeySet();
    /** Classes loaded already that became active as a subclass of theirs
     *  loaded (it inherits their method for a call reached before):
     *  retransformed at the next entry of a method inside a root (the
     *  class file hook, where this is found, cannot retransform). */
    private final List<String> pending = new ArrayList<>();

    /** select returns the methods of a class to instrument (name+desc):
     *  all of them if the class is active or declares a method reached
     *  already, else none. It records the class (supertypes, methods, and
     *  its bytes, for its call sites if they are ever needed). */
    Set<String> select(ClassReader cr, String cls, byte[] bytes, ClassLoader loader) {
        Set<String> methods = new HashSet<>();
        List<String> withCode = new ArrayList<>();
        cr.accept(new ClassVisitor(Opcodes.ASM9) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
                methods.add(name + desc);
                if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) == 0)
                    withCode.add(name + desc);
                return null;
            }
        }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        Info info = record(cr, cls, methods, bytes, loader);
        for (String nd : withCode)
            addTo(declaring, nd, cls);
        if (!reached.isEmpty())
            inherited(cls, info);

        boolean on = active.contains(cls);
        for (String nd : withCode) {
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

    /** inherited activates the loaded superclasses whose methods a new
     *  class inherits for a virtual call reached on one of its
     *  supertypes that they are not below (class K { m } and class R
     *  extends K implements I: a call of I.m may now run K.m). */
    private void inherited(String cls, Info info) {
        Set<String> anc = new HashSet<>();
        ancestors(info, anc);
        for (String a : anc) {
            if (active.contains(a))
                continue;
            Info ai = known.get(a);
            if (ai == null)
                continue;
            for (String nd : ai.methods) {
                Set<String> calls = reached.get(nd);
                if (calls == null)
                    continue;
                boolean may = false;
                for (String c : calls)
                    if (c.charAt(0) == VIRTUAL && subtype(cls, c.substring(1)) != 0) {
                        may = true;
                        break;
                    }
                if (may && declaring.getOrDefault(nd, Set.of()).contains(a) && active.add(a)) {
                    synchronized (pending) {
                        pending.add(a);
                    }
                    Probe.pending();
                    break;
                }
            }
        }
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
     *  instruments classes that may not run under the roots. */
    static final int LOOKAHEAD = Integer.getInteger("libjprof.bci.lookahead", 8);

    /** cls.name+desc already followed. */
    private final Set<String> followed = ConcurrentHashMap.newKeySet();

    /** expand follows the call sites of a method that ran inside a root
     *  for the first time, LOOKAHEAD levels deep: the classes declaring
     *  the methods they may run become active. It returns those that were
     *  not, all known, so loaded (or loading), with those pending: the
     *  caller retransforms them. No method: only those pending. */
    List<String> expand(String cls, String nd) {
        List<String> activated = new ArrayList<>();
        synchronized (pending) {
            activated.addAll(pending);
            pending.clear();
        }
        List<String[]> level = new ArrayList<>();
        if (cls != null)
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
                    char kind = c[0].charAt(0);
                    String owner = c[1], target = c[2];
                    addTo(reached, target, c[0] + owner);
                    Set<String> decl = declaring.get(target);
                    if (decl == null)
                        continue;
                    for (String k : decl) {
                        if (!mayRun(k, kind, owner))
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
