package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

func checkHellop(t *testing.T, p *reports.Profile) {
	t.Helper()
	checkBalanced(t, p)
	myA := mainThread(t, p).Path("i:hellop.main([Ljava/lang/String;)V", "I:hellop.myA()V")
	require.NotNil(t, myA)
	assert.Equal(t, uint64(1000), myA.Calls)
	myC := myA.Path("I:hellop.myC()J")
	require.NotNil(t, myC)
	assert.Equal(t, uint64(1000), myC.Calls)
	assert.Positive(t, myC.Base[0])
}

// Every PTT backend, forced, gives the right hellop tree and says in the
// header which backend it is.
func TestHellopWithEveryBackend(t *testing.T) {
	for _, b := range []string{"bpf", "perf", "clock"} {
		t.Run(b, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTT=" + b})
			if r.ExitCode != 0 && b == "bpf" && strings.Contains(r.Stderr, "operation not permitted") {
				t.Skipf("no CAP_BPF here: %s", r.Stderr)
			}
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			p := r.LogRT(t, 1)
			checkHellop(t, p)
			assert.Contains(t, strings.Join(p.Notes, "\n"), "PTT backend "+b+":")
		})
	}
}

// A JVM without CAP_BPF falls back (and says why); given a jprof pttd it
// gets the eBPF work area from it and counts with bpf after all.
func TestPTTWithoutCapabilities(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv to run a JVM without CAP_BPF")
	}
	drop := []string{setpriv, "--bounding-set=-bpf,-perfmon,-sys_admin", "--inh-caps=-all", "--"}

	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER", Prefix: drop})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	checkHellop(t, p)
	notes := strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, "PTT backend bpf unavailable")
	assert.NotContains(t, notes, "PTT backend bpf:")

	sock := filepath.Join(t.TempDir(), "pttd.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jvmtest.Build(t)
	helper := exec.CommandContext(ctx, jvmtest.Tool("jprof"), "pttd", "-socket", sock)
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	defer func() { _ = helper.Process.Signal(os.Interrupt); _ = helper.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "serving "+sock)

	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTTD=" + sock, Prefix: drop})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p = r.LogRT(t, 1)
	checkHellop(t, p)
	notes = strings.Join(p.Notes, "\n")
	assert.Contains(t, notes, "PTT backend bpf:")
	assert.Contains(t, notes, "from jprof pttd at "+sock)

	// The default metrics (instructions, which no PMU counts here, then
	// thread time): the pttd serves the second, and nothing says it was
	// not usable for the first, which no bpf backend counts.
	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "START,NORTDRIVER,PTTD=" + sock, Prefix: drop})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.NotContains(t, r.Stderr, "not usable")
	p = r.LogRT(t, 1)
	checkHellop(t, asInterpreted(p))
	assert.Contains(t, strings.Join(p.Notes, "\n"), "from jprof pttd at "+sock)

	// A PTTD that is not there: said, and the JVM runs on another backend.
	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTTD=" + sock + ".missing", Prefix: drop})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, "not usable")
	checkHellop(t, r.LogRT(t, 1))
}

// The default run (BCI, the backend left to the agent, thread time: the
// default metric where no PMU counts instructions) sets the PTT up while
// the JVM initialises and waits for it at VM init, before the first
// event: hellop's tree has its counts and times, the header the PTT's
// notes where a set-up at load puts them (before BCI's, the
// calibration's after them), and the state line the backend. A backend
// asked for is set up at load, where one that cannot be had stops the JVM.
func TestPTTSetUpWhileJVMInitialises(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METRICS=PTT_TIME,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.ReadFile(t, "msg"), "PTT set up while the JVM initialised")
	assert.Regexp(t, `ptt=(bpf|perf|clock) source=bci `, r.Stderr)
	p := r.LogRT(t, 1)
	checkHellop(t, asInterpreted(p))
	at := func(prefix string) int {
		for i, n := range p.Notes {
			if strings.HasPrefix(n, prefix) {
				return i
			}
		}
		t.Errorf("no header note starts with %q", prefix)
		return -1
	}
	backend, bci, cal := at("PTT backend "), at("BCI: instrumented"), at("Calibration run ")
	assert.Less(t, backend, bci, "the PTT's notes first")
	assert.Less(t, bci, cal, "the calibration's after the source's")

	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "METRICS=PTT_TIME,START,NORTDRIVER,PTT=clock"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.NotContains(t, r.ReadFile(t, "msg"), "PTT set up while the JVM initialised")
	p = r.LogRT(t, 1)
	checkHellop(t, asInterpreted(p))
	assert.Contains(t, strings.Join(p.Notes, "\n"), "PTT backend clock:")
}

