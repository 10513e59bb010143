import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

// PerfMapper maps the file args[0] (another JVM's hsperfdata, as a
// monitoring tool such as VisualVM or jconsole does), says "ready" once
// it is mapped, then sleeps until it is killed.
public class PerfMapper {
    static MappedByteBuffer held;

    public static void main(String[] args) throws Exception {
        try (RandomAccessFile f = new RandomAccessFile(args[0], "r")) {
            held = f.getChannel().map(FileChannel.MapMode.READ_ONLY, 0, f.length());
        }
        System.out.println("ready");
        System.out.flush();
        while (true) {
            Thread.sleep(60_000);
        }
    }
}
