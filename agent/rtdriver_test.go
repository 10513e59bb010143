package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/jvmtest"
	"github.com/libjprof/libjprof/reports"
)

// freePort finds a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ctl is where a test JVM's agent listens for rtdriver: its UNIX socket
// or a TCP port (PORT=).
type ctl struct{ network, addr string }

func tcpCtl(port int) ctl { return ctl{"tcp", fmt.Sprintf("127.0.0.1:%d", port)} }

// socketCtl is the UNIX socket of the agent in the JVM of pid, run by this
// process's user.
func socketCtl(pid int) ctl {
	return ctl{"unix", control.SocketPath(control.SocketBase, os.Geteuid(), pid)}
}

// rt sends one command line and returns the reply lines.
func rt(t *testing.T, at ctl, line string, token ...string) []control.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok := ""
	if len(token) > 0 {
		tok = token[0]
	}
	c, err := control.DialNet(ctx, at.network, at.addr, tok)
	require.NoError(t, err)
	defer c.Close()
	replies, err := c.Do(ctx, line)
	require.NoError(t, err)
	return replies
}

func requireOK(t *testing.T, replies []control.Reply) {
	t.Helper()
	for _, r := range replies {
		require.True(t, r.OK, r.String())
	}
}

// driven starts the Driven workload with the agent not collecting yet,
// driven through its UNIX socket.
func driven(t *testing.T, opts string) (*jvmtest.Proc, ctl) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: opts})
	p.Expect("ready")
	return p, socketCtl(p.Result().PID)
}

func workCalls(t *testing.T, p *reports.Profile) uint64 {
	t.Helper()
	var n uint64
	m := mainThread(t, p)
	m.Walk(func(n2 *reports.Node, d int) {
		if n2.Name == "i:Driven.work(I)J" || n2.Name == "j:Driven.work(I)J" { // j: BCI, compiled
			n += n2.Calls
		}
	})
	return n
}

func TestRTDriverStartFlushResetEnd(t *testing.T) {
	startFlushResetEnd(t, "METHODEVENTS,CALLTREE")
}

// startFlushResetEnd drives Driven through start, flush, reset, end and a
// second start, checks the calls each log-rt holds and returns the run.
func startFlushResetEnd(t *testing.T, opts string) *jvmtest.Result {
	p, port := driven(t, opts)
	p.Send("call 100") // not collecting yet: not counted
	p.Expect("done 100")
	requireOK(t, rt(t, port, "start"))
	p.Send("call 200")
	p.Expect("done 200")
	replies := rt(t, port, "flush,reset")
	requireOK(t, replies)
	assert.Contains(t, replies[0].Detail, "log-rt.1_")
	p.Send("call 50")
	p.Expect("done 50")
	replies = rt(t, port, "END")
	requireOK(t, replies)
	assert.Contains(t, replies[0].Detail, "log-rt.2_")
	p.Send("call 70") // stopped: not counted
	p.Expect("done 70")
	requireOK(t, rt(t, port, "start"))
	p.Send("call 30")
	p.Expect("done 30")
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)

	assert.Equal(t, uint64(200), workCalls(t, r.LogRT(t, 1)))
	assert.Equal(t, uint64(50), workCalls(t, r.LogRT(t, 2)), "reset then end shows only the calls since the reset")
	// Collection was on at VM death: the final log-rt holds the calls
	// since the end (which reset).
	assert.Equal(t, uint64(30), workCalls(t, r.LogRT(t, 3)))
	_, err := os.Stat(r.File("rt.4"))
	assert.True(t, os.IsNotExist(err))
	return r
}

