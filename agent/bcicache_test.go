package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

var bciCacheLine = regexp.MustCompile(`BCI cache\s.*"classesRead": (\d+), "classesNotHeld": (\d+), "classesAdded": (\d+)`)

// bciCacheCounts reads log-msg's BCI cache line: classes read from the
// cache, not held, added.
func bciCacheCounts(t *testing.T, msg string) (read, notHeld, added int) {
	t.Helper()
	m := bciCacheLine.FindStringSubmatch(msg)
	require.NotNil(t, m, "no BCI cache line in log-msg:\n%s", msg)
	read, _ = strconv.Atoi(m[1])
	notHeld, _ = strconv.Atoi(m[2])
	added, _ = strconv.Atoi(m[3])
	return
}

// With BCICACHE, a second run reads the classes the first rewrote instead
// of rewriting them, with this run's method handles in place: both runs'
// trees have the counts of an independent JVMTI counting agent, natives
// (wrapped), exception exits and trivial methods left out as without the
// cache.
func TestBCICache(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for _, c := range []struct {
		class string
		jvm   []string
	}{
		{class: "Natives"},
		{class: "Exceptions"},
		{class: "TrivialCases"},
		{class: "BCICases", jvm: []string{"-Xss16m"}},
	} {
		t.Run(c.class, func(t *testing.T) {
			ref, counts := countedRun(t, c.class, nil, c.jvm)
			plain := jvmtest.Start(t, jvmtest.Run{Class: c.class, JVMArgs: c.jvm, Options: "CALLTREE,START,NORTDRIVER"})
			require.Equal(t, 0, plain.ExitCode, plain.Stderr)
			want := methodCalls(plain.LogRT(t, 1))
			for run := 0; run < 2; run++ {
				r := jvmtest.Start(t, jvmtest.Run{Class: c.class, JVMArgs: c.jvm, Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
				require.Equal(t, 0, r.ExitCode, r.Stderr)
				assert.Equal(t, ref.Stdout, r.Stdout, "the agent changed the program's output")
				msg := r.ReadFile(t, "msg")
				read, _, added := bciCacheCounts(t, msg)
				if run == 0 {
					assert.NotZero(t, added, "the first run added the classes it rewrote")
				} else {
					assert.NotZero(t, read, "the second run read classes from the cache")
					assert.Contains(t, r.ReadFile(t, "rt.1"), "BCI: BCICACHE "+dir)
				}
				p := r.LogRT(t, 1)
				checkBalanced(t, p)
				own := methodCalls(p)
				// The same tree as without the cache, method by method,
				// and the counting agent's counts where it counts.
				assert.Equal(t, want, own, "run %d", run)
				for name, n := range counts {
					if !jdkName(name) && own[name] != 0 {
						assert.Equal(t, n, own[name], "calls of %s, run %d", name, run)
					}
				}
			}
		})
	}
	// A damaged pack: its records after the damage are misses, rewritten
	// again, and the run's counts stay right.
	packs, err := filepath.Glob(filepath.Join(dir, "ctx-*", "p-*.jpk"))
	require.NoError(t, err)
	require.NotEmpty(t, packs)
	keys, err := filepath.Glob(filepath.Join(dir, "ctx-*", "key"))
	require.NoError(t, err)
	require.Len(t, keys, 1, "one context, with its key")
	for _, p := range append(packs, keys...) {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s is the user's alone", p)
	}
	for _, p := range packs {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for i := len(b) / 3; i < len(b); i += 4093 {
			b[i] ^= 0x5a
		}
		require.NoError(t, os.WriteFile(p, b, 0o600))
	}
	r := jvmtest.Start(t, jvmtest.Run{Class: "Natives", Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.ReadFile(t, "msg"), "not used")
	plain := jvmtest.Start(t, jvmtest.Run{Class: "Natives", Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	assert.Equal(t, methodCalls(plain.LogRT(t, 1)), methodCalls(r.LogRT(t, 1)))
}

// A cache directory others may write is not used: the classes in it would
// run in the JVM. The run goes on without it and says so where a user
// looks.
func TestBCICacheRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, "BCICACHE not used: "+dir+" is writable by others")
	assert.Contains(t, r.ReadFile(t, "rt.1"), "BCICACHE not used")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing written to a refused directory")
	assert.EqualValues(t, 1000, methodCalls(r.LogRT(t, 1))["hellop.myA()V"])

	// Not with ROOTS either: which classes are rewritten depends on the run.
	own := filepath.Join(t.TempDir(), "own")
	r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Options: "CALLTREE,START,NORTDRIVER,ROOTS=hellop.myA,BCICACHE=" + own})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stderr, "BCICACHE not used: not with ROOTS")
	_, err = os.Stat(own)
	assert.True(t, os.IsNotExist(err), "no directory made for a cache not used")
}

