package main

// Leaving the program as it was: rtdriver's detach (collection off, the
// instrumented classes given their own bytes back, those a loop still
// runs in later) and shutdown (a detach, then the control channel closed,
// with a marker where the socket was that jprof reads).

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
)

// Detach implements control.Controller.
func (a *agent) Detach() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	detail, err := a.detachLocked()
	if err != nil {
		return "", err
	}
	detail += "; start profiles again"
	a.log.Info("detached", zap.String("detail", detail))
	return detail, nil
}

// detachLocked stops collecting and takes the event source out of the
// program (Detach, and a shutdown first), and says what it restored. The
// caller holds a.mu.
func (a *agent) detachLocked() (string, error) {
	a.cancelPending()
	t0 := time.Now()
	// Loops the start's retransformation left running interpreted, for
	// the last line a user sees (jprof's), not only log-msg.
	// The start's note, once: for the profile that ran since the last
	// detach, if any.
	missed, names, kept := 0, "", ""
	keptAtStart := uint64(0)
	b, bci := a.source.(jvmti.BCI)
	if bci && a.live {
		_ = a.vm.Do(func() error {
			missed, names = b.WarnObsolete()
			if a.profiledSinceDetach {
				kept = b.StartKept()
			}
			return nil
		})
	}
	if bci && a.profiledSinceDetach {
		keptAtStart = b.Stats().KeptRunning
	}
	a.profiledSinceDetach = false
	if err := a.vm.Do(a.source.Detach); err != nil {
		return "", err
	}
	a.quiesce()
	a.warnObsoleteLater()
	if !a.since.IsZero() {
		a.lastStop = time.Now()
	}
	a.since = time.Time{}
	detail := "collection off"
	if bci {
		st := b.Stats()
		detail = "collection off; instrumented classes given their own bytes back"
		if st.KeptAtDetach > 0 {
			detail += fmt.Sprintf("; %d kept their instrumentation while a loop of theirs runs (restored, it would run interpreted; their probes return at once; log-msg names them)", st.KeptAtDetach)
			a.restoreKeptLater(b)
		}
		if st.Failed > 0 {
			detail += fmt.Sprintf("; %d could not be rewritten before, as log-msg says", st.Failed)
		}
	} else if _, ok := a.source.(jvmti.Sampler); ok {
		detail = "collection off; sampling timers deleted"
	}
	detail += fmt.Sprintf(" in %v", time.Since(t0).Round(time.Millisecond))
	if d := trimMalloc(); d < -(1 << 20) {
		detail += fmt.Sprintf("; %.1f MiB of free C heap given back to the system", float64(-d)/(1<<20))
	}
	if keptAtStart > 0 {
		detail += fmt.Sprintf("; note: %d %s left uninstrumented for the profile, a loop of each running when it started (its methods are not in the profile; %s says more): %s",
			keptAtStart, plural(keptAtStart, "class was", "classes were"), logMsgPath(a.opts, a.pid), kept)
	}
	if missed > 0 {
		detail += fmt.Sprintf("; warning: %d %s running interpreted in code a profile's retransformation replaced, until %s (HotSpot never compiles a replaced method version; a lifelong loop stays slow: restart the program to get its speed back): %s",
			missed, plural(uint64(missed), "loop is", "loops are"), plural(uint64(missed), "it returns", "they return"), names)
	}
	return detail, nil
}

// warnObsoleteLater has log-msg name, a second after a BCI agent
// retransformed the program's classes (an attach, or a late first start),
// the loops left running in replaced method versions (interpreted until
// they return): those the looks for lifelong loops missed.
func (a *agent) warnObsoleteLater() {
	b, ok := a.source.(jvmti.BCI)
	if !ok {
		return
	}
	time.AfterFunc(time.Second, func() {
		_ = a.vm.Do(func() error {
			b.WarnObsolete()
			return nil
		})
	})
}

// restoreKeptLater gives the classes a detach left instrumented their own
// bytes back once their loops have returned: checked every second, for
// an hour at most (a lifelong loop keeps its class instrumented), and no
// more once a profile starts again.
func (a *agent) restoreKeptLater(b jvmti.BCI) {
	go func() {
		for i := 0; i < 3600; i++ {
			time.Sleep(time.Second)
			left := 0
			if err := a.vm.Do(func() error {
				left = b.RestoreKept()
				return nil
			}); err != nil || left == 0 {
				return
			}
		}
	}()
}

// Shutdown implements control.Controller: profiling stops for good and
// the server closes itself after replying. The event source is taken out
// of the program first, as a detach does: with the control channel gone
// nothing could detach it later, and an attached BCI agent would leave
// the program's classes instrumented (every call through an idle probe)
// until the JVM exits. What was collected stays for the final log-rt at
// VM death. A marker beside the socket says the channel was shut down, so
// that jprof tells such an agent from none (shutdownMarker).
func (a *agent) Shutdown() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	detail, err := a.detachLocked()
	if err != nil {
		// The channel stays: the user can try again, or detach.
		return "", fmt.Errorf("not shut down: taking the event source out of the program failed: %w", err)
	}
	if err := a.stopLocked(); err != nil {
		return "", err
	}
	a.shut, a.shutAt = true, time.Now()
	a.writeShutdownMarker()
	detail = "detached first: " + detail + "; the control channel closes now: jprof and rtdriver cannot reach this JVM's agent again (restart the JVM to profile it again)"
	a.log.Info("profiling shut down by rtdriver", zap.String("detail", detail))
	return detail, nil
}

// writeShutdownMarker leaves control.ShutdownMarker's file for this JVM:
// the time of the shutdown and the process's start time (against a later
// process of the same pid), in the user's private socket directory only.
func (a *agent) writeShutdownMarker() {
	path := control.ShutdownMarkerPath(control.SocketBase, os.Geteuid(), a.pid)
	if err := control.CheckPrivateDir(filepath.Dir(path), os.Geteuid()); err != nil {
		a.log.Warn("shutdown marker not written", zap.Error(err))
		return
	}
	m := control.ShutdownMarker{At: a.shutAt, Start: control.ProcStart("/proc/self/stat")}
	if err := atomicfile.Write(path, m.Write); err != nil {
		a.log.Warn("shutdown marker not written", zap.Error(err))
	}
}

// removeShutdownMarker removes this JVM's marker at VM death (the socket
// it stands for goes then too); one of another process of the same pid
// is not this JVM's to remove.
func (a *agent) removeShutdownMarker() {
	path := control.ShutdownMarkerPath(control.SocketBase, os.Geteuid(), a.pid)
	if m, ok := control.ReadShutdownMarker(path); ok && m.Start == control.ProcStart("/proc/self/stat") {
		os.Remove(path)
	}
}
