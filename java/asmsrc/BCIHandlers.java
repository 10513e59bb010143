import java.lang.reflect.Method;

import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/** Exception handlers javac never writes, made with ASM (on the class
 *  path or the boot class path): each method of gen/Handlers catches the
 *  exception CtorThrow$Derived's superclass constructor throws for a
 *  negative argument, with a handler that begins otherwise than by
 *  storing the exception: by dropping it (popH), calling a method on it
 *  (msgH), passing it to a method (consumeH), duplicating it (dupH) or
 *  casting it (castH); then it calls marker(). gen/OldHandlers is the
 *  same in a class file of version 49 (no stack map frames). Each method
 *  runs 100 times, every other one throwing (TestBCIHandlerShapes). */
public class BCIHandlers {
    static final class Loader extends ClassLoader {
        Loader() { super(BCIHandlers.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static final String[] NAMES = {"popH", "msgH", "consumeH", "dupH", "castH"};

    static void handler(ClassWriter cw, String owner, String name, int kind) {
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, name, "(I)V", null, null);
        mv.visitCode();
        Label s = new Label(), e = new Label(), h = new Label(), after = new Label();
        mv.visitTryCatchBlock(s, e, h, "java/lang/IllegalArgumentException");
        mv.visitLabel(s);
        mv.visitTypeInsn(Opcodes.NEW, "CtorThrow$Derived");
        mv.visitInsn(Opcodes.DUP);
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "CtorThrow$Derived", "<init>", "(I)V", false);
        mv.visitInsn(Opcodes.POP);
        mv.visitLabel(e);
        mv.visitJumpInsn(Opcodes.GOTO, after);
        mv.visitLabel(h);
        switch (kind) {
        case 0:
            mv.visitInsn(Opcodes.POP);
            break;
        case 1:
            mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, "java/lang/Throwable", "getMessage", "()Ljava/lang/String;", false);
            mv.visitInsn(Opcodes.POP);
            break;
        case 2:
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, owner, "consume", "(Ljava/lang/Throwable;)V", false);
            break;
        case 3:
            mv.visitInsn(Opcodes.DUP);
            mv.visitVarInsn(Opcodes.ASTORE, 1);
            mv.visitInsn(Opcodes.POP);
            break;
        default:
            mv.visitTypeInsn(Opcodes.CHECKCAST, "java/lang/RuntimeException");
            mv.visitInsn(Opcodes.POP);
        }
        mv.visitLabel(after);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, owner, "marker", "()V", false);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
    }

    /** loop writes a static method of the descriptor that runs a short
     *  loop (so that it is not left out as trivial) and returns. */
    static void loop(ClassWriter cw, String name, String desc, int local) {
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, name, desc, null, null);
        mv.visitCode();
        Label top = new Label(), done = new Label();
        mv.visitInsn(Opcodes.ICONST_0);
        mv.visitVarInsn(Opcodes.ISTORE, local);
        mv.visitLabel(top);
        mv.visitVarInsn(Opcodes.ILOAD, local);
        mv.visitInsn(Opcodes.ICONST_3);
        mv.visitJumpInsn(Opcodes.IF_ICMPGE, done);
        mv.visitIincInsn(local, 1);
        mv.visitJumpInsn(Opcodes.GOTO, top);
        mv.visitLabel(done);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
    }

    static byte[] handlers(String owner, int version) {
        ClassWriter cw = new ClassWriter(version >= Opcodes.V1_7 ? ClassWriter.COMPUTE_FRAMES : ClassWriter.COMPUTE_MAXS) {
            @Override
            protected String getCommonSuperClass(String a, String b) {
                return "java/lang/Object";
            }
        };
        cw.visit(version, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, owner, null, "java/lang/Object", null);
        for (int k = 0; k < NAMES.length; k++)
            handler(cw, owner, NAMES[k], k);
        loop(cw, "consume", "(Ljava/lang/Throwable;)V", 1);
        loop(cw, "marker", "()V", 0);
        cw.visitEnd();
        return cw.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        Loader l = new Loader();
        for (Class<?> c : new Class<?>[] {l.define("gen.Handlers", handlers("gen/Handlers", Opcodes.V1_8)),
                l.define("gen.OldHandlers", handlers("gen/OldHandlers", Opcodes.V1_5))})
            for (String n : NAMES) {
                Method m = c.getMethod(n, int.class);
                for (int i = 0; i < 100; i++)
                    m.invoke(null, i % 2 == 0 ? -1 : 1);
            }
        System.out.println("handlers: done");
    }
}