// Past the cap, the least recently written contexts go; only packs count
// (a BCICACHE in a directory of other files costs no walk of them).
func TestBCICacheEvict(t *testing.T) {
	dir := t.TempDir()
	pack := func(ctx string, size int64, age time.Duration) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ctx), 0o700))
		p := filepath.Join(dir, ctx, "p-1.jpk")
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size)) // sparse
		require.NoError(t, f.Close())
		when := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(p, when, when))
	}
	pack("ctx-old", 150<<20, 2*time.Hour)
	pack("ctx-mid", 100<<20, time.Hour)
	pack("ctx-new", 60<<20, 0)
	other, err := os.Create(filepath.Join(dir, "other.bin"))
	require.NoError(t, err)
	require.NoError(t, other.Truncate(1<<30))
	require.NoError(t, other.Close())

	size, gone := bciCacheEvict(dir)
	assert.Equal(t, []string{"ctx-old"}, gone)
	assert.EqualValues(t, 160<<20, size)
	assert.NoDirExists(t, filepath.Join(dir, "ctx-old"))
	assert.DirExists(t, filepath.Join(dir, "ctx-new"))
	assert.FileExists(t, filepath.Join(dir, "other.bin"))

	fd, budget, _, err := openBCICache(dir)
	require.NoError(t, err)
	defer unix.Close(fd)
	assert.EqualValues(t, bciCacheCap-(160<<20), budget)
}

// A class whose trivial methods call another class's (TrivialCases's
// crossClass calls Box.get; SubBox, left as it was, calls BoxBase's) is
// kept when that class is in a jar of the class path, under a name
// holding the jars' stamps: a later run reads every class, and one after
// the jar changed rewrites the dependent classes again while the others
// still hit. Where the callee is in a directory, whose files may change
// unseen, the dependent classes are not kept.
func TestBCICacheDependsOnJars(t *testing.T) {
	jvmtest.Build(t)
	jar := filepath.Join(t.TempDir(), "trivial.jar")
	writeJar(t, jar, filepath.Join(jvmtest.Root(), "build", "java"), "TrivialCases*.class")
	settle()
	plain := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	want := methodCalls(plain.LogRT(t, 1))
	require.Zero(t, want["TrivialCases.crossClass()I"], "crossClass is trivial through Box.get")

	run := func(dir string, cp []string) (read, notHeld, added int) {
		t.Helper()
		r := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", ClassPath: cp, Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Equal(t, want, methodCalls(r.LogRT(t, 1)), "the same tree as without the cache")
		return bciCacheCounts(t, r.ReadFile(t, "msg"))
	}
	// The second run may load classes the first did not (the agent's own
	// code takes other paths when classes hit): the third is the steady
	// state.
	dir := filepath.Join(t.TempDir(), "cache")
	_, _, added := run(dir, []string{jar})
	assert.NotZero(t, added)
	run(dir, []string{jar})
	read, notHeld, _ := run(dir, []string{jar})
	assert.NotZero(t, read)
	assert.Zero(t, notHeld, "every class kept, TrivialCases under the jar's stamp")

	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(jar, later, later))
	settle()
	read, notHeld, _ = run(dir, []string{jar})
	assert.NotZero(t, read, "the classes that depend on no other still hit")
	assert.Equal(t, 2, notHeld, "TrivialCases and SubBox rewritten again: the jar they depend on changed")

	// From build/java's directory: TrivialCases is never kept.
	other := filepath.Join(t.TempDir(), "cache")
	run(other, nil)
	run(other, nil)
	_, notHeld, _ = run(other, nil)
	assert.Equal(t, 2, notHeld, "TrivialCases and SubBox depend on a directory's classes: not kept")
}

