import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

// AllocPhases: the allocation profile's cost measured inside one JVM, for
// the benchmark. It allocates with AllocSites' sites, in phases of args[0]
// MiB, and between phases turns the agent's collection on or off through
// the agent's own control socket (rtdriver's protocol: "start", and
// "detach", which for ALLOC turns the sampler off),
// so that phases with ALLOC collecting and phases without compare in the
// same JVM, JIT and heap. After args[2] warm-up pairs (not printed: the
// first start and stop of collection do one-time work) come args[1]
// pairs, in the order off-on, on-off, off-on, ... to cancel drift. Each
// phase prints "phase on|off ms=T" (the allocations alone, not the
// command). -Don=status -Doff=status sends commands that change nothing: the
// harness's own bias, which should be none.
public class AllocPhases {
    static double phase(long bytes) {
        long t0 = System.nanoTime();
        for (long done = 0; done < bytes; done += 40960)
            AllocSites.round();
        return (System.nanoTime() - t0) / 1e6;
    }

    public static void main(String[] args) throws Exception {
        long bytes = Long.parseLong(args[0]) << 20;
        int pairs = Integer.parseInt(args[1]), warm = Integer.parseInt(args[2]);
        String uid = null;
        for (String l : Files.readAllLines(Path.of("/proc/self/status")))
            if (l.startsWith("Uid:"))
                uid = l.split("\\s+")[1];
        Path sock = Path.of("/tmp/.libjprof-" + uid, ProcessHandle.current().pid() + ".sock");
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(sock));
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
            for (int p = -warm; p < pairs; p++) {
                boolean[] order = (p & 1) == 0 ? new boolean[] {false, true} : new boolean[] {true, false};
                for (boolean on : order) {
                    ch.write(ByteBuffer.wrap((on ? System.getProperty("on", "start") + "\n" : System.getProperty("off", "detach") + "\n").getBytes(StandardCharsets.UTF_8)));
                    String reply = in.readLine();
                    if (reply == null || !reply.startsWith("OK"))
                        throw new IllegalStateException("the agent refused: " + reply);
                    double ms = phase(bytes);
                    if (p >= 0)
                        System.out.println("phase " + (on ? "on" : "off") + " ms=" + ms);
                }
            }
        }
    }
}
