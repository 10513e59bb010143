package libjprof.bci;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Map;

/** Test harness (never in jprof-bci.jar): reads the lines of
 *  roots-table.txt on stdin and prints, for each, the root, the class,
 *  the method and whether Selective (the BCI transformer's matcher)
 *  says the root matches, as yes or no. */
public class RootsTable {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#"))
                continue;
            String[] f = line.split("\\s+");
            boolean m = new Selective(f[0], Map.of()).isRoot(f[1].replace('.', '/'), f[2]);
            System.out.println(f[0] + " " + f[1] + " " + f[2] + " " + (m ? "yes" : "no"));
        }
    }
}
