package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// TestJLM: with BCI and JLM, every monitor JLMSites takes is counted
// exactly, per site and class: plain, recursive, synchronized methods
// (instance and static), left by exceptions; the contended one's hold
// time matches what the
// program measured inside it, within 10%, and Object.wait's time goes to
// OBJWAIT, not to the hold. jprof report jlm prints it.
func TestJLM(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "JLMSites", Options: "JLM,START", Java: jdk.Java,
				JVMArgs: []string{"-XX:+PrintCompilation"}})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			// The methods with monitors keep their JIT: C1 and C2 take
			// their probes' shape (no "stays interpreted" note, no
			// compilation of theirs skipped), and they are compiled.
			assert.NotContains(t, r.ReadFile(t, "msg"), "JLM:")
			assert.NotRegexp(t, `JLMSites::.*COMPILE SKIPPED`, r.Stdout)
			assert.Regexp(t, `JLMSites::(block|nested|inc|stat|tryFinally) \(`, r.Stdout)
			// The JIT's lines may cut into the program's.
			m := regexp.MustCompile(`held_ns=([0-9]+) objwait_ns=([0-9]+)`).FindStringSubmatch(r.Stdout)
			require.NotNil(t, m, r.Stdout)
			var held, objwait float64
			_, err := fmt.Sscanf(m[1]+" "+m[2], "%g %g", &held, &objwait)
			require.NoError(t, err, r.Stdout)
			f, err := os.Open(r.File("jlm.1"))
			require.NoError(t, err)
			defer f.Close()
			j, err := reports.ReadJLM(f)
			require.NoError(t, err)
			rows := map[string]reports.JLMRow{}
			for _, row := range j.Rows {
				if strings.HasPrefix(row.Site, "JLMSites.") {
					rows[row.Site[:strings.IndexByte(row.Site, ' ')]+" "+row.Class+" "+row.Site[strings.IndexByte(row.Site, '(')+1:strings.IndexAny(row.Site, ",)")]] = row
				}
			}
			want := []struct {
				key       string
				gets, rec uint64
			}{
				{"JLMSites.block java.lang.Object block 1", 1000, 0},
				{"JLMSites.nested java.lang.Object block 1", 500, 0},
				{"JLMSites.nested java.lang.Object block 2", 500, 500},
				{"JLMSites.inc JLMSites synchronized method", 2000, 0},
				{"JLMSites.stat java.lang.Class synchronized method", 300, 0},
				{"JLMSites.throwing java.lang.Object block 1", 100, 0},
				{"JLMSites.syncThrowing java.lang.Class synchronized method", 100, 0},
				{"JLMSites.tryFinally java.lang.Object block 1", 100, 0},
				{"JLMSites.held java.lang.Object block 1", 40, 0},
				{"JLMSites.waitOn java.lang.Object block 1", 10, 0},
			}
			for _, w := range want {
				got, ok := rows[w.key]
				if assert.True(t, ok, "no row %q in %v", w.key, rows) {
					assert.Equal(t, w.gets, got.Gets, w.key)
					assert.Equal(t, w.rec, got.Recursive, w.key)
				}
			}
			h := rows["JLMSites.held java.lang.Object block 1"]
			assert.InEpsilon(t, held, float64(h.Hold), 0.10, "held: the program measured %v, JLM %v", time.Duration(held), h.Hold)
			assert.GreaterOrEqual(t, h.Slow, uint64(1), "two threads keep C 5 ms at a time: some takes block")
			assert.Positive(t, h.Wait)
			w := rows["JLMSites.waitOn java.lang.Object block 1"]
			assert.Equal(t, uint64(10), w.ObjectWaits)
			assert.InEpsilon(t, objwait, float64(w.ObjectWait), 0.10, "Object.wait: the program measured %v, JLM %v", time.Duration(objwait), w.ObjectWait)
			assert.Less(t, w.Hold, w.ObjectWait/10, "the hold leaves Object.wait out")
			out, err := exec.Command(jvmtest.Tool("jprof"), "report", "jlm", "-sort", "hold", r.File("jlm.1")).CombinedOutput()
			require.NoError(t, err, "%s", out)
			lines := strings.Split(string(out), "\n")
			var first string
			for i, l := range lines {
				if strings.Contains(l, "%MISS") && i+1 < len(lines) {
					first = lines[i+1]
					break
				}
			}
			assert.Contains(t, first, "JLMSites.held (block 1", "sorted by hold time, held() first:\n%s", out)
			assert.Regexp(t, `(?m)^ +[0-9.]+ +4650 +4150 +[0-9]+ +500 .*Total$`, string(out))
		})
	}
}

// A site's first four classes of monitor objects have a row each, as the
// README says; the rest share "(other)" (C5 and C6: 500 + 600 takes).
// The fourth class shared it before.
func TestJLMClassesPerSite(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "JLMClasses", Options: "JLM,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.Contains(t, r.Stdout, "jlmclasses: 2100")
	f, err := os.Open(r.File("jlm.1"))
	require.NoError(t, err)
	defer f.Close()
	j, err := reports.ReadJLM(f)
	require.NoError(t, err)
	gets := map[string]uint64{}
	for _, row := range j.Rows {
		if strings.HasPrefix(row.Site, "JLMClasses.take ") {
			gets[row.Class] += row.Gets
		}
	}
	assert.Equal(t, map[string]uint64{"JLMClasses$C1": 100, "JLMClasses$C2": 200, "JLMClasses$C3": 300, "JLMClasses$C4": 400, "(other)": 1100}, gets)
}
