package main

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// The log-rt that jprof rebuilds from log-gen must equal the agent's own
// log-rt of the same run: the two are built by different code (C hot path
// vs reports.BuildProfile) from the same events.
func TestLogGenRebuildsLogRT(t *testing.T) {
	for _, c := range []struct{ class, opts string }{
		{"hellop", "METHODEVENTS,CALLTREE"},
		{"Exceptions", "METHODEVENTS,CALLTREE"},
		{"Threads", "METHODEVENTS,CALLTREE"},
		// Raw metrics: log-rt BASE is the sum of the log-gen values.
		{"hellop", "METHODEVENTS,METRICS=PTT_TIME,NOCALIBRATE"},
	} {
		t.Run(c.class+"/"+c.opts, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: c.class, Options: c.opts + ",GENERIC,START,NORTDRIVER"})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			own := r.LogRT(t, 1)
			f, err := os.Open(r.File("gen"))
			require.NoError(t, err)
			defer f.Close()
			rebuilt, err := reports.BuildProfile(f)
			require.NoError(t, err)
			// log-gen interleaves threads by buffer, not by start order.
			for _, p := range []*reports.Profile{own, rebuilt} {
				sort.Slice(p.Threads, func(i, j int) bool { return p.Threads[i].Name < p.Threads[j].Name })
			}
			require.NoError(t, reports.Compare(own, rebuilt, reports.CompareOptions{IgnoreHeader: true, IgnoreDelta: true, IgnoreDSIN: true}))
			// The final drain met the events under way with a fence,
			// not a pause (this kernel has membarrier).
			assert.Contains(t, r.ReadFile(t, "msg"), `"finalDrainFence": "membarrier(`)
		})
	}
}

func TestLogGenFormat(t *testing.T) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,RTARCF,GENERIC,GENFORMAT=text,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	gen := r.ReadFile(t, "gen")
	assert.Contains(t, gen, " Units :: PTT_TIME\n")
	// Three exception exits per round, in unwinding order.
	unwind := regexp.MustCompile(`(?m)^\d+ <! i:Exceptions\.level3\(I\)V \S+_main\n\d+ <! i:Exceptions\.level2\(I\)V \S+_main\n\d+ <! i:Exceptions\.level1\(I\)V \S+_main$`)
	assert.Len(t, unwind.FindAllString(gen, -1), 100)
	// Every entry has its exit on the main thread for the workload's methods.
	assert.Equal(t, strings.Count(gen, "> i:Exceptions.after()V"), strings.Count(gen, "< i:Exceptions.after()V"))
}

