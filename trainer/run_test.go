package trainer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/reports"
)

// fakeJava is a stand-in for java that behaves like the JVM with the
// agent as far as Run can tell: it prints properties, copies the next
// prepared table to the CALOUT= file and says "trainer: ok", copies the
// prepared log-gen into LOGPATH= for a RAWGEN run, or prints prepared
// --env output. FAKE_DIR holds its inputs and a call log.
const fakeJava = `#!/bin/sh
echo "$*" >> "$FAKE_DIR/calls"
opts=
for a in "$@"; do
  case "$a" in
    -XshowSettings:properties)
      printf '    java.vm.name = %s\n    java.vm.version = 17.0.15+6\n    os.arch = amd64\n' "${FAKE_VM:-Fake VM}" >&2
      exit 0 ;;
    --env) cat "$FAKE_DIR/env.txt"; exit 0 ;;
    -agentpath:*) opts="${a#*=}" ;;
  esac
done
case ",$opts," in
  *,RAWGEN,*)
    logpath=$(echo "$opts" | tr ',' '\n' | sed -n 's/^LOGPATH=//p')
    cp "$FAKE_DIR/loggen" "$logpath/log-gen_1"
    echo "trainer: ok"
    exit 0 ;;
esac
if [ -n "$FAKE_REJECT" ]; then
  echo "libjprof: invalid option \"CALOUT=x\": unknown option" >&2
  exit 1
fi
n=$(cat "$FAKE_DIR/count" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$FAKE_DIR/count"
calout=$(echo "$opts" | tr ',' '\n' | sed -n 's/^CALOUT=//p')
[ -f "$FAKE_DIR/table$n.cal" ] && cp "$FAKE_DIR/table$n.cal" "$calout"
echo "${FAKE_SAY:-trainer: ok: 3 exceptions thrown and caught as expected}"
`

type fake struct {
	dir  string
	java string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	dir := t.TempDir()
	java := filepath.Join(dir, "java")
	require.NoError(t, os.WriteFile(java, []byte(fakeJava), 0o755))
	t.Setenv("FAKE_DIR", dir)
	t.Setenv("FAKE_REJECT", "")
	t.Setenv("FAKE_SAY", "")
	t.Setenv("FAKE_VM", "")
	return &fake{dir: dir, java: java}
}

func (f *fake) table(t *testing.T, n int, tabs ...*calibration.Table) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, calibration.WriteAll(&b, tabs...))
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("table%d.cal", n)), b.Bytes(), 0o644))
}

func (f *fake) env(t *testing.T, text string) {
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "env.txt"), []byte(text), 0o644))
}

// loggen prepares the RAWGEN run's log-gen: n clean events of key k
// with deltas base, base+1, ..., and one unclean event far above.
func (f *fake) loggen(t *testing.T, k calibration.Key, base uint64, n int) {
	var b bytes.Buffer
	w := reports.NewLogGenWriter(&b, 1, []reports.Metric{{Name: "PTT_TIME", Unit: "ns"}})
	ev := reports.Event{Thread: "main", Kind: reports.Entry, Name: "i:T.m()V", Key: int(k), HasKey: true}
	for i := 0; i < n; i++ {
		ev.Values = []uint64{base + uint64(i)}
		require.NoError(t, w.Write(ev))
	}
	ev.Values, ev.Unclean = []uint64{100000}, true
	require.NoError(t, w.Write(ev))
	require.NoError(t, w.Flush())
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "loggen"), b.Bytes(), 0o644))
}

func (f *fake) calls(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (f *fake) config() Config {
	return Config{
		Java: f.java, Agent: "/opt/libjprof.so", ClassPath: "/opt/java", LibPath: "/opt/native",
		Runs: 2, Reps: 100, CPUInfo: filepath.Join(f.dir, "cpuinfo"),
		Now: func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 5, time.Local) },
	}
}

// agentTable is what the agent writes: minima and counts, default env,
// and the provenance it knows.
func agentTable(backend string, entries map[calibration.Key]calibration.Entry) *calibration.Table {
	t := calibration.NewTable(calibration.Provenance{
		JVM: "Fake VM", JVMVersion: "17.0.15+6", Metric: "PTT_TIME", Backend: backend,
		Tool: "libjprof agent", EnvSource: calibration.EnvDefault,
	})
	for k, e := range entries {
		t.Entries[k] = e
	}
	return t
}

