package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	PMU        bool   // a hardware cycles counter can be opened (see pmu.go)
	Reclaim    string // actions of the kernel's running DAMON schemes, "" if none
}

func probeMachine(ctx context.Context, java string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), PMU: havePMU(), Reclaim: damonActions()}
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

// damonActions lists the actions of the DAMON schemes the kernel runs
// (proactive reclaim, in some VMs): with pageout, cold memory and page
// cache are reclaimed while the benchmark runs, so a run that needs much
// memory anew (a large tree, a large log-rt) can cost more at one time
// than at another, beyond the drift the other runs see.
func damonActions() string {
	states, _ := filepath.Glob("/sys/kernel/mm/damon/admin/kdamonds/*/state")
	var acts []string
	for _, st := range states {
		if b, err := os.ReadFile(st); err != nil || strings.TrimSpace(string(b)) != "on" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(st), "contexts", "*", "schemes", "*", "action"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				acts = append(acts, strings.TrimSpace(string(b)))
			}
		}
	}
	slices.Sort(acts)
	return strings.Join(slices.Compact(acts), ", ")
}
