package libjprof.bci;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.zip.ZipFile;

/** ClassPath reads class files from java.class.path's directories and
 *  jars (not their manifests' Class-Path), the jars opened once and
 *  kept open, as the application class loader keeps its own. */
final class ClassPath {
    private ClassPath() {}

    private static List<Object> entries;

    /** inStampedJar: the class the application loader loads by this
     *  name is a jar's of the class path, whose stamp BCICACHE's
     *  entries hold: the first holder is a jar, with no directory
     *  before it that could come to shadow it unseen (stampedAbsent)
     *  and no jar before it naming others in its manifest's
     *  Class-Path (which the loader searches next, and nothing stamps;
     *  the holder's own are searched after it). */
    static synchronized boolean inStampedJar(String name) {
        try {
            Object e = find(name);
            if (!(e instanceof JarFile))
                return false;
            for (Object x : entries) {
                // An entry that is neither a jar nor a directory yet: its
                // files may appear unseen.
                if (x == Boolean.FALSE || (x instanceof File && !stampedAbsent((File) x, name)))
                    return false;
                // The holder's own Class-Path is searched after it.
                if (x == e)
                    return true;
                if (x instanceof JarFile && namesOthers((JarFile) x))
                    return false;
            }
            return false;
        } catch (IOException | RuntimeException x) {
            return false;
        }
    }

    /** absentLevel is what a class's absence depends on (a Trivial
     *  level), for the trivial-method scan: the runtime
     *  image, for a package of the image (a class cannot appear there);
     *  the class path's jars, when they are all it holds (a class can
     *  appear only in a changed jar, whose stamp the entry's name
     *  holds: an optional dependency a library names, say), and by
     *  directories that do not hold its package (stampedAbsent);
     *  otherwise a directory's or the module path's files, which may
     *  change unseen. */
    static int absentLevel(String owner) {
        Module m = Transformer.bootModule(owner);
        if (m != null)
            return Transformer.inImage(m) ? Trivial.FIXED : Trivial.FILES;
        return !Transformer.foreign() && absentFromStampedJars(owner + ".class") ? Trivial.JARS : Trivial.FILES;
    }

    /** absentFromStampedJars: no entry of the class path holds name,
     *  and every entry is a jar naming no others or a directory whose
     *  stamp would change were name to appear in it, so that only an
     *  entry whose stamp changed could hold it in another run. */
    static synchronized boolean absentFromStampedJars(String name) {
        try {
            if (find(name) != null)
                return false;
            // find has opened every entry it could: the rest are
            // directories, or paths that are nothing yet.
            for (Object x : entries)
                if (x == Boolean.FALSE || (x instanceof File && !stampedAbsent((File) x, name))
                        || (x instanceof JarFile && namesOthers((JarFile) x)))
                    return false;
            return true;
        } catch (IOException | RuntimeException x) {
            return false;
        }
    }

    /** stampedAbsent: directory dir cannot come to hold name without
     *  its stamp changing. The stamp (jvmti/bci_context.c) holds the
     *  directory's own modification time, which an entry added to it
     *  directly changes: that covers a name whose first component (its
     *  top package, or the class file itself) is not in dir. A
     *  directory that holds that package may gain the class deeper down,
     *  unseen. A program's classes in a directory before a library's
     *  jar (java -cp classes:lib.jar) share no package with it as a
     *  rule. */
    private static boolean stampedAbsent(File dir, String name) {
        Set<String> top = tops.get(dir);
        if (top == null) {
            // The directory's own entries, links included: a link that
            // leads nowhere yet may lead somewhere later, unseen.
            String[] l = dir.list();
            top = l == null ? UNLISTED : new HashSet<>(Arrays.asList(l));
            tops.put(dir, top);
        }
        int slash = name.indexOf('/');
        return top != UNLISTED && !top.contains(slash < 0 ? name : name.substring(0, slash));
    }

    /** Directories of the class path by their entries, listed once; an
     *  unreadable one vouches for nothing. */
    private static final Set<String> UNLISTED = new HashSet<>();
    private static final Map<File, Set<String>> tops = new HashMap<>();

    /** Jars whose manifest has a Class-Path, by whether it has. */
    private static final Map<JarFile, Boolean> classPathIn = new HashMap<>();

    private static boolean namesOthers(JarFile j) throws IOException {
        Boolean b = classPathIn.get(j);
        if (b == null) {
            java.util.jar.Manifest mf = j.getManifest();
            b = mf != null && mf.getMainAttributes().getValue("Class-Path") != null;
            classPathIn.put(j, b);
        }
        return b;
    }

    static synchronized byte[] read(String name) throws IOException {
        Object e = find(name);
        if (e instanceof File) {
            // java.io, not java.nio: no file system provider's code
            // in the middle of a class load.
            try (InputStream in = new FileInputStream(new File((File) e, name))) {
                return in.readAllBytes();
            }
        }
        if (e instanceof JarFile) {
            JarFile j = (JarFile) e;
            try (InputStream in = j.getInputStream(j.getEntry(name))) {
                return in.readAllBytes();
            }
        }
        return null;
    }

    /** find returns the first entry holding name: a directory's File,
     *  a JarFile, or null. */
    private static Object find(String name) throws IOException {
        if (entries == null) {
            entries = new ArrayList<>();
            String cp = Transformer.classPath();
            for (String e : cp.split(File.pathSeparator, -1))
                entries.add(new File(e.isEmpty() ? "." : e)); // empty: the working directory, as the JDK's loader reads it
        }
        for (int i = 0; i < entries.size(); i++) {
            Object e = entries.get(i);
            if (e instanceof File) {
                File f = (File) e;
                if (f.isDirectory()) {
                    if (new File(f, name).isFile())
                        return f;
                    continue;
                }
                try {
                    e = f.isFile() ? new JarFile(f, false, ZipFile.OPEN_READ, Runtime.version()) : Boolean.FALSE;
                } catch (IOException | RuntimeException x) {
                    e = Boolean.FALSE; // not a jar it can read: skipped, as the JDK's loader does
                }
                entries.set(i, e);
            }
            if (e instanceof JarFile && ((JarFile) e).getEntry(name) != null)
                return e;
        }
        return null;
    }
}
