package trainer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
)

// JVMInfo identifies the JVM a table is for, as its system properties
// say. The agent fills the same fields from the same properties.
type JVMInfo struct {
	Name    string // java.vm.name
	Version string // java.vm.version
	Arch    string // os.arch
}

// ReadJVMInfo asks the java executable for its properties
// (java -XshowSettings:properties -version).
func ReadJVMInfo(ctx context.Context, java string) (JVMInfo, error) {
	cmd := exec.CommandContext(ctx, java, "-XshowSettings:properties", "-version")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return JVMInfo{}, fmt.Errorf("trainer: %s -XshowSettings:properties -version: %w\n%s", java, err, tail(out.String(), 20))
	}
	info := parseJVMInfo(&out)
	if info.Name == "" || info.Version == "" {
		return JVMInfo{}, fmt.Errorf("trainer: %s did not print java.vm.name and java.vm.version", java)
	}
	return info, nil
}

// parseJVMInfo reads "    key = value" lines; properties with several
// values (continuation lines) are not ones it needs.
func parseJVMInfo(r io.Reader) JVMInfo {
	var info JVMInfo
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " = ")
		if !ok {
			continue
		}
		switch k {
		case "java.vm.name":
			info.Name = v
		case "java.vm.version":
			info.Version = v
		case "os.arch":
			info.Arch = v
		}
	}
	return info
}

// CPUModel reads the CPU model from a /proc/cpuinfo-style text: the first
// "model name" (x86), else "Hardware" or "Processor" (arm), else the
// architecture Go was built for.
func CPUModel(r io.Reader) string {
	var fallback string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			if v != "" {
				return v
			}
		case "Hardware", "Processor", "cpu model":
			if fallback == "" {
				fallback = v
			}
		}
	}
	if fallback != "" {
		return fallback
	}
	return runtime.GOARCH
}

// tail returns the last n lines of s, for error messages.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