// A program's classes in a directory before a library's jar (java -cp
// classes:lib.jar, as H2Work runs), and a library jar whose manifest
// names others in its Class-Path (as Debian's do): the library's classes
// that depend on its other classes are kept all the same. The directory
// cannot come to shadow them unseen while it holds none of their
// packages: an entry added to it changes its stamp, and the dependent
// classes are rewritten again; the holder's own Class-Path is searched
// after it. Before, every such class of H2 was rewritten in every run.
func TestBCICacheDirectoryBeforeJar(t *testing.T) {
	jvmtest.Build(t)
	jar := filepath.Join(t.TempDir(), "trivial.jar")
	writeJar(t, jar, filepath.Join(jvmtest.Root(), "build", "java"), "TrivialCases*.class", "Class-Path: no-such-dependency.jar")
	classes := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(classes, "README"), []byte("a program's classes\n"), 0o644))
	settle()
	cp := []string{classes, jar}
	plain := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", ClassPath: cp, OnlyClassPath: true, Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	want := methodCalls(plain.LogRT(t, 1))
	require.Zero(t, want["TrivialCases.crossClass()I"], "crossClass is trivial through Box.get")
	dir := filepath.Join(t.TempDir(), "cache")
	run := func() (read, notHeld int) {
		t.Helper()
		r := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", ClassPath: cp, OnlyClassPath: true, Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Equal(t, want, methodCalls(r.LogRT(t, 1)), "the same tree as without the cache")
		read, notHeld, _ = bciCacheCounts(t, r.ReadFile(t, "msg"))
		return read, notHeld
	}
	run()
	run()
	read, notHeld := run()
	assert.NotZero(t, read)
	assert.Zero(t, notHeld, "every class kept, TrivialCases and SubBox under the class path's stamp")

	require.NoError(t, os.WriteFile(filepath.Join(classes, "Other.class"), []byte("not read"), 0o644))
	settle()
	read, notHeld = run()
	assert.NotZero(t, read, "the classes that depend on no other still hit")
	assert.Equal(t, 2, notHeld, "TrivialCases and SubBox rewritten again: the directory before their jar changed")
}

// An empty class path element is the working directory, as the JDK's
// loader reads it: stamped as a directory (a file added there makes the
// classes that depend on the jar after it rewritten again). A link in a
// directory that leads nowhere yet vouches for nothing: the class it
// names may appear through it, unseen.
func TestBCICacheWorkingDirectory(t *testing.T) {
	jvmtest.Build(t)
	jar := filepath.Join(t.TempDir(), "trivial.jar")
	writeJar(t, jar, filepath.Join(jvmtest.Root(), "build", "java"), "TrivialCases*.class")
	cwd := t.TempDir()
	settle()
	dir := filepath.Join(t.TempDir(), "cache")
	run := func(dir string) (read, notHeld int) {
		t.Helper()
		r := jvmtest.Start(t, jvmtest.Run{Class: "TrivialCases", ClassPath: []string{"", jar}, OnlyClassPath: true,
			Prefix: []string{"sh", "-c", `cd "$0" && exec "$@"`, cwd}, Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		read, notHeld, _ = bciCacheCounts(t, r.ReadFile(t, "msg"))
		return read, notHeld
	}
	run(dir)
	run(dir)
	_, notHeld := run(dir)
	assert.Zero(t, notHeld, "every class kept: the working directory holds none of their names")
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("x"), 0o644))
	settle()
	_, notHeld = run(dir)
	assert.Equal(t, 2, notHeld, "TrivialCases and SubBox rewritten again: the working directory changed")

	for _, c := range []string{"TrivialCases$Box.class", "TrivialCases$BoxBase.class"} {
		require.NoError(t, os.Symlink(filepath.Join(t.TempDir(), "later", c), filepath.Join(cwd, c)))
	}
	settle()
	other := filepath.Join(t.TempDir(), "cache")
	run(other)
	run(other)
	_, notHeld = run(other)
	assert.Equal(t, 2, notHeld, "TrivialCases and SubBox not kept: the classes they depend on may appear through the links")
}

