package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// TestSmoke runs the whole suite at a tiny size, one round, and checks
// that the report has every section and every configuration's row. It
// checks no timing: numbers from such short runs mean nothing.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs JVMs")
	}
	jvmtest.Build(t)
	// A deadline, not a timing: on a loaded machine the whole suite runs
	// slowly, and every part must still get its turn.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	agents := t.TempDir()
	require.NoError(t, BuildAgents(ctx, jvmtest.Root(), agents))

	s, err := Run(ctx, Options{
		Root:           jvmtest.Root(),
		Agents:         agents,
		Ops:            20,
		WarmOps:        5,
		Reps:           2,
		Rounds:         1,
		JavacRounds:    1,
		JavacArgs:      []string{"-version"}, // javac's start-up, not a compilation
		RealRounds:     1,
		RealSmall:      true,
		RepeatRuns:     2,
		ChurnThreads:   200,
		ChurnLoaders:   20,
		StressRuns:     1,
		StressThreads:  100,
		FallbackJVMs:   1,
		FallbackRounds: 1,
		ReadCostReads:  10000,
		ReadCostReps:   1,
		Seed:           1,
		Timeout:        time.Minute,
		Logf:           t.Logf,
	}, DefaultParts())
	require.NoError(t, err)

	var md strings.Builder
	require.NoError(t, s.WriteMarkdown(&md))
	sections := splitSections(md.String())
	for _, title := range []string{"Machine and settings", "Targets (SPEC §8)", "Per-event overhead: BenchWorkload",
		"Real program: javac", "Real programs: H2 and groovy", "Repeatability of the default mode", "Sampling accuracy: SelfMix", "Against the JVM's own answer: JFR method timing (JDK 25)", "Thread and method churn", "Thread end under stress, and threads past the eBPF work area", "PTT read cost", "log-gen size, parse and tree build", "Calibration accuracy", "Start-up and exit: a program that does nothing", "Notes"} {
		assert.Contains(t, sections, title)
	}
	for _, c := range WorkloadConfigs() {
		assert.Contains(t, sections["Per-event overhead: BenchWorkload"], "| "+c.Name+" |", c.Key)
	}
	for _, c := range JavacConfigs() {
		assert.Contains(t, sections["Real program: javac"], "| "+c.Name, c.Key)
	}
	for _, name := range []string{ReadVDSO, ReadTSC, ReadCPU, ReadClock, ReadPerf, ReadBPF} {
		assert.Contains(t, sections["PTT read cost"], "| "+name+" |", name)
	}
	assert.Contains(t, sections["Calibration accuracy"], "calibrated error")
	assert.Contains(t, sections["Calibration accuracy"], "The overhead above the minimum")
	assert.Contains(t, sections["Calibration accuracy"], "### In-process reference")
	assert.Contains(t, sections["Calibration accuracy"], "### BCI (the JIT on): in-process reference")
	assert.Contains(t, sections["Calibration accuracy"], "| d256 |")
	assert.Contains(t, sections["Sampling accuracy: SelfMix"], "| SelfMix.m10 |")
	assert.Contains(t, sections["Real program: javac"], "**BCI on javac**")
	assert.Contains(t, sections["Start-up and exit: a program that does nothing"], "| libjprof, the default mode |")
	assert.Contains(t, sections["Sampling overhead and stress"], "**The machine's floor.**")
	assert.Contains(t, sections["Sampling overhead and stress"], "| ParJavac | libjprof SAMPLE (cpu, 1 ms) |")
	assert.Contains(t, sections["Sampling overhead and stress"], "**Stress.**")
	assert.Contains(t, sections["Sampling overhead and stress"], "**2 of 2 passed**")
	assert.Len(t, s.Targets(), 39)
	if sj := part[*SampleJFR](s); sj != nil && sj.Skipped == "" { // JDK 25 is installed
		assert.Regexp(t, `\| GCHeavy \| JFR CPU-time sampler, 10 ms \| .* \| [0-9]+ \([0-9]+–[0-9]+\) \|`, sections["Sampling against JFR's CPU-time sampler (JDK 25)"])
		assert.Regexp(t, `\| javac \| libjprof SAMPLE \(cpu, 1 ms\) \| .* \| [0-9]+ \([0-9]+–[0-9]+\) \| – \|`, sections["Sampling against JFR's CPU-time sampler (JDK 25)"])
	}
	lk := sections["Lock profile cost: LOCK and JLM on contended locks"]
	assert.Regexp(t, `\| libjprof LOCK \(threshold 10 µs\) \| [0-9.]+ \| [0-9.]+× \|`, lk)
	assert.Regexp(t, `\| libjprof BCI CALLTREE JLM \| [0-9.]+ \| [0-9.]+× \| .* \| [1-9][0-9]* monitor takes \|`, lk)
	assert.Contains(t, lk, "JLM's own cost")
	assert.Contains(t, lk, "Without contention")
	assert.Regexp(t, `\| libjprof ALLOC \(512 KiB\) \| [0-9.]+ \| [0-9.]+× \|`, sections["Allocation profile cost: ALLOC against JFR"])
	assert.Regexp(t, `\*\*In one JVM\*\* .* \*\*[0-9.]+×\*\* median`, sections["Allocation profile cost: ALLOC against JFR"])
	at := sections["Profiling a running JVM (jprof profile)"]
	assert.Regexp(t, `\| bci \| [0-9.]+ \|`, at)
	assert.Regexp(t, `\| cpu \| [0-9.]+ \|`, at)
	assert.Contains(t, at, "| bci | 3 |")
	assert.Contains(t, at, "| cpu | 3 |")
	assert.Contains(t, sections["Repeatability of the default mode"], "**hellop**: 2 runs")
	for _, c := range append(RealConfigs(), realConfigs25()...) {
		for _, prog := range []string{"**H2**", "**groovy**"} {
			assert.Contains(t, sections["Real programs: H2 and groovy"], prog)
		}
		assert.Contains(t, sections["Real programs: H2 and groovy"], "| "+c.Name+" |", c.Key)
	}
	th := sections["Thread end under stress, and threads past the eBPF work area"]
	assert.Contains(t, th, "| SAMPLE (1 ms), trylock delayed 3 ms | 1 | 1 | 0 |")
	assert.Contains(t, th, "Threads reading perf against bpf threads")
	assert.Contains(t, th, "Threads reading clock against bpf threads")
	ch := part[*Churn](s)
	require.NotNil(t, ch)
	for _, r := range ch.MethodRows {
		if r.Key == "methods-calltree" {
			assert.Equal(t, int64(0), r.Refused)
			assert.GreaterOrEqual(t, r.Methods, int64(20*100))
			assert.False(t, r.Limited)
		}
	}

	wl := part[*Workload](s)
	require.NotNil(t, wl)
	assert.Equal(t, int64(1+20*191), wl.Calls)
	assert.NotEmpty(t, wl.Verified, "the CALLTREE log-rt matched the program's call count")
	for _, r := range wl.Rows {
		if r.Skipped != "" {
			// Only a forced PTT backend may be missing on some machine.
			assert.NotEmpty(t, r.Backend, "%s skipped: %s", r.Key, r.Skipped)
			continue
		}
		assert.Len(t, r.Samples, 1, r.Key)
	}
	jc := part[*Javac](s)
	require.NotNil(t, jc)
	for _, r := range jc.Rows {
		require.Len(t, r.Runs, 1, r.Key)
		if r.Agent == LibJProf && !HasRoot(r.Key) {
			assert.Positive(t, r.Runs[0].Nodes, r.Key)
			assert.Positive(t, r.Runs[0].Events, r.Key)
		}
	}
	jf := part[*JFR](s)
	require.NotNil(t, jf)
	if jf.Skipped == "" { // a machine without JDK 25 says so in the report
		for _, r := range jf.Rows {
			assert.Len(t, r.Wall, 1, r.Key)
			assert.Contains(t, sections["Against the JVM's own answer: JFR method timing (JDK 25)"], "| "+r.Name+" |", r.Key)
		}
		require.NotNil(t, jf.Unwind, jf.UnwindErr)
		// f is called 30 times, 10 of them unwound by g's exception.
		assert.Equal(t, uint64(30), jf.Unwind.LibJProf["JFRUnwind.f(I)I"])
		assert.Equal(t, uint64(30), jf.Unwind.LibJProf["JFRUnwind.g(I)I"])
		assert.Equal(t, uint64(30), jf.Unwind.JFR["JFRUnwind.g(I)I"])
	} else {
		assert.Contains(t, sections["Against the JVM's own answer: JFR method timing (JDK 25)"], "Not run: no JDK 25")
	}
}

// splitSections maps "## Title" to the text under it.
func splitSections(md string) map[string]string {
	out := map[string]string{}
	for _, sec := range strings.Split(md, "\n## ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		out[title] = body
	}
	return out
}
