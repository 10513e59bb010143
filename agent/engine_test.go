package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// Tests of the engine seen from outside: thread records, the method
// registry, collection from the first Java method, the binary log-gen.

// methodCalls sums a profile's calls per method name (type letter
// dropped), over every thread and context.
func methodCalls(p *reports.Profile) map[string]uint64 {
	out := map[string]uint64{}
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, d int) {
			if d > 0 {
				out[n.Name[2:]] += n.Calls
			}
		})
	}
	return out
}

// START collects from the first Java method the VM runs, the VM's own
// set-up before VM init included. An independent agent that enables
// method events in Agent_OnLoad sees no call that libjprof misses: the
// program's own methods have exactly its counts, JDK methods at least
// them (that agent does not see all of System.initPhase3 on this JVM;
// libjprof does, e.g. both of its VM.initLevel calls).
func TestStartFromFirstJavaMethod(t *testing.T) {
	for _, class := range []string{"hellop", "Exceptions", "StaticInstance"} {
		t.Run(class, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: class, Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			own := methodCalls(r.LogRT(t, 1))
			out := filepath.Join(t.TempDir(), "counts")
			c := jvmtest.Start(t, jvmtest.Run{Class: class, Options: "-", JVMArgs: []string{"-agentpath:" + jvmtest.CountAgent(t) + "=" + out}})
			require.Equal(t, 0, c.ExitCode, c.Stderr)
			ref := jvmtest.Counts(t, out)
			assert.Contains(t, own, "java/lang/System.initPhase3()V", "the VM's set-up before VM init is collected")
			assert.GreaterOrEqual(t, own["jdk/internal/misc/VM.initLevel(I)V"], uint64(2), "initPhase3's two initLevel calls")
			app := 0
			for name, n := range ref {
				if strings.Contains(name, "$MH.0x") || strings.Contains(name, "$$Lambda$") {
					continue // hidden classes: named by address, different in every run
				}
				if strings.HasPrefix(name, "java/") || strings.HasPrefix(name, "jdk/") || strings.HasPrefix(name, "sun/") {
					assert.GreaterOrEqual(t, own[name], n, "calls of %s", name)
					continue
				}
				app++
				assert.Equal(t, n, own[name], "calls of %s", name)
			}
			assert.NotZero(t, app, "the program's own methods were compared")
		})
	}
}

// Threads that never run a collected method get no record at all.
func TestThreadChurnNotCollecting(t *testing.T) {
	const n = 2000
	port := freePort(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "ThreadChurn", Args: []string{strconv.Itoa(n), "4", "pause"},
		Options: fmt.Sprintf("METHODEVENTS,CALLTREE,PORT=%d", port)})
	p.Expect(fmt.Sprintf("ThreadChurn: %d threads", n))
	assert.Regexp(t, `threads=0 `, rt(t, tcpCtl(port), "status")[0].String(), "not collecting: no per-thread records")
	p.Send("")
	p.Expect("ThreadChurn: done")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
}

// A second run with START: each of the n threads has its exact tree in
// log-rt, and log-msg sums ended threads past the first few in one line.
// With THREADINFO and GENERIC, the threads freed at the reset leave their
// log-jtnm lines in a spill file, not in memory, and log-jtnm lists them
// all; the log-gen writer forgets their names.
func TestThreadChurnCollected(t *testing.T) {
	const n = 2000
	port := freePort(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "ThreadChurn", Args: []string{strconv.Itoa(n), "4", "pause"},
		Options: fmt.Sprintf("METHODEVENTS,CALLTREE,START,THREADINFO,GENERIC,PORT=%d", port)})
	p.Expect(fmt.Sprintf("ThreadChurn: %d threads", n))
	replies := rt(t, tcpCtl(port), "end")
	requireOK(t, replies)
	path := strings.TrimSpace(strings.TrimPrefix(replies[0].String(), "OK end:"))
	prof := jvmtest.ParseLogRT(t, path)
	churn := jvmtest.Threads(prof, "")
	got := 0
	for _, th := range churn {
		if !strings.Contains(th.Name, "_churn-") {
			continue
		}
		got++
		var work, leaf uint64
		th.Walk(func(n *reports.Node, d int) {
			switch n.Name {
			case "i:ThreadChurn.work(I)V":
				work += n.Calls
			case "i:ThreadChurn.leaf(I)J":
				leaf += n.Calls
			}
		})
		require.Equal(t, uint64(1), work, th.Name)
		require.Equal(t, uint64(3), leaf, th.Name)
	}
	assert.Equal(t, n, got, "every churn thread has its tree")
	st := rt(t, tcpCtl(port), "status")[0].String()
	m := regexp.MustCompile(`threads=(\d+) `).FindStringSubmatch(st)
	require.NotNil(t, m, st)
	left, _ := strconv.Atoi(m[1])
	assert.Less(t, left, 20, "ended threads freed at the reset: %s", st)
	spill, _ := filepath.Glob(filepath.Join(p.Dir(), ".log-jtnm_*.part"))
	assert.Len(t, spill, 1, "freed threads' log-jtnm lines are in a spill file")
	p.Send("")
	p.Expect("ThreadChurn: done")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	spill, _ = filepath.Glob(filepath.Join(p.Dir(), ".log-jtnm_*.part"))
	assert.Empty(t, spill, "the spill file is removed once log-jtnm is written")
	jtnm := r.ReadFile(t, "jtnm")
	assert.Equal(t, n, strings.Count(jtnm, "_churn-"), "every churn thread is in log-jtnm")
	msg := r.ReadFile(t, "msg")
	assert.Regexp(t, `counts reset.*"endedThreadsFreed": (\d{4})`, msg)
	assert.Regexp(t, `"thread": "other ended threads".*"threads": \d{4}`, msg)
}

