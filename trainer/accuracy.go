package trainer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/reports"
)

// AccuracyConfig says how to run the calibration accuracy measurement.
type AccuracyConfig struct {
	Java, Agent, ClassPath string
	// AgentOptions are added to METRICS=PTT_TIME,START,NORTDRIVER, e.g.
	// PTT=clock or NOCALIBRATE.
	AgentOptions string
}

// AccuracyRow compares, for one driver method of java/src/Accuracy.java,
// its true cost per call (thread CPU time without the agent, in -Xint,
// the execution mode method events force) with what the agent's log-rt
// says: the driver's cumulative time per call, raw and calibrated.
type AccuracyRow struct {
	Size    int     // loop iterations of the leaf the driver calls
	KnownNS float64 // true cost per call
	RawNS   float64 // uncalibrated: BASE+DELTA of driver and leaf
	CalNS   float64 // calibrated: BASE of driver and leaf
}

// RawErr and CalErr are the relative errors against the true cost.
func (r AccuracyRow) RawErr() float64 { return (r.RawNS - r.KnownNS) / r.KnownNS }
func (r AccuracyRow) CalErr() float64 { return (r.CalNS - r.KnownNS) / r.KnownNS }

// accuracyCalls is Accuracy.CALLS: calls of the leaf per driver run.
const accuracyCalls = 2000

// Accuracy measures calibration accuracy: one run without the agent for
// the true costs, one under the agent for the log-rt.
func Accuracy(ctx context.Context, cfg AccuracyConfig) ([]AccuracyRow, error) {
	if cfg.Java == "" {
		cfg.Java = "java"
	}
	out, err := runJava(ctx, cfg.Java, []string{"-Xint", "-cp", cfg.ClassPath, "Accuracy", "--known"})
	if err != nil {
		return nil, fmt.Errorf("accuracy: known costs: %w", err)
	}
	known := map[int]float64{}
	var sizes []int
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "known" {
			continue
		}
		size, err1 := strconv.Atoi(f[1])
		ns, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("accuracy: bad line %q", sc.Text())
		}
		known[size] = ns
		sizes = append(sizes, size)
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("accuracy: no known costs in %q", tail(out, 400))
	}

	dir, err := os.MkdirTemp("", "jprof-accuracy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	opts := "METHODEVENTS,METRICS=PTT_TIME,START,NORTDRIVER,LOGPATH=" + dir
	if cfg.AgentOptions != "" {
		opts += "," + cfg.AgentOptions
	}
	if _, err := runJava(ctx, cfg.Java, []string{"-Xint", "-agentpath:" + cfg.Agent + "=" + opts, "-cp", cfg.ClassPath, "Accuracy"}); err != nil {
		return nil, fmt.Errorf("accuracy: run under the agent: %w", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "log-rt.1_*"))
	if len(files) != 1 {
		return nil, fmt.Errorf("accuracy: expected one log-rt in %s, found %d", dir, len(files))
	}
	f, err := os.Open(files[0])
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := reports.ParseLogRT(f)
	if err != nil {
		return nil, fmt.Errorf("accuracy: %w", err)
	}
	drivers := map[string]*reports.Node{}
	var walk func(n *reports.Node)
	walk = func(n *reports.Node) {
		if strings.HasPrefix(n.Name, "i:Accuracy.d") {
			drivers[n.Name] = n
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, th := range p.Threads {
		walk(th)
	}
	var rows []AccuracyRow
	for _, size := range sizes {
		d := drivers[fmt.Sprintf("i:Accuracy.d%d(I)V", size)]
		if d == nil {
			return nil, fmt.Errorf("accuracy: driver d%d not in the log-rt", size)
		}
		var raw, cal uint64
		for _, n := range append([]*reports.Node{d}, d.Children...) {
			cal += n.Base[0]
			raw += n.Base[0] + n.Delta[0]
		}
		rows = append(rows, AccuracyRow{
			Size:    size,
			KnownNS: known[size],
			RawNS:   float64(raw) / accuracyCalls,
			CalNS:   float64(cal) / accuracyCalls,
		})
	}
	return rows, nil
}
