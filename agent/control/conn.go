package control

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.uber.org/zap"
)

// maxLoggedBadLines bounds how many bad lines of one connection reach
// log-msg: a peer spraying garbage should not fill the disk.
const maxLoggedBadLines = 3

var (
	errLineTooLong = errors.New("line too long")
	// errLineTimeout: a line was begun but not ended within LineTimeout.
	errLineTimeout = errors.New("line not ended in time")
)

// connState is one client connection, owned by its goroutine.
type connState struct {
	s    *Server
	conn net.Conn
	// entry is the server's record of this connection (under s.mu).
	entry *connEntry
	r     *bufio.Reader
	w     *bufio.Writer
	log   *zap.Logger

	// counted: this goroutine is counted in s.wg (see Server.wg).
	counted bool
	// discarding: the rest of an over-long line is still to be skipped.
	discarding bool
	badLines   int
}

// handle serves one connection until it ends, whatever happens in it.
func (s *Server) handle(conn net.Conn, e *connEntry) {
	c := &connState{
		s:       s,
		conn:    conn,
		entry:   e,
		r:       bufio.NewReaderSize(conn, s.cfg.MaxLine+len("\r\n")),
		w:       bufio.NewWriter(conn),
		log:     s.log.With(zap.Stringer("remote", conn.RemoteAddr())),
		counted: true,
	}
	defer func() {
		// This code runs in a customer's JVM: a bug here must cost one
		// connection, never the process.
		if r := recover(); r != nil {
			c.log.Error("rtdriver connection panicked", zap.Any("panic", r), zap.Stack("stack"))
		}
		s.forget(conn)
		if c.counted {
			s.wg.Done()
		}
	}()
	c.log.Debug("rtdriver connection opened")
	// The peer was checked as it was accepted (Server.accept).
	c.serve()
	c.log.Debug("rtdriver connection closed")
}

// serve reads and answers lines until the connection ends.
func (c *connState) serve() {
	for {
		line, err := c.readLine()
		switch {
		case errors.Is(err, errEvicted):
			c.log.Debug("rtdriver connection evicted")
			c.s.goodbye(c.conn, c.s.busyReply())
			return
		case errors.Is(err, errLineTimeout):
			c.badLine("line not ended in time")
			c.s.goodbye(c.conn, errReply(replyLine, fmt.Errorf("no end of line within %v; connection closed", c.s.cfg.LineTimeout)))
			return
		case errors.Is(err, errLineTooLong):
			c.badLine("over-long line")
			if c.write(errReply(replyLine, fmt.Errorf("longer than %d bytes; discarded", c.s.cfg.MaxLine))) != nil {
				return
			}
			continue
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.log.Debug("rtdriver connection read ended", zap.Error(err))
			}
			return
		}

		req, err := parseLine(line)
		if err != nil {
			c.badLine(err.Error())
			if c.write(lineReply(err)) != nil {
				return
			}
			continue
		}
		if len(req.cmds) == 0 {
			continue // blank line
		}
		if err := c.authenticate(&req); err != nil {
			c.log.Warn("rtdriver authentication failed", zap.Error(err))
			c.write(lineReply(err))
			return
		}

		replies, next, alive := c.s.run(c, &req)
		if !alive || c.s.isClosed() {
			return // the server closed meanwhile: nothing more is said
		}
		if err := c.write(replies...); err != nil {
			c.log.Debug("rtdriver reply not delivered", zap.Error(err))
			return
		}
		switch next {
		case afterExit:
			return
		case afterShutdown:
			c.s.stop()
			return
		}
	}
}

// readLine returns the next line without its terminator, valid until the
// next read. A line longer than MaxLine yields errLineTooLong as soon as
// that is known; its remainder is skipped by the next call, through the
// reader's fixed buffer, so an over-long line never costs more memory.
//
// The connection may wait IdleTimeout for the first byte of a line, but
// only LineTimeout from there to its end. While it waits it may be evicted
// for a new connection: readLine then returns errEvicted, even when a line
// arrived meanwhile.
func (c *connState) readLine() ([]byte, error) {
	if err := c.setWait(true, c.s.cfg.IdleTimeout); err != nil {
		return nil, err
	}
	line, err := c.readLineIn()
	if werr := c.setWait(false, 0); werr != nil {
		return nil, werr
	}
	return line, err
}