// Past MAXMETHODS, methods are named "<method-limit-reached>" with their
// true type letter, and the header says how many lookups were refused;
// under the limit every method is named.
func TestMethodRegistryLimit(t *testing.T) {
	const loaders = 30 // 100 methods each, plus callAll and the constructor
	r := jvmtest.Start(t, jvmtest.Run{Class: "MethodChurn", Args: []string{strconv.Itoa(loaders)},
		Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER,MAXMETHODS=1500"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p := r.LogRT(t, 1)
	assert.True(t, hasNote(p, "method registry full at 1500 methods"), "%v", p.Notes)
	calls := methodCalls(p)
	assert.NotZero(t, calls["<method-limit-reached>"])
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, d int) {
			if strings.HasSuffix(n.Name, "<method-limit-reached>") {
				assert.Regexp(t, `^[iInN]:`, n.Name, "the type letter stays true")
			}
		})
	}

	r = jvmtest.Start(t, jvmtest.Run{Class: "MethodChurn", Args: []string{strconv.Itoa(loaders)},
		Options: "METHODEVENTS,CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	p = r.LogRT(t, 1)
	assert.False(t, hasNote(p, "method registry full"))
	calls = methodCalls(p)
	for i := 0; i < 100; i++ {
		assert.Equal(t, uint64(loaders), calls[fmt.Sprintf("ManyMethods.m%d(I)I", i)], "m%d", i)
	}
	assert.Zero(t, calls["<method-limit-reached>"])
}

func hasNote(p *reports.Profile, s string) bool {
	for _, n := range p.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// The binary log-gen is a tenth of the text one and reads back to the
// same events; jprof loggen turns it into the text one.
func TestBinaryLogGen(t *testing.T) {
	bin := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,CALLTREE,GENERIC,START,NORTDRIVER"})
	require.Equal(t, 0, bin.ExitCode, bin.Stderr)
	text := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,CALLTREE,GENERIC,GENFORMAT=text,START,NORTDRIVER"})
	require.Equal(t, 0, text.ExitCode, text.Stderr)
	bi, err := os.Stat(bin.File("gen"))
	require.NoError(t, err)
	ti, err := os.Stat(text.File("gen"))
	require.NoError(t, err)
	assert.Less(t, bi.Size()*4, ti.Size(), "binary %d bytes, text %d", bi.Size(), ti.Size())

	conv := filepath.Join(bin.Dir, "gen.txt")
	out, err := exec.Command(jvmtest.Tool("jprof"), "loggen", bin.File("gen"), "-o", conv).CombinedOutput()
	require.NoError(t, err, string(out))
	got, err := os.ReadFile(conv)
	require.NoError(t, err)
	want := text.ReadFile(t, "gen")
	// Same program, same events: only the pid and thread ids differ.
	norm := func(s string) string {
		s = regexp.MustCompile(`Process_Number_ID=\d+`).ReplaceAllString(s, "")
		return regexp.MustCompile(`(?m) [0-9a-f]{8}_`).ReplaceAllString(s, " T_")
	}
	assert.Equal(t, strings.Count(norm(want), "\n"), strings.Count(norm(string(got)), "\n"))
	assert.Equal(t, strings.Count(want, "<! i:Exceptions.level3(I)V"), strings.Count(string(got), "<! i:Exceptions.level3(I)V"))
}

// GENMAX stops the file at its size, in both formats (the text one was
// checked against the size of the binary records, a tenth of its lines',
// and overshot seven times), and says how many events it left out: the
// file's last line (it had none, and the text file ended with an event),
// stderr and log-msg, and jprof warns of the partial tree.
func TestLogGenSizeLimit(t *testing.T) {
	for _, format := range []string{"binary", "text"} {
		t.Run(format, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,CALLTREE,GENERIC,GENFORMAT=" + format + ",GENMAX=16k,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			b, err := os.ReadFile(r.File("gen"))
			require.NoError(t, err)
			assert.LessOrEqual(t, len(b), 16<<10, "never past the limit")
			assert.Greater(t, len(b), 15<<10, "filled up to it")

			// The warning's counts are the file's.
			said := regexp.MustCompile(`(?m)^libjprof: warning: log-gen_\d+ reached its size limit \(GENMAX, 16384 bytes\): (\d+) of (\d+) events not written; the file ends with a line that says so$`)
			m := said.FindAllStringSubmatch(r.Stderr, -1)
			require.Len(t, m, 1, r.Stderr)
			notWritten, _ := strconv.ParseUint(m[0][1], 10, 64)
			total, _ := strconv.ParseUint(m[0][2], 10, 64)
			assert.Contains(t, r.ReadFile(t, "msg"), strings.TrimPrefix(m[0][0], "libjprof: warning: "))
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			last := lines[len(lines)-1]
			assert.Equal(t, fmt.Sprintf(" *** libjprof: size limit (GENMAX) of 16384 bytes reached; %d events not written", notWritten), last, "tail -1")

			f, err := os.Open(r.File("gen"))
			require.NoError(t, err)
			defer f.Close()
			lr, err := reports.NewLogGenReader(f)
			require.NoError(t, err)
			var events uint64
			for lr.Next() {
				events++
			}
			require.NoError(t, lr.Err())
			assert.NotZero(t, events)
			assert.Equal(t, notWritten, lr.NotWritten())
			assert.Equal(t, total, events+notWritten)
			assert.Equal(t, strings.TrimPrefix(last, " *** "), lr.SizeLimited())

			out, stderr := jprofRun(t, "report", "xtree", r.File("gen"))
			assert.Contains(t, out, "holds only its first events (libjprof: size limit", "the report's header says so")
			assert.Contains(t, stderr, "jprof: warning: "+r.File("gen")+" holds only its first events")
		})
		// A limit below the header: the header and the closing line,
		// nothing more (text had no limit at all).
		t.Run(format+"-tiny", func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,CALLTREE,GENERIC,GENFORMAT=" + format + ",GENMAX=64,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			b, err := os.ReadFile(r.File("gen"))
			require.NoError(t, err)
			assert.Less(t, len(b), 16<<10, "the header and the closing line")
			assert.Contains(t, string(b), " *** libjprof: size limit (GENMAX) of 64 bytes reached; ")
			_, stderr := jprofRun(t, "report", "xtree", r.File("gen"))
			assert.Contains(t, stderr, "holds only its first events", "read, and said to be cut")
		})
	}
}

