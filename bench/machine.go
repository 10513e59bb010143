package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine is what the numbers were measured on.
type Machine struct {
	CPU        string // model name from /proc/cpuinfo
	Cores      int    // online CPUs
	Kernel     string // uname -r
	JDK        string // first line of java -version
	JVM        string // its VM line
	Go         string
	LoadBefore string // /proc/loadavg 1/5/15-minute averages
	LoadAfter  string
	PMU        bool // a hardware cycles counter can be opened (see pmu.go)
}

func probeMachine(ctx context.Context, java string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), PMU: havePMU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// java -version writes to stderr.
	if out, err := exec.CommandContext(ctx, java, "-version").CombinedOutput(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		m.JDK = strings.TrimSpace(lines[0])
		if len(lines) > 2 {
			m.JVM = strings.TrimSpace(lines[2])
		}
	}
	return m
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
