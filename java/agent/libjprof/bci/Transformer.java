package libjprof.bci;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassTooLargeException;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodTooLargeException;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;

/**
 * Transformer rewrites class files so that every method with code reports
 * its entry, normal exit and exit by exception to Probe. It is called by
 * the agent's ClassFileLoadHook (jvmti/bci.c) with the bytes the JVM
 * hands over; it returns the new bytes, or null to leave the class as it
 * was (filtered out, or not rewritable: then log-msg says why).
 *
 * Frames: the rewrite never changes the code's existing control flow, so
 * the class's own stack map frames stay valid (they are read expanded and
 * written as they were). The catch-all handlers get a frame, written
 * here, with no locals (or only an uninitialized this before super()),
 * which every state in their ranges is assignable to; the caught probe's
 * block at a handler's start (MethodProbes) gets frames copied from the
 * method's own there, with the local its exception went to. So no frame
 * is computed and no class is loaded to find a common superclass.
 */
public final class Transformer {
    private Transformer() {}

    static final String PROBE = "libjprof/bci/Probe";
    private static final int V1_6 = 50;

    /** Engine types: i (static), I, n (static native) and N, as the
     *  JVMTI source gives them. */
    private static final int TYPE_STATIC = 0, TYPE_INSTANCE = 1, TYPE_NATIVE_STATIC = 4, TYPE_NATIVE = 5;

    private static Set<String> basePackages = new HashSet<>();
    /** -Dlibjprof.bci.base=true: java.base too (an experiment, for the
     *  measurement in BENCHMARKS.md), but for java.lang.invoke and jdk.internal. */
    static final boolean BASE = Boolean.getBoolean("libjprof.bci.base");
    private static Map<String, Module> bootModules = new HashMap<>();
    /** The boot layer's modules read from the runtime image (jrt:). */
    private static Set<String> imageModules = Set.of();

    private static String[] includes = new String[0], excludes = new String[0];
    private static final ConcurrentHashMap<String, Integer> ids = new ConcurrentHashMap<>();
    /** handle -> {class, name+desc}: what selective instrumentation expands. */
    private static final ConcurrentHashMap<Integer, String[]> methods = new ConcurrentHashMap<>();
    /** Selective instrumentation (ROOTS), or null: every method. */
    static volatile Selective selective;

    /** init's flags: instrument trivial methods too (ALLMETHODS); wrap
     *  native methods (see NATIVE_PREFIX); count monitors (JLM); call
     *  Probe's FFM downcalls instead of its natives. */
    static final int ALL_METHODS = 1, NATIVES = 2, JLM = 4, FFM = 8, FOREIGN = 16, NO_ASSERTS = 32;
    /** transform's: the class is being retransformed; it is, and its
     *  native methods were wrapped at its first load. */
    static final int RETRANSFORMING = 1, WRAPPED = 2;
    private static int flags;

    /** noAsserts: the JVM's command line turns no assertions on and
     *  names none (bci.c's bci_no_asserts), so every assert statement's
     *  code is skipped once its class is initialised. */
    static boolean noAsserts() {
        return (flags & NO_ASSERTS) != 0;
    }
    /** Trivial methods left uninstrumented, counted at their class's first load. */
    private static final AtomicLong trivialLeft = new AtomicLong();
    /** Native methods wrapped, counted at their class's first load. */
    private static final AtomicLong nativesWrapped = new AtomicLong();

    /**
     * A native method foo is seen under BCI by renaming it to
     * NATIVE_PREFIX + foo, still native, and giving foo a body that calls
     * it between the probes: JVMTI's native method prefix (set by the
     * agent, jvmti/bci_classes.c) makes the VM link the renamed method to
     * foo's native code. A class gets the wrappers only when it first
     * loads (a retransformation cannot add methods) and keeps them.
     */
    static final String NATIVE_PREFIX = "$$jprof$$";

