package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/libjprof/libjprof/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountLogRT(t *testing.T) {
	p := &reports.Profile{PID: 1, Seq: 1, Threads: []*reports.Node{
		{Name: "00000001_main", Children: []*reports.Node{{Name: "I:A.b()V", Calls: 3}}},
		{Name: "00000002_other thread"},
	}}
	var buf strings.Builder
	require.NoError(t, reports.WriteLogRT(&buf, p))
	calls, rows, err := countLogRT(strings.NewReader(buf.String()))
	require.NoError(t, err)
	assert.Equal(t, int64(3), calls)
	assert.Equal(t, int64(3), rows)

	cut := buf.String()[:len(buf.String())-30]
	_, _, err = countLogRT(strings.NewReader(cut))
	assert.Error(t, err, "a truncated log-rt is an error")
}

func TestCountEvents(t *testing.T) {
	in := " libjprof log-gen\n Process_Number_ID=1\n Units :: PTT_TIME\n1 > I:A.b()V 00000001_main\n2 < I:A.b()V 00000001_main\n3 <! I:A.c()V 00000001_main thread\n"
	n, err := countEvents(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	_, err = countEvents(strings.NewReader(in[:len(in)-1]))
	assert.Error(t, err, "a cut file is an error")
	_, err = countEvents(strings.NewReader(""))
	assert.Error(t, err)
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
BenchmarkLogGenBuild/steady/1_metric         	       5	  84000000 ns/op	 650.00 MB/s	     1234 nodes	  12500000 events/cpu-s	  12480000 events/s	 1000 B/op	 10 allocs/op
BenchmarkLogGenBuild/growing/1_metric-2      	       5	  90000000 ns/op
PASS
ok  	github.com/libjprof/libjprof/reports	5.1s
`
	got := parseGoBench(out)
	require.Len(t, got, 2)
	assert.Equal(t, "BenchmarkLogGenBuild/steady/1_metric", got[0].Name)
	assert.Equal(t, map[string]float64{"ns/op": 84e6, "MB/s": 650, "nodes": 1234, "events/cpu-s": 12.5e6,
		"events/s": 12.48e6, "B/op": 1000, "allocs/op": 10}, got[0].Metrics)
	assert.Equal(t, map[string]float64{"ns/op": 90e6}, got[1].Metrics)
}

func TestParsePhases(t *testing.T) {
	line := func(rep int, calls, ns, cpu string) string {
		return fmt.Sprintf("rep=%d calls=%s events=0 ns=%s cpu=%s ops=1 check=7\n", rep, calls, ns, cpu)
	}
	for _, tc := range []struct {
		name         string
		out          string
		reps         int
		calls        int64
		ns, cpu      float64
		errSubstring string
	}{
		{name: "one", out: line(0, "191001", "140824222", "130000000"), reps: 1, calls: 191001, ns: 140824222, cpu: 130000000},
		{
			name: "fastest of each measure, separately",
			out:  "noise\n" + line(0, "5", "300", "90") + line(1, "5", "100", "95") + line(2, "5", "200", "80"),
			reps: 3, calls: 5, ns: 100, cpu: 80,
		},
		{name: "a repetition missing", out: line(0, "5", "1", "1"), reps: 2, errSubstring: "want 2"},
		{name: "calls differ", out: line(0, "5", "1", "1") + line(1, "6", "1", "1"), reps: 2, errSubstring: "made 6 calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, ns, cpu, err := parsePhases(tc.out, tc.reps)
			if tc.errSubstring != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errSubstring)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.calls, calls)
			assert.Equal(t, tc.ns, ns)
			assert.Equal(t, tc.cpu, cpu)
		})
	}
}

func TestBestGoBench(t *testing.T) {
	in := []GoBenchResult{
		{Name: "a", Metrics: map[string]float64{"events/cpu-s": 1}},
		{Name: "b", Metrics: map[string]float64{"events/cpu-s": 5}},
		{Name: "a", Metrics: map[string]float64{"events/cpu-s": 3}},
		{Name: "b", Metrics: map[string]float64{"events/cpu-s": 4}},
	}
	assert.Equal(t, []GoBenchResult{in[2], in[1]}, bestGoBench(in, "events/cpu-s"))
}

func TestWalkShares(t *testing.T) {
	line := `2026-11-27T03:29:27.235Z	INFO	sampling summary	{"pid": 21883, "kind": "cpu", "period": "500µs", "samples": 8748, "weight": "4.428380254s", ` +
		`"threads": 5, "notWalkable": {"<deopt>":15,"<no_Java_frame>":7,"<unknown_Java>":101,"<unknown_not_Java>":184}, "walkedFromCaller": 455, ` +
		`"walkedFromAnchor": 20, "walkedPastStub": 3, "walkedAfterSample": 9, "unknownMethods": 0, "jvmThreads": 15, "jvmThreadsEnded": 0, "jvmSamples": 5079, "jvmWeight": "2.577179369s"}`
	u, r, ok := walkShares("first line\n" + line + "\n")
	require.True(t, ok)
	assert.InDelta(t, 100*300.0/3669, u, 1e-9, "<no_Java_frame> is not a failure")
	assert.InDelta(t, 100*(455.0+20+3+9)/3669, r, 1e-9, "every recovery counts")
	_, _, ok = walkShares("no summary")
	assert.False(t, ok)
}

func TestParseNMTDiff(t *testing.T) {
	out := `27254:

Native Memory Tracking:

Total: reserved=7854847KB +5751KB, committed=480103KB +5203KB

-                 Java Heap (reserved=6172672KB, committed=397312KB)
                            (mmap: reserved=6172672KB, committed=397312KB)
 
-                     Class (reserved=1048759KB +32KB, committed=375KB +32KB)
-                      Code (reserved=247974KB +181KB, committed=7834KB +181KB)
-                        GC (reserved=267191KB -27KB, committed=52871KB -27KB)
-               Arena Chunk (reserved=4590KB +4415KB, committed=4590KB +4415KB)
-                 Metaspace (reserved=65550KB, committed=1870KB +448KB)
`
	total, top, err := parseNMTDiff(out)
	if err != nil {
		t.Fatal(err)
	}
	if total != 5203<<10 {
		t.Errorf("total %d, want %d", total, 5203<<10)
	}
	if want := "Arena Chunk +4.3, Metaspace +0.4, Code +0.2"; top != want {
		t.Errorf("top %q, want %q", top, want)
	}
	if _, _, err := parseNMTDiff("Native memory tracking is not enabled"); err == nil {
		t.Error("no error without NMT")
	}
}
