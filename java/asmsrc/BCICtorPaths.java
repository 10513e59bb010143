import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;

import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/** Constructors javac never writes, made with ASM (which must be on the
 *  class path, or the boot class path): more than one path to the
 *  super() or this() call.
 *   - gen/PBase(int): the superclass.
 *   - gen/Paths(int): super(x).
 *   - gen/Paths(boolean b): if (b) super(1); else super(2);
 *   - gen/Paths(boolean b, int x): if (b) this(x); else super(check(x));
 *     check throws for x < 0: an exception before super() on the
 *     second path.
 *  gen/OldPaths has the same constructors in a class file of version 49
 *  (no stack map frames). Arguments: how many times to call Paths(true),
 *  Paths(false), Paths(true, 5), Paths(false, 5) and Paths(false, -1),
 *  on each class. */
public class BCICtorPaths {
    static final class Loader extends ClassLoader {
        Loader() { super(BCICtorPaths.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static byte[] base() {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, "gen/PBase", null, "java/lang/Object", null);
        cw.visitField(Opcodes.ACC_PUBLIC, "v", "I", null, null).visitEnd();
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(I)V", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitVarInsn(Opcodes.ILOAD, 1);
        mv.visitFieldInsn(Opcodes.PUTFIELD, "gen/PBase", "v", "I");
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    /** paths makes gen/Paths (version 52, with stack map frames) or, old,
     *  gen/OldPaths (version 49: no frames, verified by inference). */
    static byte[] paths(boolean old) {
        String self = old ? "gen/OldPaths" : "gen/Paths";
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(old ? Opcodes.V1_5 : Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, self, null, "gen/PBase", null);
        MethodVisitor mv;
        // Paths(int x) { super(x); }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(I)V", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitVarInsn(Opcodes.ILOAD, 1);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "gen/PBase", "<init>", "(I)V", false);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();

        // Paths(boolean b) { if (b) super(1); else super(2); }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(Z)V", null, null);
        mv.visitCode();
        Label other = new Label(), end = new Label();
        mv.visitVarInsn(Opcodes.ILOAD, 1);
        mv.visitJumpInsn(Opcodes.IFEQ, other);
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitInsn(Opcodes.ICONST_1);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "gen/PBase", "<init>", "(I)V", false);
        mv.visitJumpInsn(Opcodes.GOTO, end);
        mv.visitLabel(other);
        if (!old) mv.visitFrame(Opcodes.F_NEW, 2, new Object[] {Opcodes.UNINITIALIZED_THIS, Opcodes.INTEGER}, 0, new Object[0]);
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitInsn(Opcodes.ICONST_2);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "gen/PBase", "<init>", "(I)V", false);
        mv.visitLabel(end);
        if (!old) mv.visitFrame(Opcodes.F_NEW, 2, new Object[] {self, Opcodes.INTEGER}, 0, new Object[0]);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();

        // Paths(boolean b, int x) { if (b) this(x); else super(check(x)); }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "(ZI)V", null, null);
        mv.visitCode();
        other = new Label();
        end = new Label();
        mv.visitVarInsn(Opcodes.ILOAD, 1);
        mv.visitJumpInsn(Opcodes.IFEQ, other);
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitVarInsn(Opcodes.ILOAD, 2);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, self, "<init>", "(I)V", false);
        mv.visitJumpInsn(Opcodes.GOTO, end);
        mv.visitLabel(other);
        if (!old) mv.visitFrame(Opcodes.F_NEW, 3, new Object[] {Opcodes.UNINITIALIZED_THIS, Opcodes.INTEGER, Opcodes.INTEGER}, 0, new Object[0]);
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitVarInsn(Opcodes.ILOAD, 2);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, self, "check", "(I)I", false);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "gen/PBase", "<init>", "(I)V", false);
        mv.visitLabel(end);
        if (!old) mv.visitFrame(Opcodes.F_NEW, 3, new Object[] {self, Opcodes.INTEGER, Opcodes.INTEGER}, 0, new Object[0]);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();

        // static int check(int x) { if (x < 0) throw new IllegalArgumentException(); return x; }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "check", "(I)I", null, null);
        mv.visitCode();
        Label ok = new Label();
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitJumpInsn(Opcodes.IFGE, ok);
        mv.visitTypeInsn(Opcodes.NEW, "java/lang/IllegalArgumentException");
        mv.visitInsn(Opcodes.DUP);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/IllegalArgumentException", "<init>", "()V", false);
        mv.visitInsn(Opcodes.ATHROW);
        mv.visitLabel(ok);
        if (!old) mv.visitFrame(Opcodes.F_NEW, 1, new Object[] {Opcodes.INTEGER}, 0, new Object[0]);
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    /** run makes the calls the arguments ask for on one of the classes;
     *  "sum=S thrown=T". */
    static String run(Class<?> base, Class<?> p, int[] n) throws Exception {
        Constructor<?> one = p.getConstructor(boolean.class), two = p.getConstructor(boolean.class, int.class);
        long sum = 0;
        for (int i = 0; i < n[0]; i++)
            sum += base.getField("v").getInt(one.newInstance(true));
        for (int i = 0; i < n[1]; i++)
            sum += base.getField("v").getInt(one.newInstance(false));
        for (int i = 0; i < n[2]; i++)
            sum += base.getField("v").getInt(two.newInstance(true, 5));
        for (int i = 0; i < n[3]; i++)
            sum += base.getField("v").getInt(two.newInstance(false, 5));
        int thrown = 0;
        for (int i = 0; i < n[4]; i++) {
            try {
                two.newInstance(false, -1);
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof IllegalArgumentException)
                    thrown++;
            }
        }
        return "sum=" + sum + " thrown=" + thrown;
    }

    public static void main(String[] args) throws Exception {
        int[] n = new int[5];
        for (int i = 0; i < n.length; i++)
            n[i] = Integer.parseInt(args[i]);
        Loader l = new Loader();
        Class<?> base = l.define("gen.PBase", base());
        Class<?> p = l.define("gen.Paths", paths(false));
        Class<?> old = l.define("gen.OldPaths", paths(true));
        System.out.println("paths: " + run(base, p, n) + " old: " + run(base, old, n));
    }
}