    /**
     * init runs once, from the agent at VM init: the packages of java.base
     * (never instrumented), the boot layer's modules by package (with
     * ROOTS, the JDK's are left alone but the roots') and the package
     * filters (comma-separated, dotted or slashed prefixes).
     */
    public static void init(String include, String exclude, String roots, int flags) {
        Transformer.flags = flags;
        classPath = System.getProperty("java.class.path", "");
        Map<String, Module> mods = new HashMap<>();
        Set<String> base = new HashSet<>();
        Set<String> img = new HashSet<>();
        for (java.lang.module.ResolvedModule r : ModuleLayer.boot().configuration().modules())
            if (r.reference().location().isPresent() && "jrt".equals(r.reference().location().get().getScheme()))
                img.add(r.name());
        imageModules = img;
        for (Module m : ModuleLayer.boot().modules()) {
            for (String p : m.getPackages()) {
                String ip = p.replace('.', '/');
                mods.put(ip, m);
                if (m.getName().equals("java.base"))
                    base.add(ip);
            }
        }
        bootModules = mods;
        basePackages = base;
        includes = prefixes(include);
        excludes = prefixes(exclude);
        for (String p : includes)
            if ((p.startsWith("java/") || p.startsWith("javax/")) && onlyBase(p, mods))
                Probe.note("say: warning: INCLUDE prefix " + p.replace('/', '.') + " selects nothing: its classes are in java.base, which BCI leaves as it is (METHODEVENTS sees them)");
        setRoots(roots);
    }

    /** onlyBase says whether every package prefix p reaches (a package
     *  under it, or the one its class names are in) is java.base's, and
     *  one does: java.* packages are the JDK's alone, and javax.* ones
     *  in practice, so nothing else can match. */
    private static boolean onlyBase(String p, Map<String, Module> mods) {
        boolean any = false;
        for (Map.Entry<String, Module> e : mods.entrySet()) {
            String pkg = e.getKey();
            if (pkg.startsWith(p) || p.startsWith(pkg + "/")) {
                if (!e.getValue().getName().equals("java.base"))
                    return false;
                any = true;
            }
        }
        return any;
    }

    /**
     * setRoots switches to selective instrumentation from these roots
     * ("a.B.m+c.D.*"), or back to every method ("" or "all"). The agent
     * then retransforms the loaded classes.
     */
    public static synchronized void setRoots(String roots) {
        if (roots == null || roots.isEmpty() || roots.equals("all")) {
            selective = null;
        } else {
            Selective s = new Selective(roots, bootModules);
            s.markRoots();
            selective = s;
        }
    }

    /**
     * expand is called by the agent on the thread where a method (its
     * engine handle) first runs inside a root, before the method's body:
     * the classes its calls may reach are instrumented now, so that its
     * calls are seen from the first. With -1, it only retransforms the
     * classes that became active as their subclasses loaded.
     */
    static void expand(int h) {
        Selective sel = selective;
        String[] m = h < 0 ? null : methods.get(h);
        if (sel == null || (m == null && h >= 0))
            return;
        // Each class is activated once, by one caller: concurrent
        // expansions retransform disjoint lists.
        List<String> names = m == null ? sel.expand(null, null) : sel.expand(m[0], m[1]);
        if (names.isEmpty())
            return;
        try {
            Probe.retransform(names.toArray(new String[0]));
        } catch (Throwable e) {
            Probe.note("BCI: retransforming for ROOTS failed: " + e);
        }
    }

    /** builtin: a loader of the JDK's own (boot, platform, application),
     *  whose classes are those of the boot layer and the class path. */
    static boolean builtin(ClassLoader loader) {
        return loader == null || loader.getClass().getName().startsWith("jdk.internal.loader.ClassLoaders$");
    }

    /** The class path at VM init: what the application loader searches
     *  and BCICACHE stamps, whatever the program sets the property to
     *  later. */
    private static String classPath = "";

    static String classPath() {
        return classPath;
    }

    /** inImage: a boot layer module of the JDK's runtime image (not of
     *  --module-path's files), whose classes are their files. */
    static boolean inImage(Module m) {
        return imageModules.contains(m.getName()) && !foreign();
    }

    /** foreign: the JVM's classes may not be their files (another agent,
     *  a patched or upgraded module, a boot class path append: the
     *  agent's jp_bci_foreign), so no rewrite that depends on another
     *  class's file is kept. */
    static boolean foreign() {
        return (flags & FOREIGN) != 0;
    }

