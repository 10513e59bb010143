package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ReferenceAgents are the C agents in bench/agents, built as <name>.so.
var ReferenceAgents = []string{"empty", "naive"}

// BuildAgents compiles the reference agents into dir with gcc, against
// the JDK that javac belongs to (as the Makefile does). bench.mk builds
// them for `make bench`; this is for the smoke test and for running the
// harness by hand.
func BuildAgents(ctx context.Context, root, dir string) error {
	home, err := javaHome()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, a := range ReferenceAgents {
		cmd := exec.CommandContext(ctx, "gcc", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC",
			"-I"+filepath.Join(home, "include"), "-I"+filepath.Join(home, "include", "linux"),
			"-o", filepath.Join(dir, a+".so"), filepath.Join(root, "bench", "agents", a+".c"))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %s.c: %w\n%s", a, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, "gcc", "-O2", "-Wall", "-Wextra", "-o", filepath.Join(dir, "sigcost"),
		filepath.Join(root, "bench", "agents", "sigcost.c"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gcc sigcost.c: %w\n%s", err, out)
	}
	return nil
}

// javaHome is $JAVA_HOME if it has jvmti.h, else the JDK javac is in.
func javaHome() (string, error) {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if _, err := os.Stat(filepath.Join(h, "include", "jvmti.h")); err == nil {
			return h, nil
		}
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return "", fmt.Errorf("no JDK: %w", err)
	}
	javac, err = filepath.EvalSymlinks(javac)
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(javac)), nil
}