var (
	kCall  = calibration.MakeKey(calibration.Interp, calibration.Ex, calibration.InterpStatic, calibration.En, calibration.NativeStatic)
	kLeaf  = calibration.MakeKey(calibration.InterpStatic, calibration.En, calibration.NativeStatic, calibration.Ex, calibration.InterpStatic)
	kThrow = calibration.MakeKey(calibration.InterpStatic, calibration.En, calibration.NativeStatic, calibration.Xx, calibration.InterpStatic)
	kZero  = calibration.MakeKey(calibration.InterpStatic, calibration.Ex, calibration.InterpStatic, calibration.Ex, calibration.InterpStatic)
)

func TestRun(t *testing.T) {
	f := newFake(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.dir, "cpuinfo"), []byte("model name\t: Test CPU @ 1GHz\n"), 0o644))
	insts := calibration.NewTable(calibration.Provenance{Metric: "PTT_INSTS", Backend: "bpf"})
	f.table(t, 1, agentTable("bpf", map[calibration.Key]calibration.Entry{
		kCall: {Min: 300, Count: 10}, kLeaf: {Min: 250, Count: 5},
	}), insts)
	f.table(t, 2, agentTable("bpf", map[calibration.Key]calibration.Entry{
		kCall: {Min: 280, Count: 7}, kThrow: {Min: 2000, Count: 1}, kZero: {Min: 0, Count: 3},
	}))
	f.env(t, "# comment\nenv i n Ex 30.4\nenv i n Xx 1030\n")
	// kCall's clean deltas: 280..2279, median 1279 (the unclean one
	// does not count); the other keys have too few events.
	f.loggen(t, kCall, 280, 2000)

	var log bytes.Buffer
	cfg := f.config()
	cfg.Log = &log
	tab, err := Run(context.Background(), cfg)
	require.NoError(t, err)

	assert.Equal(t, calibration.Entry{Min: 280, Env: 30, Excess: 999, Count: 17}, tab.Entries[kCall])
	assert.Equal(t, int64(30-999), tab.Entries[kCall].Kept(), "the excess is taken out of what Env keeps")
	assert.Equal(t, calibration.Entry{Min: 250, Env: 0, Count: 5}, tab.Entries[kLeaf])
	assert.Equal(t, calibration.Entry{Min: 2000, Env: 1000, Count: 1}, tab.Entries[kThrow])
	assert.Equal(t, calibration.Provenance{
		JVM: "Fake VM", JVMVersion: "17.0.15+6", Arch: "amd64", Metric: "PTT_TIME", Backend: "bpf",
		CPU: "Test CPU @ 1GHz", Date: time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local).UTC(),
		Runs: 2, Tool: Tool, EnvSource: calibration.EnvTrainer,
		Notes: tab.Notes,
	}, tab.Provenance)
	notes := strings.Join(tab.Notes, "\n")
	assert.Contains(t, notes, "minima by libjprof agent")
	assert.Contains(t, notes, "env: 2 call patterns measured without the agent (-Xint), the median of 3 JVMs")
	assert.Contains(t, notes, "excess: median clean delta less the minimum, on 1 keys with 1000 or more events in one RAWGEN run (2001 events)")
	assert.Contains(t, notes, "coverage: 4 of 600")
	assert.Contains(t, notes, "warning: 1 target sequences have a minimum of 0 (e.g. interp-Ex-interp-Ex-interp)")
	assert.Contains(t, log.String(), "minimum of 0")
	assert.Contains(t, log.String(), "run 2 of 2")

	calls := f.calls(t)
	require.Len(t, calls, 7, "properties, two agent runs, three env runs, excess")
	assert.Contains(t, calls[1], "-agentpath:/opt/libjprof.so=METHODEVENTS,RTARCF,START,NORTDRIVER,CALTABLE=none,METRICS=PTT_TIME,CALOUT=")
	assert.Contains(t, calls[1], "-Djava.library.path=/opt/native -cp /opt/java Trainer --reps 100")
	for _, c := range calls[3:6] {
		assert.Equal(t, "-Xint -Djava.library.path=/opt/native -cp /opt/java Trainer --env", c)
	}
	assert.Contains(t, calls[6], ",RAWGEN,")

	// The result writes and reads back.
	var b bytes.Buffer
	require.NoError(t, tab.Write(&b))
	back, err := calibration.Parse(&b)
	require.NoError(t, err)
	assert.Equal(t, tab, back)
}