    /** bootModule is the boot layer's module of a class, or null. */
    static Module bootModule(String cls) {
        return bootModules.get(pkg(cls));
    }

    static boolean inBase(String cls) {
        return basePackages.contains(pkg(cls));
    }

    /** neverInstrumented: cls is in java.base and java.base is not
     *  instrumented (so calls into it make no event). */
    static boolean neverInstrumented(String cls) {
        return !BASE && inBase(cls);
    }

    private static String[] prefixes(String list) {
        if (list == null || list.isEmpty())
            return new String[0];
        List<String> out = new ArrayList<>();
        for (String s : list.split("[,:+]")) {
            s = s.trim().replace('.', '/');
            if (s.endsWith("*"))
                s = s.substring(0, s.length() - 1);
            if (!s.isEmpty())
                out.add(s);
        }
        return out.toArray(new String[0]);
    }

    private static String pkg(String cls) {
        int i = cls.lastIndexOf('/');
        return i < 0 ? "" : cls.substring(0, i);
    }

    /**
     * wanted says whether a class (internal name) is to be instrumented:
     * not in java.base, not the agent's own classes (with its renamed ASM,
     * on the boot class path), inside INCLUDE if given and outside
     * EXCLUDE.
     */
    public static boolean wanted(String cls, boolean boot) {
        if (cls == null)
            return false;
        String p = pkg(cls);
        if (basePackages.contains(p) && (!BASE || cls.equals("java/lang/Object") || cls.startsWith("java/lang/invoke/") || cls.startsWith("jdk/internal/")))
            return false;
        if (boot && cls.startsWith("libjprof/bci/"))
            return false; // the agent's own classes and its ASM
        for (String x : excludes)
            if (cls.startsWith(x))
                return false;
        Selective sel = selective;
        if (sel != null && includes.length == 0) {
            // Selective: JDK modules only where a root is.
            Module m = bootModules.get(p);
            if (m != null && !sel.modules.contains(m))
                return false;
        }
        if (includes.length == 0)
            return true;
        for (String x : includes)
            if (cls.startsWith(x))
                return true;
        return false;
    }

    /** transform returns the instrumented class, or null to keep it;
     *  with entry (BCICACHE's name for it), the class's cache entry,
     *  which holds it (TransformCache.entry), or the class if it cannot
     *  be kept.
     *  how: RETRANSFORMING, WRAPPED. Native methods are wrapped at a
     *  wanted class's first load, without ROOTS, and again at each of its
     *  retransformations: they must keep the methods they had. */
    public static byte[] transform(ClassLoader loader, String cls, boolean boot, byte[] bytes, int how, String entry) {
        try {
            boolean wanted = wanted(cls, boot);
            boolean wrap = (how & RETRANSFORMING) == 0
                    ? wanted && (flags & NATIVES) != 0 && selective == null
                    : (how & WRAPPED) != 0;
            // entry: the name BCICACHE would keep this class under (a first
            // load outside ROOTS, the agent's hook found it not held).
            boolean cached = entry != null && (how & RETRANSFORMING) == 0 && selective == null;
            if (!wanted && !wrap) {
                if (selective != null)
                    Hierarchy.record(reader(bytes), cls, Set.of(), null, loader);
                else if (cached)
                    return TransformCache.entry(bytes, null, null, 0, 0, false);
                return null;
            }
            Set<String> skip = new HashSet<>();
            for (int attempt = 0; ; attempt++) {
                try {
                    // A class of a named module calls Probe, in the boot
                    // loader's unnamed module, which a named module does not
                    // read. No read edge is added here: HotSpot adds it
                    // (to the unnamed modules of the boot, platform and
                    // application loaders) to the module of every class
                    // whose bytes a class file hook changed, as for
                    // java.instrument's agents; TestBCINamedModules checks
                    // a JDK module's classes run instrumented.
                    if (!cached)
                        return rewrite(bytes, skip, loader, how, wanted, wrap, null);
                    // For the cache, the class goes back inside its entry
                    // (the hook writes it and takes the class out).
                    Rewritten r = new Rewritten();
                    byte[] out = rewrite(bytes, skip, loader, how, wanted, wrap, r);
                    // An entry is named by its class's bytes (and the
                    // class path's jars' stamps when they decided its
                    // rewrite): one that other files decided is not kept.
                    return skip.isEmpty() && r.deps != Trivial.FILES
                            ? TransformCache.entry(bytes, out, r.handles, r.trivialLeft, r.wrapped, r.deps == Trivial.JARS)
                            : out;
                } catch (ClassTooLargeException e) {
                    // A cached class has a constant more per method: one
                    // near the pool's limit is rewritten, and not kept.
                    if (!cached)
                        throw e;
                    cached = false;
                } catch (MethodTooLargeException e) {
                    String what = e.getMethodName() + e.getDescriptor();
                    if (!skip.add(what) || attempt > 64)
                        throw e;
                    Probe.note("BCI: method " + cls + "." + what
                            + " left uninstrumented: instrumented, it would exceed 64 KB of code");
                }
            }
        } catch (ClassTooLargeException e) {
            Probe.note("BCI: class " + cls + " left as it was: instrumented, its constant pool would be too large");
        } catch (Throwable e) {
            Probe.note("BCI: class " + cls + " left as it was: " + e);
        }
        return null;
    }