// An end whose flush finds nothing new since an interval flush, after
// a reset while collecting, says that collection was on until the end
// (it was), not that it was off: the start predates the reset, but
// collection never stopped. A flush after an end that wrote its log-rt
// and reset does find collection off, and says so.
func TestRTDriverEndAfterIntervalFlushSaysCollectionWasOn(t *testing.T) {
	// Driven's methods only (BCI's INCLUDE): the JDK's own threads run
	// Java code when they like (a GC's reference processing), which under
	// method events made the end find something new on a loaded machine.
	p, port := driven(t, "BCI,CALLTREE,INCLUDE=Driven")
	requireOK(t, rt(t, port, "start"))
	p.Send("call 100")
	p.Expect("done 100")
	requireOK(t, rt(t, port, "reset"))
	p.Send("call 50")
	p.Expect("done 50")
	replies := rt(t, port, "flush=interval")
	requireOK(t, replies)
	assert.Contains(t, replies[0].Detail, "log-rt.1_")

	replies = rt(t, port, "end")
	requireOK(t, replies)
	assert.Regexp(t, `^nothing collected since the last interval flush at \S+ \(collection was on until \S+, but while it was none of the methods it sees ran: .*\); no file written$`, replies[0].Detail)

	requireOK(t, rt(t, port, "start"))
	p.Send("call 20")
	p.Expect("done 20")
	replies = rt(t, port, "end")
	requireOK(t, replies)
	assert.Contains(t, replies[0].Detail, "log-rt.2_")
	replies = rt(t, port, "flush")
	requireOK(t, replies)
	assert.Regexp(t, `^nothing collected since the last reset at \S+ \(not collecting: send start\); no file written$`, replies[0].Detail)

	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Equal(t, uint64(50), workCalls(t, r.LogRT(t, 1)), "the calls since the reset")
	assert.Equal(t, uint64(20), workCalls(t, r.LogRT(t, 2)), "the calls since the second start")
	files, _ := filepath.Glob(filepath.Join(r.Dir, "log-rt.*"))
	assert.Equal(t, []string{r.File("rt.1"), r.File("rt.2")}, files, "the empty end and flush wrote no file")
}

func TestRTDriverDelayedStart(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE")
	replies := rt(t, port, "start=1")
	requireOK(t, replies)
	p.Send("call 10") // before the delay has passed
	p.Expect("done 10")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st := rt(t, port, "status")
		if strings.Contains(st[0].Detail, "state=collecting") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Send("call 40")
	p.Expect("done 40")
	requireOK(t, rt(t, port, "flush"))
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode)
	assert.Equal(t, uint64(40), workCalls(t, r.LogRT(t, 1)))
}

func TestRTDriverErrorsChangeNothing(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE")
	replies := rt(t, port, "start,bogus")
	require.Len(t, replies, 2)
	assert.False(t, replies[0].OK, "a line with a bad command runs nothing")
	assert.False(t, replies[1].OK)
	st := rt(t, port, "status")
	assert.Contains(t, st[0].Detail, "state=stopped")
	requireOK(t, rt(t, port, "ping,fgc,help"))
	p.Send("quit")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode)
	_, err := os.Stat(r.File("rt.1"))
	assert.True(t, os.IsNotExist(err), "nothing was collected, nothing written")
}

func TestRTDriverToken(t *testing.T) {
	p, port := driven(t, "METHODEVENTS,CALLTREE,TOKEN=s3cret")
	replies := rt(t, port, "status")
	require.NotEmpty(t, replies)
	assert.False(t, replies[0].OK)
	assert.Equal(t, "auth", replies[0].Cmd)
	requireOK(t, rt(t, port, "status", "s3cret"))
	p.Send("quit")
	p.Wait()
}

