import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.commons.ClassRemapper;
import org.objectweb.asm.commons.Remapper;

/**
 * Shade builds jprof-bci.jar: the agent's classes and ASM's, with ASM
 * moved from org.objectweb.asm to libjprof.bci.asm. The jar goes on the
 * boot class path, which every class loader asks first: under ASM's own
 * name it would shadow whatever ASM the profiled program brings.
 *
 *   java -cp <asm jars>:. Shade OUT.jar CLASSDIR|JAR...
 */
public class Shade {
    static final String FROM = "org/objectweb/asm/", TO = "libjprof/bci/asm/";

    static final Remapper REMAP = new Remapper() {
        @Override
        public String map(String name) {
            return name.startsWith(FROM) ? TO + name.substring(FROM.length()) : name;
        }
    };

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: Shade OUT.jar CLASSDIR|JAR...");
            System.exit(2);
        }
        Set<String> seen = new HashSet<>();
        try (JarOutputStream out = new JarOutputStream(new FileOutputStream(args[0]))) {
            for (int i = 1; i < args.length; i++) {
                Path p = Paths.get(args[i]);
                if (Files.isDirectory(p)) {
                    List<Path> files;
                    try (Stream<Path> s = Files.walk(p)) {
                        files = s.filter(f -> f.toString().endsWith(".class")).sorted().collect(Collectors.toList());
                    }
                    for (Path f : files)
                        add(out, seen, Files.readAllBytes(f));
                } else {
                    try (JarFile jf = new JarFile(p.toFile())) {
                        for (JarEntry e : jf.stream().sorted((a, b) -> a.getName().compareTo(b.getName())).collect(Collectors.toList())) {
                            if (!e.getName().endsWith(".class") || e.getName().endsWith("module-info.class"))
                                continue;
                            try (InputStream in = jf.getInputStream(e)) {
                                add(out, seen, in.readAllBytes());
                            }
                        }
                    }
                }
            }
        }
    }

    static void add(JarOutputStream out, Set<String> seen, byte[] b) throws IOException {
        ClassReader cr = new ClassReader(b);
        String name = REMAP.map(cr.getClassName());
        if (!seen.add(name))
            throw new IOException("class " + name + " given twice");
        ClassWriter cw = new ClassWriter(0);
        cr.accept(new ClassRemapper(cw, REMAP), 0);
        out.putNextEntry(new JarEntry(name + ".class"));
        out.write(cw.toByteArray());
        out.closeEntry();
    }
}