    /** The newest class file version ASM 9.4 reads (Java 20). */
    private static final int ASM_MAX_MAJOR = 64;

    static int major(byte[] bytes) {
        return ((bytes[6] & 0xff) << 8) | (bytes[7] & 0xff);
    }

    /** asmReadable: newer class files (JDK 21+) use nothing ASM 9.4 cannot
     *  carry through (no new constant kinds; unknown attributes are
     *  copied): they are read as the newest version it knows. */
    static byte[] asmReadable(byte[] bytes) {
        if (major(bytes) <= ASM_MAX_MAJOR)
            return bytes;
        bytes = bytes.clone();
        bytes[6] = 0;
        bytes[7] = (byte) ASM_MAX_MAJOR;
        return bytes;
    }

    private static ClassReader reader(byte[] bytes) {
        return new ClassReader(asmReadable(bytes));
    }

    /** Rewritten is what a rewrite for the cache reports besides the
     *  bytes: its probes' handles and its counts. */
    static final class Rewritten {
        final Map<Integer, TransformCache.Handle> handles = new HashMap<>();
        long trivialLeft, wrapped;
        /** What its trivial methods depend on (Trivial's levels). */
        int deps;
    }

    /** rewrite rewrites a class; with r, for the cache: the probes'
     *  handles are constants of their own, reported in r. */
    private static byte[] rewrite(byte[] bytes, Set<String> skip, ClassLoader loader, int how, boolean wanted, boolean wrap, Rewritten r) {
        // The result gets its own version back.
        int major = major(bytes);
        return ownVersion(rewrite0(asmReadable(bytes), skip, loader, how, wanted, wrap, r), major);
    }

    /** ownVersion gives a class rewritten from asmReadable's bytes its
     *  own version (major) back; null stays null. */
    static byte[] ownVersion(byte[] out, int major) {
        if (out != null && major > ASM_MAX_MAJOR) {
            out[6] = (byte) (major >> 8);
            out[7] = (byte) major;
        }
        return out;
    }

    private static byte[] rewrite0(byte[] bytes, Set<String> skip, ClassLoader loader, int how, boolean wanted, boolean wrap, Rewritten r) {
        ClassReader cr = new ClassReader(bytes);
        if ((cr.getAccess() & Opcodes.ACC_MODULE) != 0)
            return null;
        int version = cr.readUnsignedShort(6);
        boolean first = (how & RETRANSFORMING) == 0;
        Selective sel = selective;
        Set<String> only = null;
        if (!wanted) {
            only = Set.of(); // only the wrappers a retransformation must keep
            if (sel != null)
                Hierarchy.record(cr, cr.getClassName(), Set.of(), null, loader);
        } else if (sel != null) {
            only = sel.select(cr, cr.getClassName(), bytes, loader);
            if (only.isEmpty() && !wrap)
                return null;
        }
        // A root is instrumented whatever its size.
        Trivial.Known tf = (flags & ALL_METHODS) != 0 ? null : Trivial.scan(cr, builtin(loader), sel);
        Set<String> trivial = tf == null ? Set.of() : tf.methods.keySet();
        if (r != null)
            r.deps = tf == null ? Trivial.FIXED : tf.deps;
        ClassWriter cw = new ClassWriter(cr, 0); // MethodProbes gives the maxima
        Instrument ci = new Instrument(cw, version, skip, only, sel, trivial, wrap, r == null ? null : r.handles);
        cr.accept(ci, ClassReader.EXPAND_FRAMES);
        if (first) { // a class with nothing left to instrument counts its trivial methods too
            trivialLeft.addAndGet(ci.trivialLeft);
            if (r != null)
                r.trivialLeft = ci.trivialLeft;
            if (ci.changed) {
                nativesWrapped.addAndGet(ci.wrapped);
                if (r != null)
                    r.wrapped = ci.wrapped;
            }
        }
        return ci.changed ? cw.toByteArray() : null;
    }