// Abuse against a real JVM: garbage, a 1 MB line, 50 concurrent clients,
// a client that disconnects mid-command, and commands racing VM death.
// The JVM must neither crash nor hang, and every file must be complete.
func TestRTDriverAbuse(t *testing.T) {
	port := freePort(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Driven", Options: fmt.Sprintf("METHODEVENTS,CALLTREE,START,PORT=%d", port)})
	p.Expect("ready")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	send := func(payload []byte, wantReply bool) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		_, _ = c.Write(payload)
		if wantReply {
			line, err := bufio.NewReader(c).ReadString('\n')
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(line, "ERR "), line)
		}
	}
	send([]byte("\x00\x01\xff\xfe garbage\n"), true)
	send([]byte(strings.Repeat("A", 1<<20)+"\n"), true)
	send([]byte("flu"), false) // disconnects mid-command
	send([]byte("flush\n"), false)

	var wg sync.WaitGroup
	var mu sync.Mutex
	okCount, busy := 0, 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := control.Dial(ctx, addr, "")
			if err != nil {
				return
			}
			defer c.Close()
			replies, err := c.Do(ctx, "ping,status")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && len(replies) == 2 && replies[0].OK && replies[1].OK:
				okCount++
			default:
				// Over the connection limit: "ERR busy" and a close,
				// which a client still writing may see as a reset.
				busy++
			}
		}()
	}
	wg.Wait()
	t.Logf("50 concurrent clients: %d served, %d turned away", okCount, busy)
	assert.Positive(t, okCount)

	p.Send("call 500")
	p.Expect("done 500")
	// Commands keep coming while the VM dies.
	stop := make(chan struct{})
	var hammer sync.WaitGroup
	hammer.Add(1)
	go func() {
		defer hammer.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if c, err := control.Dial(ctx, addr, ""); err == nil {
				_, _ = c.Do(ctx, "flush")
				c.Close()
			}
			cancel()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	p.Send("quit")
	r := p.Wait()
	close(stop)
	hammer.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	assert.Contains(t, r.Stdout, "total=")
	// Every log-rt written parses: none is partial.
	entries, err := os.ReadDir(r.Dir)
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp", "temporary file left behind")
		if strings.HasPrefix(e.Name(), "log-rt.") {
			jvmtest.ParseLogRT(t, filepath.Join(r.Dir, e.Name()))
			n++
		}
	}
	assert.Greater(t, n, 0)
}

// Flushes while several threads run flat out: every snapshot is a
// well-formed log-rt whose counts never exceed the final ones, and the
// final log-rt at VM death has the exact totals.
func TestRTDriverFlushUnderLoad(t *testing.T) {
	const threads, calls = 4, 300000
	port := freePort(t)
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Load", Args: []string{fmt.Sprint(threads), fmt.Sprint(calls)},
		Options: fmt.Sprintf("METHODEVENTS,CALLTREE,START,PORT=%d", port)})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var flushed []string
	for i := 0; i < 100 && len(flushed) < 8; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := control.Dial(ctx, addr, "")
		if err == nil {
			replies, err := c.Do(ctx, "flush")
			c.Close()
			if err == nil && len(replies) == 1 && replies[0].OK {
				flushed = append(flushed, replies[0].Detail)
			}
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	p.Expect("load: done")
	r := p.Wait()
	require.Equal(t, 0, r.ExitCode, r.Stderr)
	require.NotEmpty(t, flushed, "no flush got through while the program ran")

	countWork := func(p *reports.Profile) (total uint64) {
		for _, th := range jvmtest.Threads(p, "load-") {
			th.Walk(func(n *reports.Node, d int) {
				if n.Name == "i:Load.work(I)I" {
					total += n.Calls
				}
			})
		}
		return total
	}
	// The last file is VM death's. A flush whose reply was lost under
	// load still wrote its file, so count the files, not the replies.
	files, err := filepath.Glob(filepath.Join(r.Dir, fmt.Sprintf("log-rt.*_%d", r.PID)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), len(flushed)+1)
	final := r.LogRT(t, len(files))
	if !assert.Equal(t, uint64(threads*calls), countWork(final), "the final log-rt has every call") {
		for i := 1; i <= len(files); i++ {
			t.Logf("log-rt.%d: %d calls", i, countWork(r.LogRT(t, i)))
		}
		t.Logf("log-msg:\n%s", r.ReadFile(t, "msg"))
	}
	var prev uint64
	for i := 1; i < len(files); i++ {
		snap := r.LogRT(t, i) // parsing checks CEE against the children
		n := countWork(snap)
		assert.LessOrEqual(t, prev, n, "flush %d went backwards", i)
		assert.LessOrEqual(t, n, uint64(threads*calls))
		prev = n
	}
}

