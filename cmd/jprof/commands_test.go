package main

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// TestCommandHelp: every command answers -h, -help and --help with its own
// usage on stdout and exit status 0, and "jprof help CMD" says the same.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		if c.run == nil {
			continue
		}
		_, want, _ := jprof("help", c.name)
		for _, h := range []string{"-h", "-help", "--help"} {
			code, stdout, stderr := jprof(c.name, h)
			assert.Equal(t, 0, code, "%s %s: %s", c.name, h, stderr)
			assert.Empty(t, stderr)
			assert.Regexp(t, `^usage: jprof `+c.name+`[ \n]`, stdout, "%s %s", c.name, h)
			assert.Equal(t, want, stdout, "jprof help %s", c.name)
		}
		// Each flag of the synopsis is in the Flags list.
		for _, f := range regexp.MustCompile(`-[a-z]+`).FindAllString(c.synopsis, -1) {
			assert.Regexp(t, `\n  `+f+`[ \n]`, want, "%s: flag %s", c.name, f)
		}
	}
	// -h after other arguments, and help for the non-file commands.
	code, stdout, _ := jprof("report", "xtree", logRT, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "usage: jprof report")
	code, stdout, _ = jprof("help", "version")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "usage: jprof version")
	code, _, stderr := jprof("help", "frob")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `help: unknown command "frob"`)
	// The general usage names every command and the flag style.
	code, stdout, _ = jprof("--help")
	assert.Equal(t, 0, code)
	for _, c := range commands {
		assert.Contains(t, stdout, "\n  jprof "+c.name)
	}
	assert.Contains(t, stdout, "one dash\nor two")
	// The pttd flags are documented, -slots too.
	_, stdout, _ = jprof("pttd", "-h")
	assert.Contains(t, stdout, "-slots")
	assert.Contains(t, stdout, "in octal")
}

func TestVersion(t *testing.T) {
	for _, v := range []string{"--version", "-version", "version"} {
		code, stdout, stderr := jprof(v)
		assert.Equal(t, 0, code, stderr)
		assert.True(t, strings.HasPrefix(stdout, "jprof "), stdout)
		assert.Contains(t, stdout, runtime.Version())
	}
}

// TestVersionBuilt checks that the binaries make builds know their commit.
func TestVersionBuilt(t *testing.T) {
	jvmtest.Build(t)
	head, err := exec.Command("git", "-C", jvmtest.Root(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout: the build has no commit to show")
	}
	for _, tool := range []string{"jprof", "rtdriver"} {
		out, err := exec.Command(jvmtest.Tool(tool), "--version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `^`+tool+` \S+ \(commit `+strings.TrimSpace(string(head))+`, go`, string(out))
	}
}

func TestPttdFlags(t *testing.T) {
	for _, s := range []string{"660", "0660", "0o660"} {
		var m fileMode
		require.NoError(t, m.Set(s), s)
		assert.Equal(t, os.FileMode(0o660), os.FileMode(m), s)
		assert.Equal(t, "0660", m.String())
	}
	for _, s := range []string{"999", "1777", "rw", "", "-1"} {
		var m fileMode
		assert.Error(t, m.Set(s), s)
	}
	// Rejected before anything is loaded.
	code, _, stderr := jprof("pttd", "-mode", "0999")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"0999" is not octal permission bits`)
	code, _, stderr = jprof("pttd", "-slots", "-1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-slots -1")
}

// TestMakeHelp: make help lists every target the Makefiles declare.
func TestMakeHelp(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "-s", "-C", jvmtest.Root(), "help").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var targets []string
	for _, mk := range []string{"Makefile", "bench/bench.mk"} {
		b, err := os.ReadFile(jvmtest.Root() + "/" + mk)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindAllStringSubmatch(string(b), -1) {
			targets = append(targets, strings.Fields(m[1])...)
		}
	}
	require.Contains(t, targets, "help")
	for _, tg := range targets {
		assert.Regexp(t, `(?m)^  make `+regexp.QuoteMeta(tg)+` +\S`, string(out), "target %s with its description", tg)
	}
}