// A class whose trivial methods were decided where the transformer's
// read-ahead of other class files stopped (a chain of delegates deeper
// than it reads) is kept all the same: the cut only ever instruments,
// which holds whatever the unread files say. Not kept, every class of a
// call-heavy program such as javac was rewritten again in every run. So
// is one that calls a class no jar of a jars-only class path holds (a
// library's optional dependency): only a changed jar, whose stamp the
// entry's name holds, could hold it in another run.
func TestBCICacheDeepChain(t *testing.T) {
	jvmtest.Build(t)
	jar := filepath.Join(t.TempDir(), "chain.jar")
	writeJar(t, jar, filepath.Join(jvmtest.Root(), "build", "java"), "CacheChain*.class")
	settle()
	plain := jvmtest.Start(t, jvmtest.Run{Class: "CacheChain", ClassPath: []string{jar}, OnlyClassPath: true, Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, plain.ExitCode, plain.Stderr)
	want := methodCalls(plain.LogRT(t, 1))
	require.EqualValues(t, 1000, want["CacheChain.top(I)I"], "top is instrumented: its chain runs past the read-ahead")
	dir := filepath.Join(t.TempDir(), "cache")
	for run := 0; run < 3; run++ {
		r := jvmtest.Start(t, jvmtest.Run{Class: "CacheChain", ClassPath: []string{jar}, OnlyClassPath: true, Options: "CALLTREE,START,NORTDRIVER,BCICACHE=" + dir})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Equal(t, plain.Stdout, r.Stdout)
		assert.Equal(t, want, methodCalls(r.LogRT(t, 1)), "run %d: the same tree as without the cache", run)
		read, notHeld, _ := bciCacheCounts(t, r.ReadFile(t, "msg"))
		if run == 2 {
			assert.NotZero(t, read)
			assert.Zero(t, notHeld, "every class kept, the chain's and rare's too")
		}
	}
}

// settle waits until files just written are two seconds old: BCICACHE
// never reads again an entry that depends on a class path file changed
// within two seconds of the run (a file system's clock may not tell a
// second change in the same tick).
func settle() { time.Sleep(2100 * time.Millisecond) }

// writeJar writes a jar of dir's files that match pattern, with a
// manifest holding the given main attributes, if any.
func writeJar(t *testing.T, jar, dir, pattern string, manifest ...string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	f, err := os.Create(jar)
	require.NoError(t, err)
	w := zip.NewWriter(f)
	if len(manifest) > 0 {
		e, err := w.Create("META-INF/MANIFEST.MF")
		require.NoError(t, err)
		_, err = e.Write([]byte("Manifest-Version: 1.0\r\n" + strings.Join(manifest, "\r\n") + "\r\n\r\n"))
		require.NoError(t, err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		e, err := w.Create(filepath.Base(name))
		require.NoError(t, err)
		_, err = e.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
}

// BCICACHE without a directory keeps the classes in
// $XDG_CACHE_HOME/libjprof/bci (else ~/.cache/libjprof/bci); without
// BCICACHE nothing is made there. The default's base must exist and be
// this user's: a root run with another user's HOME makes nothing in it,
// and says why where a user looks.
func TestBCICacheDefaultDir(t *testing.T) {
	home := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + home}
	dir := filepath.Join(home, "libjprof", "bci")
	for run := 0; run < 2; run++ {
		r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Env: env, Options: "BCICACHE,CALLTREE,START,NORTDRIVER"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		read, _, added := bciCacheCounts(t, r.ReadFile(t, "msg"))
		if run == 0 {
			assert.NotZero(t, added)
		} else {
			assert.NotZero(t, read)
		}
		assert.Contains(t, r.ReadFile(t, "rt.1"), "BCI: BCICACHE "+dir)
		assert.EqualValues(t, 1000, methodCalls(r.LogRT(t, 1))["hellop.myA()V"])
	}
	off := t.TempDir()
	r := jvmtest.Start(t, jvmtest.Run{Class: "hellop", Env: []string{"XDG_CACHE_HOME=" + off}, Options: "CALLTREE,START,NORTDRIVER"})
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.NoDirExists(t, filepath.Join(off, "libjprof"))
	assert.NotContains(t, r.ReadFile(t, "msg"), "BCI cache")

	homes := []string{filepath.Join(t.TempDir(), "missing")}
	if os.Geteuid() == 0 {
		other := t.TempDir()
		require.NoError(t, os.Chown(other, 4242, 4242))
		homes = append(homes, other)
	}
	for _, h := range homes {
		r = jvmtest.Start(t, jvmtest.Run{Class: "hellop", Env: []string{"XDG_CACHE_HOME=", "HOME=" + h}, Options: "BCICACHE,CALLTREE,START,NORTDRIVER"})
		require.Equal(t, 0, r.ExitCode, r.Stderr)
		assert.Contains(t, r.Stderr, "BCICACHE not used: ", h)
		assert.Contains(t, r.ReadFile(t, "rt.1"), "BCICACHE not used: ", h)
		assert.NoDirExists(t, filepath.Join(h, ".cache"), h)
		assert.EqualValues(t, 1000, methodCalls(r.LogRT(t, 1))["hellop.myA()V"])
	}
}