// Method events started and ended again and again while two threads run
// (Service): no thread's tree may have missed exits, nor exits without a
// seen entry. With entries turned on before exits, a thread that ran
// between the two calls (each a handshake with every thread) pushed
// frames whose exits never came, and the rest of its calls nested under
// them (half of the collections of a thread pool's); with exits first,
// it closed frames whose entries were not seen.
func TestMethodEventsStartedWhileRunning(t *testing.T) {
	restartedWhileRunning(t, "METHODEVENTS,CALLTREE", "")
}

// BCI leaves its probes in place at an end: frames entered while
// collection was off still run them, and at the next start their exits
// would come without entries (empty O: rows off each thread's root).
// Each thread's first event after a restart seeds its stack from the
// frames the transformer instrumented, as method events do.
func TestBCIRestartedWhileRunning(t *testing.T) {
	for _, jdk := range jvmtest.JDKs() {
		// FFMPROBES (JDK 22 and later; JNI probes before) sends a
		// thread's first event after a restart through JNI, to seed.
		for _, opts := range []string{"BCI,CALLTREE", "BCI,CALLTREE,FFMPROBES"} {
			t.Run(jdk.Name+"/"+opts, func(t *testing.T) { restartedWhileRunning(t, opts, jdk.Java) })
		}
	}
}

// restartedWhileRunning starts and ends collection 6 times while Service's
// two threads run (java: a JDK's, "" the default), and requires every thread's open frames to be seeded
// at each start: no missed exits, no exits without a seen entry.
func restartedWhileRunning(t *testing.T, opts, java string) {
	const cycles = 6
	p := jvmtest.Launch(t, jvmtest.Run{Class: "Service", Args: []string{"60"}, Options: opts, Java: java})
	p.Expect(fmt.Sprintf("ready %d", p.Result().PID))
	at := socketCtl(p.Result().PID)
	for range cycles {
		requireOK(t, rt(t, at, "start"))
		time.Sleep(300 * time.Millisecond)
		requireOK(t, rt(t, at, "end"))
		time.Sleep(100 * time.Millisecond)
	}
	missed := regexp.MustCompile(`Thread (.*): (\d+) exits without a seen entry \(shown as O:\), (\d+) missed exits`)
	units := 0
	for seq := 1; seq <= cycles; seq++ {
		prof := p.Result().LogRT(t, seq)
		for _, n := range prof.Notes {
			if m := missed.FindStringSubmatch(n); m != nil && (m[2] != "0" || m[3] != "0") {
				t.Errorf("log-rt.%d: thread %s: %s exits without a seen entry, %s missed exits", seq, m[1], m[2], m[3])
			}
		}
		units += int(methodCalls(prof)["ServiceWork.unit(J)J"])
	}
	assert.NotZero(t, units)
}

// A JVM started with the agent but not START: the first start
// retransforms the classes loaded so far, and a loop running in one
// (main's) goes on in its replaced version, interpreted, for good. Unlike
// an attach, the start keeps the class instrumented (its methods are
// seen), and a second later log-msg names the loop.
func TestLateStartNamesRunningLoop(t *testing.T) {
	p := jvmtest.Launch(t, jvmtest.Run{Class: "LoopMain", Args: []string{"120"}, Options: "BCI,CALLTREE"})
	pid := p.Result().PID
	p.Expect(fmt.Sprintf("ready %d", pid))
	at := socketCtl(pid)
	requireOK(t, rt(t, at, "start"))
	want := `BCI: a loop in LoopMain.main on thread "main" has been running since its class was retransformed`
	var msg []byte
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if msg, _ = os.ReadFile(filepath.Join(p.Dir(), fmt.Sprintf("log-msg_%d", pid))); strings.Contains(string(msg), want) {
			break
		}
	}
	assert.Contains(t, string(msg), want)
	requireOK(t, rt(t, at, "end"))
	calls := methodCalls(p.Result().LogRT(t, 1))
	assert.NotZero(t, calls["LoopWork.step(J)J"], "the loop's callee is seen")
}
