package control

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"go.uber.org/zap"
)

// slowCommand is how long a command runs before log-msg says where it
// waits.
const slowCommand = 15 * time.Second

// after says what a connection does once a line's replies are written.
type after int

const (
	afterNone     after = iota
	afterExit           // exit_rtdriver: close this connection
	afterShutdown       // shutdown succeeded: stop the server
)

var (
	errInvalidLine = errors.New("not run: another command on the line is invalid")
	errStopping    = errors.New("not run: the agent is shutting down")
)

// run validates and executes one authenticated line. It reports alive=false
// when the server closed during a Controller call; replies are then moot.
func (s *Server) run(c *connState, req *request) (replies []Reply, next after, alive bool) {
	if !req.valid() {
		replies = make([]Reply, len(req.cmds))
		for i, cmd := range req.cmds {
			err := cmd.err
			if err == nil {
				err = errInvalidLine
			}
			replies[i] = errReply(cmd.name, err)
		}
		c.badLine("invalid command")
		return replies, afterNone, true
	}
	if !req.needsSlot() {
		replies, next = s.execute(c, req)
		return replies, next, true
	}

	if err := s.acquire(); err != nil {
		c.log.Warn("rtdriver line not run", zap.Error(err))
		return notRun(req, err), afterNone, true
	}
	// Release before the replies are written: a client that stops reading
	// must not hold up other connections' commands.
	defer func() { <-s.slot }()
	if s.stopping.Load() || s.isClosed() {
		return notRun(req, errStopping), afterNone, true
	}
	c.leave()
	replies, next = s.execute(c, req)
	return replies, next, c.rejoin()
}

// acquire waits for the execution slot, at most QueueTimeout.
func (s *Server) acquire() error {
	select {
	case s.slot <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.cfg.QueueTimeout)
	defer t.Stop()
	select {
	case s.slot <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("busy: another command is still running after %v; not run", s.cfg.QueueTimeout)
	case <-s.done:
		return errStopping
	}
}

func notRun(req *request, err error) []Reply {
	replies := make([]Reply, len(req.cmds))
	for i, cmd := range req.cmds {
		replies[i] = errReply(cmd.name, err)
	}
	return replies
}

// execute runs a valid line's commands in order. After a failure the rest
// of the line does not run: "start,flush" must not flush when start failed.
func (s *Server) execute(c *connState, req *request) ([]Reply, after) {
	replies := make([]Reply, 0, len(req.cmds))
	next := afterNone
	failed := ""
	for _, cmd := range req.cmds {
		if failed != "" {
			replies = append(replies, errReply(cmd.name, fmt.Errorf("not run: %s failed", failed)))
			continue
		}
		t0 := time.Now()
		// A command that hangs leaves no line of its own: this one says
		// where it waits (a cgo call's frame names the C function).
		slow := time.AfterFunc(slowCommand, func() {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			c.log.Warn("rtdriver command still running", zap.String("cmd", cmd.name),
				zap.Duration("after", slowCommand), zap.ByteString("goroutines", buf))
		})
		r := s.exec1(cmd)
		slow.Stop()
		replies = append(replies, r)

		level := zap.InfoLevel
		if cmd.spec.quiet && r.OK {
			level = zap.DebugLevel
		}
		c.log.Log(level, "rtdriver command", zap.String("cmd", cmd.name), zap.Bool("ok", r.OK),
			zap.String("detail", r.Detail), zap.Duration("took", time.Since(t0)))

		if !r.OK {
			failed = cmd.name
			continue
		}
		switch cmd.spec.name {
		case cmdExit:
			next = afterExit
		case cmdShutdown:
			// Set inside the slot, so no line queued behind this one runs.
			s.stopping.Store(true)
			next = afterShutdown
		}
	}
	return replies, next
}

// exec1 runs one valid command.
func (s *Server) exec1(cmd command) Reply {
	name := cmd.spec.name
	var detail string
	var err error
	switch name {
	case cmdPing:
		detail = "pong"
	case cmdHelp:
		detail = helpText()
	case cmdExit:
		detail = "bye"
	case cmdStart:
		err = s.guard(name, func() error { return s.ctl.Start(cmd.delay) })
		if cmd.delay > 0 {
			detail = "in " + cmd.delay.String()
		}
	case cmdFlush:
		flush := s.ctl.Flush
		if cmd.arg == flushInterval {
			flush = s.ctl.FlushInterval
		}
		err = s.guard(name, func() (e error) { detail, e = flush(); return e })
	case cmdEnd:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.End(); return e })
	case cmdReset:
		err = s.guard(name, s.ctl.Reset)
	case cmdStatus:
		err = s.guard(name, func() error { detail = s.ctl.Status(); return nil })
	case cmdFGC:
		err = s.guard(name, s.ctl.ForceGC)
	case cmdShutdown:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.Shutdown(); return e })
	case cmdRoots:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.Roots(cmd.arg); return e })
	case cmdDetach:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.Detach(); return e })
	case cmdHeap:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.Heap(); return e })
	case cmdHeapDump:
		err = s.guard(name, func() (e error) { detail, e = s.ctl.HeapDump(); return e })
	default:
		// The command table and this switch disagree: a bug, but not one
		// worth a panic in a customer's JVM.
		err = errors.New("not implemented")
	}
	var noop Noop
	if errors.As(err, &noop) {
		return okReply(name, string(noop))
	}
	if err != nil {
		return errReply(name, err)
	}
	return okReply(name, detail)
}

// guard calls fn, turning a panic into an error: the execution slot must be
// released and the client answered even when the Controller has a bug.
func (s *Server) guard(cmd string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("rtdriver Controller panicked", zap.String("cmd", cmd), zap.Any("panic", r), zap.Stack("stack"))
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	return fn()
}
