import java.util.logging.Level;
import java.util.logging.Logger;

/** Calls into a JDK module other than java.base (java.logging), whose
 *  classes the BCI source instruments: their probes live in the boot
 *  loader's unnamed module, which a named module must be made to read.
 *  Argument: how many loggers to make. */
public class ModuleCalls {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        int found = 0;
        for (int i = 0; i < n; i++) {
            Logger l = Logger.getLogger("libjprof.modulecalls." + i);
            l.setLevel(Level.OFF);
            l.info("not shown");
            found += l.getName().isEmpty() ? 0 : 1;
        }
        System.out.println("loggers=" + found);
    }
}