    /**
     * id is the engine handle of a method, registered once per name. ids
     * and methods hold one entry per name the engine registered, so at
     * most MAXMETHODS, the engine's own bound: past it, the engine hands
     * out its overflow handle (negative here), which is not kept.
     */
    static int id(String cls, String name, String desc, int type) {
        String full = cls + "." + name + desc;
        Integer h = ids.get(full);
        if (h == null) {
            // No lambda: without ROOTS and FFMPROBES the agent's Java
            // runs no invokedynamic (concatenation inlined: Makefile),
            // whose first bootstraps cost a JVM's start tens of ms. Two
            // threads registering one name get the same handle.
            int r = Probe.register(full, type);
            if (r < 0)
                return r;
            Integer was = ids.putIfAbsent(full, r);
            h = was != null ? was : r;
            methods.putIfAbsent(h, new String[] {cls, name + desc});
        }
        return h;
    }

    private static final ConcurrentHashMap<String, Integer> lockSites = new ConcurrentHashMap<>();

    /**
     * lockSite is the id of a site where monitors are taken (JLM): the
     * k-th synchronized block of a method (k from 1, with the line where
     * it is taken) or, for k 0, the synchronized method itself. Once per
     * site: a retransformation gets the same id.
     */
    static int lockSite(String cls, String name, int k, int line) {
        String site = cls.replace('/', '.') + "." + name
                + (k == 0 ? " (synchronized method)" : " (block " + k + (line > 0 ? ", line " + line : "") + ")");
        Integer id = lockSites.get(site);
        if (id == null) { // no method reference: see id()
            synchronized (lockSites) { // a site is registered once
                id = lockSites.get(site);
                if (id == null)
                    lockSites.put(site, id = Probe.lockSite(site));
            }
        }
        return id;
    }

    /** sizes is what log-msg's BCI summary says of the transformer's
     *  maps: method names registered, then Selective.sizes, then the
     *  trivial methods left out and the native methods wrapped, then
     *  BCICACHE's counts (filled by the agent). */
    static long[] sizes() {
        long[] s = Selective.sizes();
        long[] out = new long[s.length + 6]; // the last three: BCICACHE's, the agent's counts
        out[0] = ids.size();
        System.arraycopy(s, 0, out, 1, s.length);
        out[s.length + 1] = trivialLeft.get();
        out[s.length + 2] = nativesWrapped.get();
        return out;
    }

    static final class Instrument extends ClassVisitor {
        final int version;
        final Set<String> skip, only, trivial;
        final Selective sel;
        final boolean wrap;
        String cls;
        boolean changed;
        long trivialLeft, wrapped;

        /** For the cache: each probe's handle, by value (its constant's). */
        final Map<Integer, TransformCache.Handle> handles;

        Instrument(ClassVisitor cv, int version, Set<String> skip, Set<String> only, Selective sel,
                Set<String> trivial, boolean wrap, Map<Integer, TransformCache.Handle> handles) {
            super(Opcodes.ASM9, cv);
            this.handles = handles;
            this.version = version;
            this.skip = skip;
            this.only = only;
            this.sel = sel;
            this.trivial = trivial;
            this.wrap = wrap;
        }

