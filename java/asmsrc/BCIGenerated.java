import java.lang.ref.WeakReference;
import java.lang.reflect.Method;

import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/** Classes a bytecode instrumenter finds hard, made with ASM (which must
 *  be on the class path, or the boot class path) and loaded by a class
 *  loader that is then dropped so that they unload:
 *   - gen/Old, class file version 49: no stack map frames, verified by
 *     inference; a constructor, f(x) that throws for x < 0 and g(x) that
 *     calls f inside a try/catch;
 *   - gen/Huge: big() has code within a few bytes of the 64 KB limit
 *     (instrumented it would not fit), small() is ordinary.
 *  Each of ROUNDS rounds loads both with a fresh loader and calls
 *  new Old(), g(5), g(-1), small() and big(0) once. */
public class BCIGenerated {
    static final int ROUNDS = 3;

    static final class Loader extends ClassLoader {
        Loader() { super(BCIGenerated.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static byte[] old() {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_5, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, "gen/Old", null, "java/lang/Object", null);
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "()V", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        // static int f(int x) { if (x < 0) throw new IllegalStateException(); return x + 1; }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "f", "(I)I", null, null);
        mv.visitCode();
        Label ok = new Label();
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitJumpInsn(Opcodes.IFGE, ok);
        mv.visitTypeInsn(Opcodes.NEW, "java/lang/IllegalStateException");
        mv.visitInsn(Opcodes.DUP);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/IllegalStateException", "<init>", "()V", false);
        mv.visitInsn(Opcodes.ATHROW);
        mv.visitLabel(ok);
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitInsn(Opcodes.ICONST_1);
        mv.visitInsn(Opcodes.IADD);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        // static int g(int x) { try { return f(x); } catch (IllegalStateException e) { return -1; } }
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "g", "(I)I", null, null);
        mv.visitCode();
        Label s = new Label(), e = new Label(), h = new Label();
        mv.visitTryCatchBlock(s, e, h, "java/lang/IllegalStateException");
        mv.visitLabel(s);
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, "gen/Old", "f", "(I)I", false);
        mv.visitLabel(e);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitLabel(h);
        mv.visitInsn(Opcodes.POP);
        mv.visitInsn(Opcodes.ICONST_M1);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    static byte[] huge() {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, "gen/Huge", null, "java/lang/Object", null);
        // static int big(int x): 21842 x (iinc 0 1), iload_0, ireturn: 65528 bytes.
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "big", "(I)I", null, null);
        mv.visitCode();
        for (int i = 0; i < 21842; i++) mv.visitIincInsn(0, 1);
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "small", "()I", null, null);
        mv.visitCode();
        mv.visitIntInsn(Opcodes.BIPUSH, 7);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    /** round loads the classes, calls them and returns a weak reference
     *  to one of them, so the caller can see it unload. */
    static WeakReference<Class<?>> round(byte[] o, byte[] h) throws Exception {
        Loader l = new Loader();
        Class<?> oc = l.define("gen.Old", o);
        Class<?> hc = l.define("gen.Huge", h);
        oc.getConstructor().newInstance();
        Method g = oc.getMethod("g", int.class);
        int a = (Integer) g.invoke(null, 5), b = (Integer) g.invoke(null, -1);
        int c = (Integer) hc.getMethod("small").invoke(null);
        int d = (Integer) hc.getMethod("big", int.class).invoke(null, 0);
        if (a != 6 || b != -1 || c != 7 || d != 21842)
            throw new AssertionError(a + " " + b + " " + c + " " + d);
        return new WeakReference<>(oc);
    }

    public static void main(String[] args) throws Exception {
        byte[] o = old(), h = huge();
        boolean unloaded = true;
        for (int r = 0; r < ROUNDS; r++) {
            WeakReference<Class<?>> ref = round(o, h);
            for (int i = 0; i < 50 && ref.get() != null; i++) {
                System.gc();
                Thread.sleep(10);
            }
            unloaded &= ref.get() == null;
        }
        System.out.println("generated: rounds=" + ROUNDS + " unloaded=" + unloaded);
    }
}
