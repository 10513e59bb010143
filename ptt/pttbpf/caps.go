package pttbpf

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Capabilities loading needs: CAP_BPF for the maps and programs,
// CAP_PERFMON for tracing programs; CAP_SYS_ADMIN stands for both (older
// kernels, root).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// ErrCaps is wrapped by Load's error when the process lacks the
// capabilities: the kernel would refuse with EPERM, which cilium/ebpf
// reports as a possible memlock limit, a misleading hint here.
var ErrCaps = fmt.Errorf("missing capabilities")

// missingCaps names the capabilities the process's effective set lacks
// for Load, or nil (also when the set cannot be read: Load then says what
// the kernel says).
func missingCaps() []string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	var eff uint64
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			if eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64); err != nil {
				return nil
			}
			found = true
		}
	}
	if !found || eff&(1<<capSysAdmin) != 0 {
		return nil
	}
	var miss []string
	if eff&(1<<capBPF) == 0 {
		miss = append(miss, "CAP_BPF")
	}
	if eff&(1<<capPerfmon) == 0 {
		miss = append(miss, "CAP_PERFMON")
	}
	return miss
}

// capsError is Load's error for missing capabilities.
func capsError(miss []string) error {
	return fmt.Errorf("pttbpf: %w: the process lacks %s (effective set; CAP_SYS_ADMIN would do too): "+
		"run the JVM as root or with them (setcap on java, a container's --cap-add), or get the work area from a jprof pttd (PTTD=)",
		ErrCaps, strings.Join(miss, " and "))
}
