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

    /** Call kinds: new O() runs O's constructor only; invokestatic and
     *  invokespecial run O's method or one it inherits (a superclass's);
     *  invokevirtual and invokeinterface run the method of the receiver's
     *  class or of one of its superclasses. */
    static final char CONSTRUCTOR = 'n', DIRECT = 's', VIRTUAL = 'v';

    /** What is known of a class: supertypes, and for the classes that
     *  may be instrumented its methods. Shared by all Selective
     *  instances (it describes classes, not roots). */
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

    /** forget drops dead classes from the roots' state. */
    private void forget(Set<String> dead) {
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

    /** Sizes for log-msg: classes known, methods declared, methods reached. */
    static long[] sizes() {
        Selective sel = Transformer.selective;
        return new long[] {known.size(), declaring.size(), sel == null ? 0 : sel.reached.size(), forgotten.get()};
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

    /**
     * Selective takes the roots in the form agent/roots.go normalizes
     * them to ("a.b.C.m+d.E.*"; ':' and '/' are read too): class and
     * method globs, split at each root's last dot. The grammar is
     * roots.go's: '*' any run of characters, dots included, '?' one
     * character, and a class pattern also matches a nested class's name
     * with each '$' read as '.'. jvmti/rootevents.c matches the same way.
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
        int pi = 0, ni = 0, star = -1, mark = 0;
        while (ni < n.length()) {
            char pc = pi < p.length() ? p.charAt(pi) : 0;
            if (pi < p.length() && pc == '?') {
                pi++;
                ni += Character.charCount(n.codePointAt(ni));
            } else if (pi < p.length() && pc == '*') {
                star = pi++;
                mark = ni;
            } else if (pi < p.length() && pc == n.charAt(ni)) {
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
        String nested = dotted.indexOf('$') < 0 ? null : dotted.replace('$', '.');
        for (int i = 0; i < classes.length; i++)
            if (glob(methods[i], name) && (glob(classes[i], dotted) || (nested != null && glob(classes[i], nested))))
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
    private static boolean ancestors(Info i, Set<String> anc) {
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
