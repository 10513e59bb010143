import java.io.ByteArrayOutputStream;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/** A multi-threaded real program: THREADS threads each run javac (the
 *  JDK's own, through javax.tools) on the same source files into a
 *  directory of their own, concurrently. Deep stacks, the JIT busy,
 *  several threads on the CPUs at once: what the sampling overhead
 *  benchmark needs beside single-threaded javac.
 *  Args: threads outdir files... ; prints "parjavac: N ok". */
public class ParJavac {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        String out = args[1];
        List<String> files = new ArrayList<>();
        for (int i = 2; i < args.length; i++)
            files.add(args[i]);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int[] rc = new int[threads];
        ByteArrayOutputStream[] msgs = new ByteArrayOutputStream[threads];
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int n = t;
            List<String> a = new ArrayList<>();
            a.add("-d");
            a.add(out + File.separator + "t" + n);
            a.addAll(files);
            msgs[n] = new ByteArrayOutputStream();
            ts[n] = new Thread(() -> rc[n] = javac.run(null, msgs[n], msgs[n], a.toArray(new String[0])), "javac-" + n);
            ts[n].start();
        }
        int ok = 0;
        for (int t = 0; t < threads; t++) {
            ts[t].join();
            if (rc[t] == 0)
                ok++;
            else
                System.err.print(msgs[t]);
        }
        System.out.println("parjavac: " + ok + " ok");
        if (ok != threads)
            System.exit(1);
    }
}
