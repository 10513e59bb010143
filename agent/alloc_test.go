package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/internal/jvmtest"
)

// allocShares sums a pprof profile's first sample value (alloc_space) by
// the AllocSites method each sample's stack passes through.
func allocShares(t *testing.T, p *profile.Profile) map[string]float64 {
	t.Helper()
	by := map[string]float64{}
	var total float64
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				for _, site := range []string{"big", "medium", "small"} {
					if strings.HasPrefix(l.Function.Name, "AllocSites."+site+"(") {
						by[site] += float64(s.Value[0])
						total += float64(s.Value[0])
					}
				}
			}
		}
	}
	for k := range by {
		by[k] = 100 * by[k] / total
	}
	return by
}

// TestAlloc: the sampled bytes of three allocation sites whose true
// shares are known (AllocSites: 50%, 30%, 20% of 400 MiB) come out within
// 2 points each, the allocated class is the leaf, and pprof names the
// values as Go does. A 16 KiB interval gives about 25,600 samples, over
// which a site's share moves by about 0.4 points between runs: 2 points
// is a safe bound. (At 64 KiB it moved by about 1 point, more than
// HotSpot's sampling of 6,400 independent draws would make it, and a CI
// run failed at 2.2; the default 512 KiB gives 800 samples.)
func TestAlloc(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "AllocSites", Args: []string{"400"}, Options: "ALLOC=16k,START", Java: jdk.Java})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			assert.Contains(t, r.Stderr, "mode=ALLOC metrics=ALLOC_SPACE+ALLOC_OBJECTS")
			rt := r.ReadFile(t, "rt.1")
			assert.Contains(t, rt, ": 1 = ALLOC_SPACE (bytes, uncalibrated)")
			assert.Regexp(t, `(?m)^ +4 +[0-9]+ +0 +[0-9]+ +0 +[0-9]+ +0 +0 +0  O:byte\[\]$`, rt)
			out := filepath.Join(t.TempDir(), "a.pb.gz")
			o, err := exec.Command(jvmtest.Tool("jprof"), "pprof", "-o", out, r.File("rt.1")).CombinedOutput()
			require.NoError(t, err, "%s", o)
			f, err := os.Open(out)
			require.NoError(t, err)
			defer f.Close()
			p, err := profile.Parse(f)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(p.SampleType), 2)
			assert.Equal(t, "alloc_space", p.SampleType[0].Type)
			assert.Equal(t, "bytes", p.SampleType[0].Unit)
			assert.Equal(t, "alloc_objects", p.SampleType[1].Type)
			sh := allocShares(t, p)
			for site, want := range map[string]float64{"big": 50, "medium": 30, "small": 20} {
				assert.InDelta(t, want, sh[site], 2, "%s's share of the bytes: %v", site, sh)
			}
		})
	}
}

// TestLock: the time threads wait for a contended monitor, for a
// contended ReentrantLock and in Object.wait is attributed to the
// contexts that waited, within 10% of what the program measured itself
// (LockSites), with the monitor's class (the lock's Sync) as the leaf;
// pprof names the values as Go's mutex profile does.
func TestLock(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		t.Run(jdk.Name, func(t *testing.T) {
			r := jvmtest.Start(t, jvmtest.Run{Class: "LockSites", Options: "LOCK=0,START", Java: jdk.Java})
			require.Equal(t, 0, r.ExitCode, r.Stderr)
			out, err := exec.Command(jvmtest.Tool("jprof"), "collapsed", r.File("rt.1")).CombinedOutput()
			require.NoError(t, err, "%s", out)
			jvmtest.CheckLockSites(t, r.Stdout, out)
			pb := filepath.Join(t.TempDir(), "l.pb.gz")
			o, err := exec.Command(jvmtest.Tool("jprof"), "pprof", "-o", pb, r.File("rt.1")).CombinedOutput()
			require.NoError(t, err, "%s", o)
			f, err := os.Open(pb)
			require.NoError(t, err)
			defer f.Close()
			p, err := profile.Parse(f)
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(p.SampleType), 2)
			assert.Equal(t, "delay", p.SampleType[0].Type)
			assert.Equal(t, "nanoseconds", p.SampleType[0].Unit)
			assert.Equal(t, "contentions", p.SampleType[1].Type)
		})
	}
}