func TestJitA2NPerfMapThreadInfo(t *testing.T) {
	// Not collecting: the JIT runs at full speed and compiles the hot loop.
	r := jvmtest.Start(t, jvmtest.Run{Class: "NullChecks", Args: []string{"2000000"}, Options: "METHODEVENTS,CALLTREE,JITA2N,PERFMAP,THREADINFO,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	a2n := r.ReadFile(t, "jita2n")
	lines := strings.Split(a2n, "\n")
	require.Greater(t, len(lines), 5)
	assert.Equal(t, " JitA2N", lines[0])
	assert.Equal(t, " BINARY DATA IN PRINTABLE HEX", lines[1])
	assert.Equal(t, " Process_Number_ID="+itoa(r.PID), lines[2])
	rec := regexp.MustCompile(`^[0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{16} [0-9a-f]{8} (LOAD|UNLOAD|DYNAMIC) \S`)
	loads := 0
	for _, l := range lines[5:] {
		if l == "" || strings.HasPrefix(l, "  INLINED ") {
			continue
		}
		assert.Regexp(t, rec, l)
		if strings.Contains(l, " LOAD NullChecks.") {
			loads++
		}
	}
	assert.Positive(t, loads, "the hot NullChecks methods were compiled")
	assert.Contains(t, a2n, "DYNAMIC ", "VM-generated code (stubs, interpreter) is listed")
	assert.Contains(t, a2n, "  INLINED ", "inlining comes from compile_info")

	perfMap := "/tmp/perf-" + itoa(r.PID) + ".map"
	defer os.Remove(perfMap)
	pm, err := os.ReadFile(perfMap)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^[0-9a-f]+ [0-9a-f]+ NullChecks\.read\(LNullChecks\$Box;\)I$`, string(pm))

	jtnm := r.ReadFile(t, "jtnm")
	assert.Regexp(t, `(?m)^[0-9a-f]{8} \d+ \d+ [0-9a-f]{8}_main$`, jtnm, "main ended before VM death, with its end time")
}

func itoa(n int) string { return strconv.Itoa(n) }

// Post-processing calibration (seed 004): a RAWGEN log-gen calibrated by
// jprof with the final minima of the whole file rebuilds exactly the
// agent's own calibrated log-rt, which used the same final minima.
func TestPostProcessingCalibration(t *testing.T) {
	for _, format := range []string{"text", "binary"} {
		t.Run(format, func(t *testing.T) { postProcessingCalibration(t, format, ",CALTABLE=none") })
	}
	// With the built-in table the agent picked: jprof calibrate takes the
	// same one by default, named in the log-gen header.
	// Its excess can make an event's overhead larger than the event:
	// written negative, so that each context's total matches.
	for _, format := range []string{"text", "binary"} {
		t.Run("built-in table/"+format, func(t *testing.T) { postProcessingCalibration(t, format, "") })
	}
}

func postProcessingCalibration(t *testing.T, format, table string) {
	r := jvmtest.Start(t, jvmtest.Run{Class: "Exceptions", Options: "METHODEVENTS,METRICS=PTT_TIME,RAWGEN,GENFORMAT=" + format + ",START,NORTDRIVER,PTT=clock" + table})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	if format == "text" {
		gen := r.ReadFile(t, "gen")
		assert.Regexp(t, `(?m)^\d+ s\d+ > i:Exceptions\.level1\(I\)V `, gen)
	}
	cal := r.Dir + "/cal.gen"
	rebuilt := r.Dir + "/rebuilt.rt"
	out, err := exec.Command(jvmtest.Tool("jprof"), "calibrate", r.File("gen"), "-o", cal).CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(jvmtest.Tool("jprof"), "logrt", cal, "-o", rebuilt).CombinedOutput()
	require.NoError(t, err, string(out))
	got := jvmtest.ParseLogRT(t, rebuilt)
	own := r.LogRT(t, 1)
	notes := strings.Join(own.Notes, "\n")
	if table == "" && strings.Contains(notes, "Calibration table PTT_TIME: built-in") {
		assert.Contains(t, strings.Join(got.Notes, "\n"), "post-processed by jprof calibrate", "")
		assert.Contains(t, strings.Join(got.Notes, "\n"), "built-in table jvm=")
	} else if table == "" {
		t.Logf("no built-in table for this JVM: %s", notes)
	}
	for _, p := range []*reports.Profile{own, got} {
		sort.Slice(p.Threads, func(i, j int) bool { return p.Threads[i].Name < p.Threads[j].Name })
	}
	require.NoError(t, reports.Compare(own, got, reports.CompareOptions{IgnoreHeader: true, IgnoreDelta: true, IgnoreDSIN: true}))
	// And the calibration removed something: the raw sums are larger.
	raw := r.Dir + "/raw.rt"
	out, err = exec.Command(jvmtest.Tool("jprof"), "logrt", r.File("gen"), "-o", raw).CombinedOutput()
	require.NoError(t, err, string(out))
	rawp := jvmtest.ParseLogRT(t, raw)
	assert.Error(t, reports.Compare(own, rawp, reports.CompareOptions{IgnoreHeader: true, IgnoreDelta: true, IgnoreDSIN: true}))
}