// A JVM without CAP_BPF and CAP_PERFMON (here: run as nobody) cannot load
// the eBPF PTT: stderr, log-msg and the log-rt header name the missing
// capabilities and what to do, and the run goes on with the next backend.
func TestBPFWithoutCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the JVM as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv to run the JVM as another user")
	}
	jvmtest.Build(t)
	// Not t.TempDir(): its parent is root's alone.
	dir, err := os.MkdirTemp("", "jprof-nocaps-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", jvmtest.Java(),
		"-agentpath:"+jvmtest.Agent()+"=METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,LOGPATH="+dir,
		"-cp", filepath.Join(jvmtest.Root(), "build", "java"), "hellop")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "hellop: value=")
	assert.Regexp(t, `libjprof: warning: PTT backend bpf unavailable: .*lacks CAP_BPF and CAP_PERFMON`, string(out))
	assert.NotContains(t, string(out), "MEMLOCK")
	assert.Regexp(t, `ptt=(perf|clock) `, string(out), "the state line")
	rt, _ := filepath.Glob(filepath.Join(dir, "log-rt.1_*"))
	require.Len(t, rt, 1)
	p := jvmtest.ParseLogRT(t, rt[0])
	assert.Contains(t, strings.Join(p.Notes, "\n"), "lacks CAP_BPF and CAP_PERFMON")
	checkHellop(t, p)

	// The default run finds that out while the JVM initialises, and
	// says the same.
	first, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range first {
		os.Remove(f)
	}
	cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", jvmtest.Java(),
		"-agentpath:"+jvmtest.Agent()+"=METRICS=PTT_TIME,START,NORTDRIVER,LOGPATH="+dir,
		"-cp", filepath.Join(jvmtest.Root(), "build", "java"), "hellop")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	msgs, _ := filepath.Glob(filepath.Join(dir, "log-msg_*"))
	require.Len(t, msgs, 1)
	msg, err := os.ReadFile(msgs[0])
	require.NoError(t, err)
	assert.Contains(t, string(msg), "PTT set up while the JVM initialised")
	assert.Regexp(t, `libjprof: warning: PTT backend bpf unavailable: .*lacks CAP_BPF and CAP_PERFMON`, string(out))
	assert.Regexp(t, `ptt=(perf|clock) source=bci `, string(out), "the state line")
	rt, _ = filepath.Glob(filepath.Join(dir, "log-rt.1_*"))
	require.Len(t, rt, 1)
	p = jvmtest.ParseLogRT(t, rt[0])
	assert.Contains(t, strings.Join(p.Notes, "\n"), "lacks CAP_BPF and CAP_PERFMON")
	checkHellop(t, asInterpreted(p))
}

// One PTT read per event by default, two with LATEREAD: each run takes
// the built-in table trained for its own kind (the header names it), and
// all count the same tree.
func TestLateRead(t *testing.T) {
	for _, c := range []struct {
		opts  string
		reads bool // the table's ID carries reads=1
	}{
		{"METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER", true},
		{"METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,LATEREAD", false},
		{"METRICS=PTT_TIME,START,NORTDRIVER", true}, // BCI
		{"METRICS=PTT_TIME,START,NORTDRIVER,LATEREAD", false},
	} {
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: c.opts})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		p := r.LogRT(t, 1)
		notes := strings.Join(p.Notes, "\n")
		if !strings.Contains(notes, "Calibration table PTT_TIME: built-in") {
			t.Logf("%s: no built-in table for this JVM and backend: %s", c.opts, notes)
			continue
		}
		assert.Equal(t, c.reads, strings.Contains(notes, " reads=1"), "%s: %s", c.opts, notes)
		assert.EqualValues(t, 1000, methodCalls(asInterpreted(p))["hellop.myC()J"], c.opts)
	}
}