func (c *connState) readLineIn() ([]byte, error) {
	if c.r.Buffered() == 0 && !c.discarding {
		if _, err := c.r.Peek(1); err != nil {
			return nil, err
		}
	}
	// A line has begun.
	if err := c.setWait(true, c.s.cfg.LineTimeout); err != nil {
		return nil, err
	}
	for c.discarding {
		_, err := c.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
		case err != nil:
			return nil, partialLineErr(err)
		default:
			c.discarding = false
		}
	}
	line, err := c.r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		c.discarding = true
		return nil, errLineTooLong
	case errors.Is(err, io.EOF) && len(line) > 0:
		// A last line without "\n" (nc without -q, say) still counts.
	case err != nil:
		return nil, partialLineErr(err)
	}
	line = trimEOL(line)
	if len(line) > c.s.cfg.MaxLine {
		return nil, errLineTooLong
	}
	return line, nil
}

// partialLineErr turns a read timeout in the middle of a line into
// errLineTimeout.
func partialLineErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", errLineTimeout, err)
	}
	return err
}

// setWait records whether the connection waits for input, and when it
// does, sets its read deadline d from now. It returns errEvicted once the
// connection gave its place away. The deadline is set under s.mu, so that
// it never overrides the one evictLocked sets to wake the goroutine. The
// end of a wait, a line read, is the connection's last sign of life: the
// one whose last sign is oldest is evicted first.
func (c *connState) setWait(waiting bool, d time.Duration) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.entry.evicted {
		return errEvicted
	}
	c.entry.waiting = waiting
	if waiting {
		c.conn.SetReadDeadline(time.Now().Add(d))
	} else {
		c.entry.since = time.Now()
	}
	return nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// authenticate checks the line's token against the server's, when it has
// one.
func (c *connState) authenticate(req *request) error {
	want := c.s.cfg.Token
	switch {
	case want == "":
		return nil
	case !req.hasToken:
		return lineErrorf(replyAuth, "token required: this agent was started with TOKEN=; give it with rtdriver -t <T> or RTDRIVER_TOKEN=<T> (a raw client begins the line with token=<T>,)")
	case subtle.ConstantTimeCompare([]byte(req.token), []byte(want)) != 1:
		return lineErrorf(replyAuth, "wrong token")
	}
	return nil
}

// write sends replies, each on its own line.
func (c *connState) write(replies ...Reply) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	for _, r := range replies {
		c.w.WriteString(r.String())
		c.w.WriteByte('\n')
	}
	if err := c.w.Flush(); err != nil {
		return fmt.Errorf("write reply: %w", err)
	}
	return nil
}

// badLine logs a rejected line, a bounded number of times per connection.
func (c *connState) badLine(reason string) {
	c.badLines++
	switch {
	case c.badLines <= maxLoggedBadLines:
		c.log.Warn("rtdriver bad line", zap.String("reason", reason))
	case c.badLines == maxLoggedBadLines+1:
		c.log.Warn("rtdriver bad lines: not logging more from this connection")
	}
}

// lineReply turns a line-level error into its reply.
func lineReply(err error) Reply {
	var le *lineError
	if errors.As(err, &le) {
		return Reply{Cmd: le.kind, Detail: oneLine(le.reason)}
	}
	return errReply(replyLine, err)
}

// leave marks the goroutine as inside a Controller call: Close does not wait
// for it (see Server.wg).
func (c *connState) leave() {
	c.s.wg.Done()
	c.counted = false
}

// rejoin undoes leave. It reports false when the server closed meanwhile;
// the goroutine must then end without touching the connection.
func (c *connState) rejoin() bool {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.closed {
		return false
	}
	c.s.wg.Add(1)
	c.counted = true
	return true
}