func TestRunOptions(t *testing.T) {
	f := newFake(t)
	f.table(t, 1, agentTable("", map[calibration.Key]calibration.Entry{kCall: {Min: 300, Count: 10}}))
	cfg := f.config()
	cfg.Runs, cfg.Reps = 1, 0
	cfg.Backend, cfg.AgentOptions, cfg.SkipEnv = "clock", "NOCALIBRATE", true
	cfg.WorkDir = t.TempDir()
	tab, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	assert.Equal(t, "clock", tab.Backend, "the forced backend, when the agent does not say")
	assert.Equal(t, calibration.EnvDefault, tab.EnvSource)
	assert.Contains(t, strings.Join(tab.Notes, "\n"), "env: not measured")
	calls := f.calls(t)
	require.Len(t, calls, 2)
	assert.Contains(t, calls[1], ",PTT=clock,NOCALIBRATE -Djava")
	assert.Contains(t, calls[1], "=METHODEVENTS,RTARCF,", "the source trained by default")

	// With BCI among the agent's options, it is the one source given.
	cfg.AgentOptions = "BCI,ALLMETHODS"
	_, err = Run(context.Background(), cfg)
	require.NoError(t, err)
	calls = f.calls(t)
	last := calls[len(calls)-1]
	assert.Contains(t, last, "=RTARCF,START,")
	assert.Contains(t, last, ",BCI,ALLMETHODS -Djava")
	assert.NotContains(t, last, "METHODEVENTS")
	assert.NotContains(t, calls[1], "--reps")
	assert.FileExists(t, filepath.Join(cfg.WorkDir, "run-1", "calout.cal"), "kept")
}

func TestRunErrors(t *testing.T) {
	good := func(f *fake, t *testing.T) {
		f.table(t, 1, agentTable("bpf", map[calibration.Key]calibration.Entry{kCall: {Min: 300, Count: 1}}))
		f.table(t, 2, agentTable("bpf", map[calibration.Key]calibration.Entry{kCall: {Min: 300, Count: 1}}))
		f.env(t, "env i n Ex 30\n")
	}
	tests := []struct {
		name  string
		setup func(f *fake, t *testing.T, cfg *Config)
		want  string
	}{
		{"agent refuses CALOUT", func(f *fake, t *testing.T, cfg *Config) {
			t.Setenv("FAKE_REJECT", "1")
		}, `invalid option "CALOUT=x"`},
		{"trainer failed", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			t.Setenv("FAKE_SAY", "trainer: FAILED: 1 exceptions caught, 2 expected")
		}, "did not report success"},
		{"no table", func(f *fake, t *testing.T, cfg *Config) {}, "the agent wrote no calibration table"},
		{"no table for the metric", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			cfg.Metric = "PTT_INSTS"
		}, "no table for metric PTT_INSTS"},
		{"bad table", func(f *fake, t *testing.T, cfg *Config) {
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, "table1.cal"), []byte("junk\n"), 0o644))
		}, "calibration table line 1"},
		{"runs disagree", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			f.table(t, 2, agentTable("perf", nil))
		}, "the runs disagree"},
		{"backend unknown", func(f *fake, t *testing.T, cfg *Config) {
			f.table(t, 1, agentTable("", nil))
			f.table(t, 2, agentTable("", nil))
		}, "do not say which PTT backend"},
		{"backend not the one forced", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			cfg.Backend = "perf"
		}, "asked for PTT backend perf, the agent used bpf"},
		{"other JVM", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			t.Setenv("FAKE_VM", "Other VM")
		}, `the agent ran on jvm "Fake VM"`},
		{"bad env output", func(f *fake, t *testing.T, cfg *Config) {
			good(f, t)
			f.env(t, "env i n Ex lots\n")
		}, "env: trainer --env output line 1"},
		{"no agent", func(f *fake, t *testing.T, cfg *Config) { cfg.Agent = "" }, "no agent library"},
		{"bad metric", func(f *fake, t *testing.T, cfg *Config) { cfg.Metric = "A,B" }, "bad metric"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			cfg := f.config()
			tc.setup(f, t, &cfg)
			_, err := Run(context.Background(), cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRunNoJava(t *testing.T) {
	_, err := Run(context.Background(), Config{Java: filepath.Join(t.TempDir(), "nojava"), Agent: "a", ClassPath: "b"})
	assert.ErrorContains(t, err, "-XshowSettings:properties")
}