        @Override
        public void visit(int v, int access, String name, String sig, String sup, String[] ifs) {
            cls = name;
            super.visit(v, access, name, sig, sup, ifs);
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
            if ((access & Opcodes.ACC_NATIVE) != 0 && wrap) {
                wrapNative(access, name, desc, sig, exc);
                return null;
            }
            MethodVisitor mv = super.visitMethod(access, name, desc, sig, exc);
            if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0 || skip.contains(name + desc)
                    || (only != null && !only.contains(name + desc)))
                return mv;
            if (trivial.contains(name + desc)) {
                trivialLeft++;
                return mv;
            }
            changed = true;
            int h = handle(name, desc, (access & Opcodes.ACC_STATIC) != 0 ? TYPE_STATIC : TYPE_INSTANCE);
            return new MethodProbes(monitors(mv, access, name), access, name, desc, h, version >= V1_6 + 1, probes(h, name), handles != null);
        }

        /** handle registers a method of this class; for the cache, it
         *  notes the handle's method. */
        private int handle(String name, String desc, int type) {
            int h = id(cls, name, desc, type);
            if (handles != null)
                handles.put(h < 0 ? h : h | TransformCache.CACHED_ID, new TransformCache.Handle(name + desc, type));
            return h;
        }

        /** monitors puts MonitorProbes before the writer with JLM. */
        private MethodVisitor monitors(MethodVisitor mv, int access, String name) {
            return (flags & JLM) == 0 ? mv : new MonitorProbes(mv, cls, access, name, version >= 49);
        }

        /** The probes of a method: every method's, or under ROOTS a root's
         *  or a method's that may run inside one. */
        private String[] probes(int h, String name) {
            if (sel == null)
                return (flags & FFM) != 0 ? MethodProbes.FFM : MethodProbes.ALL;
            if (sel.isRoot(cls, name)) {
                Probe.markRoot(h);
                return MethodProbes.ROOT;
            }
            return MethodProbes.SUB;
        }

        /**
         * wrapNative writes native foo as a native NATIVE_PREFIX+foo,
         * private (nothing else calls it; the JVM links it by foo's
         * name) and a method foo of foo's access that calls it, with the
         * probes around the call.
         */
        private void wrapNative(int access, String name, String desc, String sig, String[] exc) {
            changed = true;
            wrapped++;
            boolean isStatic = (access & Opcodes.ACC_STATIC) != 0;
            int nacc = Opcodes.ACC_PRIVATE | Opcodes.ACC_NATIVE | Opcodes.ACC_SYNTHETIC | (access & Opcodes.ACC_STATIC);
            MethodVisitor nat = super.visitMethod(nacc, NATIVE_PREFIX + name, desc, sig, exc);
            if (nat != null)
                nat.visitEnd();
            int h = handle(name, desc, isStatic ? TYPE_NATIVE_STATIC : TYPE_NATIVE);
            MethodVisitor mv = super.visitMethod(access & ~Opcodes.ACC_NATIVE, name, desc, sig, exc);
            // Generated code goes through MethodProbes as a method's own
            // would: the entry probe, the exit probe before the return and
            // the catch-all around the call.
            MethodVisitor w = new MethodProbes(monitors(mv, access & ~Opcodes.ACC_NATIVE, name), access & ~Opcodes.ACC_NATIVE,
                    name, desc, h, version >= V1_6 + 1, probes(h, name), handles != null);
            w.visitCode();
            int slot = 0;
            if (!isStatic)
                w.visitVarInsn(Opcodes.ALOAD, slot++);
            for (Type t : Type.getArgumentTypes(desc)) {
                w.visitVarInsn(t.getOpcode(Opcodes.ILOAD), slot);
                slot += t.getSize();
            }
            w.visitMethodInsn(isStatic ? Opcodes.INVOKESTATIC : Opcodes.INVOKESPECIAL, cls, NATIVE_PREFIX + name, desc, false);
            Type ret = Type.getReturnType(desc);
            w.visitInsn(ret.getOpcode(Opcodes.IRETURN));
            Label end = new Label();
            w.visitLabel(end);
            w.visitMaxs(Math.max(slot, ret.getSize()), slot);
            w.visitEnd();
        }
    }
}