// A start=N not yet fired is cancelled by end.
func TestDelayedStartCancelled(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE")
	requireOK(t, rt(t, port, "start=1"))
	assert.NotContains(t, rt(t, port, "status")[0].String(), "pending-start=-")
	requireOK(t, rt(t, port, "end"))
	assert.Contains(t, rt(t, port, "status")[0].String(), "pending-start=-")
	time.Sleep(1500 * time.Millisecond) // past the delay
	assert.Contains(t, rt(t, port, "status")[0].String(), "state=stopped")
	p.Send("quit")
	p.Wait()
}

// log-gen's values are calibrated online, each with the minimum current
// at its event, and agree with the log-rt's final calibration: also for
// methods whose every event spans real work (SelfMix's leaves, a few µs
// each, compiled), whose run minimum is no glue and is not removed (the
// table's is, as the log-rt does; removing the run's took a tenth or
// more of such a method's time out of log-gen, a new user found).
func TestLogGenOnlineCalibration(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "SelfMix", Args: []string{"3000", "300"}, Options: "RTARCF,METRICS=PTT_TIME,GENERIC,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	out := filepath.Join(t.TempDir(), "fromgen")
	b, err := exec.Command(jvmtest.Tool("jprof"), "logrt", r.File("gen"), "-o", out).CombinedOutput()
	require.NoError(t, err, "%s", b)
	self := func(p *reports.Profile) map[string]float64 {
		m := map[string]float64{}
		for _, th := range p.Threads {
			th.Walk(func(n *reports.Node, d int) {
				if d > 0 && strings.Contains(n.Name, "SelfMix.m") && !strings.Contains(n.Name, "SelfMix.main") {
					m[n.Name[2:]] += float64(n.Base[0])
				}
			})
		}
		return m
	}
	final, online := self(r.LogRT(t, 1)), self(jvmtest.ParseLogRT(t, out))
	require.Len(t, final, 10, "SelfMix's ten leaves in the log-rt")
	for name, f := range final {
		// Online minima are never below the final ones: online values
		// are at least the final ones, and not much more for keys seen
		// thousands of times.
		assert.InEpsilon(t, f, online[name], 0.05, "%s: log-rt %.0f ns, log-gen %.0f ns", name, f, online[name])
	}
}
