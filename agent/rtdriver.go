package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/jvmti"
)

// The agent is the rtdriver's Controller. Every method takes a.mu: the
// control server, a delayed start and VM death never overlap.

var errVMDead = errors.New("the VM is shutting down")

// startServer listens for rtdriver commands. A port that cannot be had is
// said in log-msg and on stderr, and the JVM runs on without one.
func (a *agent) startServer() {
	srv, err := control.Listen(control.Config{
		Controller: a,
		Host:       a.opts.Host,
		Port:       a.opts.Port,
		Token:      a.opts.Token,
		Logger:     a.log,
	})
	if err != nil {
		msg := fmt.Sprintf("rtdriver socket not available: %v", err)
		fmt.Fprintf(os.Stderr, "libjprof: %s\n", msg)
		a.log.Warn(msg)
		return
	}
	a.server = srv
	a.log.Info("rtdriver listening", zap.Stringer("addr", srv.Addr()), zap.Bool("token", a.opts.Token != ""))
	go func() {
		if err := srv.Serve(); err != nil {
			a.log.Error("rtdriver server stopped", zap.Error(err))
		}
	}()
}

// Start implements control.Controller.
func (a *agent) Start(delay time.Duration) error {
	if delay > 0 {
		a.mu.Lock()
		dead := a.dead
		a.mu.Unlock()
		if dead {
			return errVMDead
		}
		time.AfterFunc(delay, func() {
			if err := a.Start(0); err != nil {
				a.log.Error("delayed start failed", zap.Error(err))
			}
		})
		a.log.Info("start scheduled", zap.Duration("delay", delay))
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.startLocked()
}

func (a *agent) startLocked() error {
	if a.dead {
		return errVMDead
	}
	if a.shut {
		return errors.New("profiling was shut down")
	}
	if jvmti.Collecting() {
		return nil
	}
	if err := a.vm.Do(func() error { return jvmti.SetMethodEvents(true) }); err != nil {
		return err
	}
	a.log.Info("collection started")
	return nil
}

func (a *agent) stopLocked() error {
	if !jvmti.Collecting() {
		return nil
	}
	if err := a.vm.Do(func() error { return jvmti.SetMethodEvents(false) }); err != nil {
		return err
	}
	a.log.Info("collection stopped")
	return nil
}

// Flush implements control.Controller.
func (a *agent) Flush() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	return a.flushLocked()
}

func (a *agent) flushLocked() (string, error) {
	path, err := a.writeLogRT()
	if err != nil {
		a.log.Error("flush failed", zap.Error(err))
		return "", err
	}
	a.log.Info("log-rt written", zap.String("file", path))
	a.logThreadSummary(jvmti.Snapshot())
	return path, nil
}

// Reset implements control.Controller.
func (a *agent) Reset() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errVMDead
	}
	a.resetLocked()
	return nil
}

func (a *agent) resetLocked() {
	a.base = newBaseline(jvmti.Snapshot())
	a.written = 0
	a.log.Info("counts reset")
}

// End implements control.Controller: stop, flush, reset.
func (a *agent) End() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return "", errVMDead
	}
	if err := a.stopLocked(); err != nil {
		return "", err
	}
	path, err := a.flushLocked()
	if err != nil {
		return "", err
	}
	a.resetLocked()
	return path, nil
}

// Status implements control.Controller.
func (a *agent) Status() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	threads := jvmti.ThreadCounters()
	events := totalEvents(threads)
	live := 0
	for _, t := range threads {
		if !t.Ended {
			live++
		}
	}
	state := "stopped"
	switch {
	case a.dead:
		state = "vm-dead"
	case a.shut:
		state = "shut-down"
	case jvmti.Collecting():
		state = "collecting"
	}
	var names []string
	for _, m := range a.metrics {
		names = append(names, m.String())
	}
	metrics := "none"
	if len(names) > 0 {
		metrics = strings.Join(names, "+")
	}
	last := "-"
	if len(a.files) > 0 {
		last = a.files[len(a.files)-1]
	}
	return fmt.Sprintf("state=%s mode=%s metrics=%s backend=%s threads=%d live=%d events=%d files=%d last=%s",
		state, a.opts.Mode, metrics, a.ptt.Backend, len(threads), live, events, len(a.files), last)
}

// ForceGC implements control.Controller.
func (a *agent) ForceGC() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errVMDead
	}
	return a.vm.Do(jvmti.ForceGC)
}

// Shutdown implements control.Controller: profiling stops for good; the
// server closes itself after replying.
func (a *agent) Shutdown() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dead {
		return errVMDead
	}
	if err := a.stopLocked(); err != nil {
		return err
	}
	a.shut = true
	a.log.Info("profiling shut down by rtdriver")
	return nil
}
