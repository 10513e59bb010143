package trainer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/calibration"
	"github.com/libjprof/libjprof/internal/jvmtest"
)

// These tests run the real Java trainer. They compile it (and its native
// library, if gcc and the JDK headers are there) into a temporary
// directory rather than build/, which other builds own.

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	require.True(t, ok)
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

type javaBuild struct {
	classes string
	native  string // "" when the library could not be built
}

func buildTrainer(t *testing.T) javaBuild {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a JVM")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Skip("no javac")
	}
	root := repoRoot(t)
	dir := t.TempDir()
	b := javaBuild{classes: filepath.Join(dir, "java")}
	srcs, err := filepath.Glob(filepath.Join(root, "java", "src", "Trainer*.java"))
	require.NoError(t, err)
	out, err := exec.Command(javac, append([]string{"-Xlint:all", "-Werror", "-d", b.classes}, srcs...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)

	home := filepath.Dir(filepath.Dir(mustEval(t, javac)))
	if gcc, err := exec.LookPath("gcc"); err == nil {
		b.native = filepath.Join(dir, "native")
		require.NoError(t, os.MkdirAll(b.native, 0o755))
		out, err := exec.Command(gcc, "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
			"-I"+filepath.Join(home, "include"), "-I"+filepath.Join(home, "include", "linux"),
			"-o", filepath.Join(b.native, "libjptrainer.so"), filepath.Join(root, "java", "native", "trainer.c"), "-lpthread").CombinedOutput()
		if err != nil {
			t.Logf("no native library (%v): %s", err, out)
			b.native = ""
		}
	}
	return b
}

func mustEval(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return r
}

func java(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "java", args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func TestJavaTrainer(t *testing.T) {
	b := buildTrainer(t)
	t.Run("JDK natives only", func(t *testing.T) {
		out := java(t, "-cp", b.classes, "Trainer", "--reps", "50", "--threads", "4")
		assert.Contains(t, out, "native library jptrainer not found")
		assert.Contains(t, out, "trainer: 36 patterns x 2 drivers")
		assert.Contains(t, out, "trainer: ok")
	})
	t.Run("with jptrainer", func(t *testing.T) {
		if b.native == "" {
			t.Skip("no native library")
		}
		out := java(t, "-Djava.library.path="+b.native, "-cp", b.classes, "Trainer", "--reps", "50", "--threads", "4")
		assert.Contains(t, out, "trainer: 200 patterns x 4 drivers + thread root")
		assert.Contains(t, out, "trainer: ok")
	})
	t.Run("bad argument", func(t *testing.T) {
		out, err := exec.Command("java", "-cp", b.classes, "Trainer", "--reps", "x").CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), "--reps x: not a number")
	})
}

func TestJavaTrainerEnv(t *testing.T) {
	b := buildTrainer(t)
	args := []string{"-Xint", "-cp", b.classes}
	want := 2 * 4 // Java callers × Java leaves
	if b.native != "" {
		args = append(args, "-Djava.library.path="+b.native)
		want = 4 * 8
	}
	out := java(t, append(args, "Trainer", "--env", "--trials", "3", "--target-ms", "1")...)
	assert.NotContains(t, out, "warning: not running interpreted")
	pats, err := ParseEnv(strings.NewReader(out))
	require.NoError(t, err)
	assert.Len(t, pats, want)
	seen := map[[3]byte]bool{}
	for _, p := range pats {
		seen[[3]byte{p.Caller.Letter(), p.Callee.Letter(), byte(p.Exit)}] = true
	}
	assert.Len(t, seen, want, "one line per pattern")
}

// The whole training with the real agent: every target sequence is seen
// and no invalid one; then a run loading the table uses it, and keys it
// saw too rarely are calibrated with the table's minima.
func TestTrainWithAgent(t *testing.T) {
	jvmtest.Build(t)
	b := buildTrainer(t)
	if b.native == "" {
		t.Skip("no native library")
	}
	tab, err := Run(context.Background(), Config{
		Agent: jvmtest.Agent(), ClassPath: b.classes, LibPath: b.native,
		Runs: 1, Reps: 20, SkipEnv: true,
	})
	require.NoError(t, err)
	seen, missing := Coverage(tab)
	var names []string
	for _, k := range missing {
		names = append(names, k.String())
	}
	assert.Empty(t, names, "target sequences the trainer did not produce (%d seen)", seen)
	assert.Empty(t, tab.Invalid())
	assert.NotEmpty(t, tab.Backend)
	assert.NoError(t, tab.Matches(tab.JVM, tab.JVMVersion, "PTT_TIME", tab.Backend))
	for _, k := range tab.Keys() {
		e := tab.Entries[k]
		assert.True(t, e.Seen() || e.Count == 0, k.String())
	}

	dir := t.TempDir()
	in, out := filepath.Join(dir, "trained.cal"), filepath.Join(dir, "after.cal")
	f, err := os.Create(in)
	require.NoError(t, err)
	require.NoError(t, tab.Write(f))
	require.NoError(t, f.Close())
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop",
		Options: "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,PTT=" + tab.Backend + ",CALTABLE=" + in + ",CALOUT=" + out})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, strings.Join(r.LogRT(t, 1).Notes, "\n"), "from table "+in)
	g, err := os.Open(out)
	require.NoError(t, err)
	defer g.Close()
	after, err := calibration.Parse(g) // this run's own minima and counts
	require.NoError(t, err)
	rare := 0
	for _, k := range after.Keys() {
		e := after.Entries[k]
		if e.Count < calibration.OwnMinimumEvents && tab.Lookup(k).Seen() {
			rare++
			assert.Equal(t, min(e.Min, tab.Lookup(k).Min), calibration.FinalMinimum(e.Min, e.Count, tab, k))
		}
	}
	assert.Positive(t, rare, "hellop has keys it sees rarely, which the table serves")
}
