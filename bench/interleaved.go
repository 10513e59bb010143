package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/reports"
)

// Interleaved accuracy (java/src/AccuracyAB.java): one JVM, in -Xint,
// alternates bare and profiled phases of each driver through the agent's
// rtdriver socket, so that the reference (the bare phases) and the
// measurement (the profiled phases' log-rt) are taken in the same
// process, a few milliseconds apart, in the same interpreter: the
// machine's speed drift between two JVM runs cannot distort it. Each pair
// of phases gives one error per driver; medians over the pairs.

// abCalls is AccuracyAB.CALLS: a driver's calls of its leaf per phase.
const abCalls = 2000

// abRow is one driver over the pairs.
type abRow struct {
	size int
	// bare: ns/call of the driver timed by the program itself (thread
	// CPU clock) without events; raw, cal: the profiled phase's log-rt
	// (driver's cumulative BASE+DELTA, and BASE); rawErr, calErr per
	// pair, (x - bare) / bare.
	bare, raw, cal Summary
	rawErr, calErr Summary
	// probeBare, probeProf: median wall time of the body of a leaf with
	// the driver's loop, timed from inside, without and with events.
	probeBare, probeProf Summary
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runInterleaved runs AccuracyAB with pairs phase pairs per driver, in
// -Xint with method events, or with bci with the BCI source and the JIT
// (warmed up first).
func runInterleaved(ctx context.Context, java, agent, cp, tmp string, pairs int, bci bool) ([]abRow, error) {
	dir := filepath.Join(tmp, "accuracyab")
	if bci {
		dir += "-bci"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("METRICS=PTT_TIME,PORT=%d,LOGPATH=%s", port, dir)
	args := []string{"-Xint", "-agentpath:" + agent + "=" + methodEvents + opts, "-cp", cp, "AccuracyAB", strconv.Itoa(port), strconv.Itoa(pairs)}
	if bci {
		args = []string{"-agentpath:" + agent + "=BCI,ALLMETHODS," + opts, "-cp", cp, "AccuracyAB", strconv.Itoa(port), strconv.Itoa(pairs), "20"}
	}
	cmd := exec.CommandContext(ctx, java, args...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("AccuracyAB: %v\n%s", err, tailStr(string(out), 2000))
	}
	type acc struct{ bare, raw, cal, rawErr, calErr, pb, pp []float64 }
	by := map[int]*acc{}
	var sizes []int
	get := func(size int) *acc {
		a, ok := by[size]
		if !ok {
			a = &acc{}
			by[size] = a
			sizes = append(sizes, size)
		}
		return a
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "ab":
			size, _ := strconv.Atoi(f[1])
			bare, _ := strconv.ParseFloat(f[2], 64) // f[3]: the profiled phase as the program timed it
			raw, cal, err := driverPerCall(f[4], size)
			if err != nil {
				return nil, err
			}
			a := get(size)
			a.bare = append(a.bare, bare)
			a.raw = append(a.raw, raw)
			a.cal = append(a.cal, cal)
			a.rawErr = append(a.rawErr, (raw-bare)/bare)
			a.calErr = append(a.calErr, (cal-bare)/bare)
		case len(f) == 4 && f[0] == "probe":
			size, _ := strconv.Atoi(f[1])
			pb, _ := strconv.ParseFloat(f[2], 64)
			pp, _ := strconv.ParseFloat(f[3], 64)
			a := get(size)
			a.pb = append(a.pb, pb)
			a.pp = append(a.pp, pp)
		}
	}
	var rows []abRow
	for _, size := range sizes {
		a := by[size]
		if len(a.bare) == 0 {
			return nil, fmt.Errorf("AccuracyAB: no pairs for d%d", size)
		}
		rows = append(rows, abRow{size: size, bare: Summarize(a.bare),
			raw: Summarize(a.raw), cal: Summarize(a.cal), rawErr: Summarize(a.rawErr), calErr: Summarize(a.calErr),
			probeBare: Summarize(a.pb), probeProf: Summarize(a.pp)})
	}
	return rows, nil
}

// driverPerCall reads driver dK's cumulative time per call (its node and
// its callees', raw and calibrated) from one phase's log-rt.
func driverPerCall(path string, size int) (raw, cal float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	p, err := reports.ParseLogRT(f)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	name := fmt.Sprintf("Accuracy.d%d(I)V", size) // i: or, compiled under BCI, j:
	var d *reports.Node
	for _, th := range p.Threads {
		th.Walk(func(n *reports.Node, _ int) {
			if d == nil && len(n.Name) > 2 && n.Name[2:] == name && n.Calls > 0 {
				d = n
			}
		})
	}
	if d == nil {
		return 0, 0, fmt.Errorf("%s: no %s", path, name)
	}
	var r, c uint64
	for _, n := range append([]*reports.Node{d}, d.Children...) {
		c += n.Base[0]
		r += n.Base[0] + n.Delta[0]
	}
	return float64(r) / abCalls, float64(c) / abCalls, nil
}

func tailStr(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
