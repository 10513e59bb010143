package libjprof.bci;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.commons.AdviceAdapter;

/**
 * Park is how the lock source (LOCK) sees java.util.concurrent's locks,
 * which block their threads in LockSupport.park and of which JVMTI
 * reports nothing. The agent (jvmti/lock.c) has LockSupport rewritten by
 * rewrite() so that each public park method reads System.nanoTime when
 * it is entered and, when it returns, calls parked() with the blocker
 * (for a ReentrantLock, its Sync) and that time. parked() is a native
 * registered by the agent, which records the wait with the thread's
 * stack when it reaches the threshold.
 *
 * LockSupport is in java.base; this class is on the boot class path in
 * the unnamed module, which the agent has java.base read (JVMTI
 * AddModuleReads) before the rewritten class runs.
 */
public final class Park {
    private Park() {}

    static final String CLASS = "java/util/concurrent/locks/LockSupport";

    /** A park method returned; t0 is System.nanoTime at its entry. */
    public static native void parked(Object blocker, long t0);

    /** rewrite returns LockSupport's class file with the calls to
     *  parked() added, or null if it has no park method to rewrite. */
    static byte[] rewrite(byte[] in) {
        ClassReader r = new ClassReader(Transformer.asmReadable(in));
        // Frames are recomputed only where the new local is; COMPUTE_MAXS
        // with the expanded frames AdviceAdapter keeps needs no class loading.
        ClassWriter w = new ClassWriter(r, ClassWriter.COMPUTE_MAXS);
        int[] rewritten = { 0 };
        r.accept(new ClassVisitor(Opcodes.ASM9, w) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String sig, String[] exc) {
                MethodVisitor mv = super.visitMethod(access, name, desc, sig, exc);
                boolean park = (access & Opcodes.ACC_STATIC) != 0 && (access & Opcodes.ACC_PUBLIC) != 0
                        && (name.equals("park") || name.equals("parkNanos") || name.equals("parkUntil"))
                        && desc.endsWith(")V");
                if (!park)
                    return mv;
                rewritten[0]++;
                boolean blocker = desc.startsWith("(Ljava/lang/Object;");
                return new AdviceAdapter(Opcodes.ASM9, mv, access, name, desc) {
                    int t0;

                    @Override
                    protected void onMethodEnter() {
                        t0 = newLocal(Type.LONG_TYPE);
                        mv.visitMethodInsn(INVOKESTATIC, "java/lang/System", "nanoTime", "()J", false);
                        mv.visitVarInsn(LSTORE, t0);
                    }

                    @Override
                    protected void onMethodExit(int opcode) {
                        if (opcode == ATHROW)
                            return; // an error in park: no wait to record
                        if (blocker)
                            mv.visitVarInsn(ALOAD, 0);
                        else
                            mv.visitInsn(ACONST_NULL);
                        mv.visitVarInsn(LLOAD, t0);
                        mv.visitMethodInsn(INVOKESTATIC, "libjprof/bci/Park", "parked", "(Ljava/lang/Object;J)V", false);
                    }
                };
            }
        }, ClassReader.EXPAND_FRAMES);
        return rewritten[0] > 0 ? Transformer.ownVersion(w.toByteArray(), Transformer.major(in)) : null;
    }
}
