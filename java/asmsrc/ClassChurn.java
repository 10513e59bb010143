import java.lang.ref.WeakReference;
import java.util.function.IntUnaryOperator;

import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/** Class churn, as generated code makes it: each of ROUNDS rounds
 *  defines PER classes with new names (gen/R<round>_<k>) in a fresh
 *  class loader, runs them, drops the loader and collects until its
 *  classes unload. Each class implements IntUnaryOperator: applyAsInt(x)
 *  calls its own static run(x), which returns x + k. The last line says
 *  the thread CPU time the rounds took. ASM must be on the class path or
 *  the boot class path. Arguments: ROUNDS PER. */
public class ClassChurn {
    static final class Loader extends ClassLoader {
        Loader() { super(ClassChurn.class.getClassLoader()); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static byte[] gen(String name, int k) {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_MAXS | ClassWriter.COMPUTE_FRAMES);
        cw.visit(Opcodes.V1_8, Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER, name, null, "java/lang/Object",
                new String[] {"java/util/function/IntUnaryOperator"});
        MethodVisitor mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "()V", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        mv.visitInsn(Opcodes.RETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC, "run", "(I)I", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ILOAD, 0);
        mv.visitLdcInsn(k);
        mv.visitInsn(Opcodes.IADD);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        mv = cw.visitMethod(Opcodes.ACC_PUBLIC, "applyAsInt", "(I)I", null, null);
        mv.visitCode();
        mv.visitVarInsn(Opcodes.ILOAD, 1);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, name, "run", "(I)I", false);
        mv.visitInsn(Opcodes.IRETURN);
        mv.visitMaxs(0, 0);
        mv.visitEnd();
        cw.visitEnd();
        return cw.toByteArray();
    }

    static WeakReference<Loader> round(int r, int per, long[] sum) throws Exception {
        Loader l = new Loader();
        for (int k = 0; k < per; k++) {
            String name = "gen/R" + r + "_" + k;
            Class<?> c = l.define(name.replace('/', '.'), gen(name, k));
            IntUnaryOperator f = (IntUnaryOperator) c.getConstructor().newInstance();
            sum[0] += f.applyAsInt(r);
        }
        return new WeakReference<>(l);
    }

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]), per = Integer.parseInt(args[1]);
        long[] sum = new long[1];
        int unloaded = 0;
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu = 0;
        for (int r = 0; r < rounds; r++) {
            long c0 = mx.getCurrentThreadCpuTime();
            WeakReference<Loader> ref = round(r, per, sum);
            cpu += mx.getCurrentThreadCpuTime() - c0;
            for (int i = 0; i < 50 && ref.get() != null; i++) {
                System.gc();
                Thread.sleep(5);
            }
            unloaded += ref.get() == null ? 1 : 0;
        }
        System.out.println("churn: rounds=" + rounds + " classes=" + rounds * per + " unloaded=" + unloaded + " sum=" + sum[0]
                + " roundsCpuNs=" + cpu);
    }
}
