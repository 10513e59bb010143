import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/** Defines, with ASM, the classes the ROOTS grammar's table names
 *  (agent/testdata/roots-table.txt), so that the table can be run through
 *  the agent: stdin gives one class a line, "binary.Name m1 m2 ...", then
 *  "end"; each class gets those methods (static, empty; <init> and
 *  <clinit> as such), is loaded and initialized, and the program says
 *  "ready" and waits for "quit". */
public class RootsTableClasses {
    static final class Loader extends ClassLoader {
        Loader() { super(RootsTableClasses.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static byte[] gen(String internal, String[] methods) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, internal, null, "java/lang/Object", null);
        for (String m : methods) {
            MethodVisitor mv;
            if (m.equals("<init>")) {
                mv = cw.visitMethod(Opcodes.ACC_PUBLIC, m, "()V", null, null);
                mv.visitCode();
                mv.visitVarInsn(Opcodes.ALOAD, 0);
                mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
            } else {
                mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, m, "()V", null, null);
                mv.visitCode();
            }
            mv.visitInsn(Opcodes.RETURN);
            mv.visitMaxs(0, 0);
            mv.visitEnd();
        }
        cw.visitEnd();
        return cw.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Loader l = new Loader();
        java.util.List<Class<?>> defined = new java.util.ArrayList<>();
        String line;
        while ((line = in.readLine()) != null && !line.equals("end")) {
            String[] f = line.trim().split(" ");
            String[] methods = new String[f.length - 1];
            System.arraycopy(f, 1, methods, 0, methods.length);
            defined.add(l.define(f[0], gen(f[0].replace('.', '/'), methods)));
        }
        // Linked and initialized, so prepared: the method-event source
        // looks for roots in prepared classes.
        for (Class<?> c : defined)
            Class.forName(c.getName(), true, l);
        int n = defined.size();
        System.out.println("ready " + n);
        System.out.flush();
        while ((line = in.readLine()) != null && !line.trim().equals("quit")) {
        }
    }
}
