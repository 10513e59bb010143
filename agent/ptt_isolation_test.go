package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// PTTCheck's workload: the spinner spins for spinMs of its own CPU time,
// the sleeper sleeps naps times napMs.
const (
	spinMs = 300
	naps   = 20
	napMs  = 50
)

var pttCheckArgs = []string{strconv.Itoa(spinMs), strconv.Itoa(naps), strconv.Itoa(napMs)}

// subtree sums a node's raw PTT time (BASE + DELTA, i.e. before
// calibration) and dispatches over its whole subtree.
func subtree(n *reports.Node) (ns, ds uint64) {
	n.Walk(func(c *reports.Node, _ int) {
		ns += c.Base[0] + c.Delta[0]
		ds += c.DS
	})
	return ns, ds
}

// findNode is the first node of the thread's tree whose name starts
// with prefix.
func findNode(t *testing.T, p *reports.Profile, thread, prefix string) *reports.Node {
	t.Helper()
	root := p.Thread(thread)
	require.NotNil(t, root, "thread %s", thread)
	var found *reports.Node
	root.Walk(func(n *reports.Node, _ int) {
		if found == nil && strings.HasPrefix(n.Name, prefix) {
			found = n
		}
	})
	require.NotNil(t, found, "%s in thread %s", prefix, thread)
	return found
}

// checkPTTCheck compares each PTTCheck thread's reported thread time
// with its own CPU clock as the JVM read it: the spinner's spin() close
// to the CPU time it spun, the sleeper's naps near zero and dispatched
// once per sleep. Thread time that silently became wall time, or slots
// shared with another JVM's threads, fail both.
func checkPTTCheck(t *testing.T, r *jvmtest.Result, logRT string) {
	t.Helper()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	cpu := map[string]float64{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		if name, v, ok := strings.Cut(l, " cpu="); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, l)
			cpu[name] = f
		}
	}
	require.Contains(t, cpu, "spinner", r.Stdout)
	require.Contains(t, cpu, "sleeper", r.Stdout)
	p := jvmtest.ParseLogRT(t, logRT)
	notes := strings.Join(p.Notes, "\n")
	require.Contains(t, notes, "PTT backend bpf:")

	spin, _ := subtree(findNode(t, p, "spinner", "i:PTTCheck.spin("))
	nap, ds := subtree(findNode(t, p, "sleeper", "i:PTTCheck.nap("))
	t.Logf("pid %d: spin() %.1f ms reported, spinner CPU clock %.1f ms; nap() %.2f ms reported with %d dispatches over %d ms of sleep, sleeper CPU clock %.2f ms",
		r.PID, float64(spin)/1e6, cpu["spinner"]/1e6, float64(nap)/1e6, ds, naps*napMs, cpu["sleeper"]/1e6)
	assert.InEpsilon(t, cpu["spinner"], float64(spin), 0.2, "spinner: reported vs its own CPU clock")
	assert.Less(t, float64(nap), 0.25*naps*napMs*1e6, "sleeper: sleep charged as thread time")
	assert.GreaterOrEqual(t, ds, uint64(naps), "sleeper: one dispatch per sleep")
}

// Inside a PID namespace (as in every container) the agent's thread ids
// are not the ones the eBPF programs see; the bpf backend must still
// count thread time, not wall time.
func TestPTTInPIDNamespace(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and unshare to make a PID namespace")
	}
	r := jvmtest.Start(t, jvmtest.Run{Class: "PTTCheck", Args: pttCheckArgs,
		Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTT=bpf",
		Prefix:  []string{unshare, "--pid", "--fork", "--mount-proc"}})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	// The JVM's pid inside the namespace names the files.
	files, err := filepath.Glob(filepath.Join(r.Dir, "log-rt.1_*"))
	require.NoError(t, err)
	require.Len(t, files, 1, "stderr:\n%s", r.Stderr)
	checkPTTCheck(t, r, files[0])
	p := jvmtest.ParseLogRT(t, files[0])
	assert.Contains(t, strings.Join(p.Notes, "\n"), "runs in a PID namespace")
}

// startPttd runs a real jprof pttd on a fresh socket; its output lines
// after the first come on the returned channel. args are more pttd flags.
func startPttd(t *testing.T, args ...string) (sock string, lines <-chan string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("jprof pttd needs CAP_BPF and CAP_PERFMON")
	}
	jvmtest.Build(t)
	sock = filepath.Join(t.TempDir(), "pttd.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	helper := exec.CommandContext(ctx, jvmtest.Tool("jprof"), append([]string{"pttd", "-socket", sock}, args...)...)
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	helper.Stderr = os.Stderr
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Signal(os.Interrupt); _ = helper.Wait(); cancel() })
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan(), "pttd said nothing")
	require.Contains(t, sc.Text(), "serving "+sock)
	ch := make(chan string, 64)
	go func() {
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}()
	return sock, ch
}

// Several JVMs on one jprof pttd share its work area: each thread must
// still be counted in a slot of its own, and each JVM's slots come back
// to the helper when it exits.
func TestPTTSeveralJVMsOnOnePttd(t *testing.T) {
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d JVMs", n), func(t *testing.T) {
			sock, lines := startPttd(t)
			procs := make([]*jvmtest.Proc, n)
			for i := range procs {
				args := pttCheckArgs
				if i%2 == 1 { // each JVM's spinner beside another's sleeper
					args = append(args[:len(args):len(args)], "sleeper-first")
				}
				procs[i] = jvmtest.Launch(t, jvmtest.Run{Class: "PTTCheck", Args: args,
					Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTTD=" + sock})
			}
			results := make([]*jvmtest.Result, n)
			var wg sync.WaitGroup
			for i, p := range procs {
				wg.Add(1)
				go func() { defer wg.Done(); results[i] = p.Wait() }()
			}
			wg.Wait()
			for _, r := range results {
				checkPTTCheck(t, r, r.File("rt.1"))
				p := jvmtest.ParseLogRT(t, r.File("rt.1"))
				assert.Contains(t, strings.Join(p.Notes, "\n"), "from jprof pttd at "+sock)
			}
			// Each JVM's connection closed at its exit; the helper freed
			// the slots its threads still held (JVM threads alive at exit
			// never end).
			for i := 0; i < n; i++ {
				select {
				case l, ok := <-lines:
					require.True(t, ok, "pttd ended")
					assert.Contains(t, l, "left;")
					t.Log(l)
				case <-time.After(time.Minute):
					t.Fatalf("pttd did not see client %d of %d leave", i+1, n)
				}
			}
		})
	}
}
