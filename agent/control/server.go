package control

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

const (
	// writeTimeout bounds writing one batch of replies: a client that
	// stops reading loses its connection instead of keeping a goroutine.
	writeTimeout = 10 * time.Second
	// rejectLinger bounds the time spent answering a refused connection.
	rejectLinger = 500 * time.Millisecond
	// maxRejecters bounds goroutines answering refused connections; under
	// a connection flood the rest are closed without an answer.
	maxRejecters = 4
	// maxAcceptBackoff caps the pause after a failed Accept.
	maxAcceptBackoff = time.Second
)

// Server is the agent side of rtdriver. Create it with Listen, run Serve in a
// goroutine of its own, and Close it when the agent stops.
type Server struct {
	cfg Config
	ctl Controller
	log *zap.Logger
	ln  net.Listener

	// slot is the execution slot: Controller calls run one line at a time
	// across all connections. A channel rather than a mutex so that a
	// waiter can give up after QueueTimeout or when the server stops.
	slot chan struct{}
	// done is closed when the server stops, by Close or by shutdown.
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
	// stopping is set, inside the slot, when a shutdown command succeeds:
	// no command may run after it, even before the listener is closed.
	stopping atomic.Bool
	// rejecters holds a token per goroutine answering a refused connection.
	rejecters chan struct{}
	// acceptDone is closed when Serve's accept loop has ended.
	acceptDone chan struct{}

	mu sync.Mutex
	// conns holds every open connection so that stop can close them; the
	// value is true for connections counted in active.
	conns   map[net.Conn]bool
	active  int
	closed  bool
	serving bool
	// wg counts connection goroutines, except while one is inside a
	// Controller call, and rejecters. Close waits for it; not waiting for
	// Controller calls keeps Close prompt and lets a Controller close the
	// server without deadlock.
	wg sync.WaitGroup
}

// Listen validates cfg and opens the listening socket. Commands are not
// accepted until Serve runs.
func Listen(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("rtdriver config: %w", err)
	}
	ln, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		ctl:        cfg.Controller,
		log:        cfg.Logger.Named("rtdriver"),
		ln:         ln,
		slot:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		rejecters:  make(chan struct{}, maxRejecters),
		acceptDone: make(chan struct{}),
		conns:      make(map[net.Conn]bool),
	}
	fields := []zap.Field{zap.Stringer("addr", ln.Addr()), zap.Bool("token", cfg.Token != "")}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		s.log.Warn("rtdriver listening beyond loopback", fields...)
	} else {
		s.log.Info("rtdriver listening", fields...)
	}
	return s, nil
}

// listen opens the socket on cfg.Port, or on the first free port of the
// range.
func listen(cfg Config) (net.Listener, error) {
	switch cfg.Port {
	case AnyPort:
		return listenPort(cfg.Host, 0)
	case 0:
	default:
		return listenPort(cfg.Host, cfg.Port)
	}
	for p := cfg.FirstPort; p <= cfg.LastPort; p++ {
		ln, err := listenPort(cfg.Host, p)
		if err == nil {
			return ln, nil
		}
		// Only a taken port means "try the next one"; anything else (a
		// bad host, say) fails the same on every port.
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("rtdriver listen: no free port in %d-%d on %s", cfg.FirstPort, cfg.LastPort, cfg.Host)
}

func listenPort(host string, port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("rtdriver listen: %w", err)
	}
	return ln, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until the server is closed, by Close or by a
// shutdown command, and then returns nil. Each connection is served in a
// goroutine of its own.
func (s *Server) Serve() error {
	s.mu.Lock()
	switch {
	case s.serving:
		s.mu.Unlock()
		return errors.New("rtdriver: Serve called twice")
	case s.closed:
		s.mu.Unlock()
		return nil
	}
	s.serving = true
	s.mu.Unlock()
	defer close(s.acceptDone)

	var backoff time.Duration
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			// Accept fails transiently when the process runs out of file
			// descriptors, which a JVM can: pause and retry rather than
			// spin or give up on control of the agent.
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			s.log.Warn("rtdriver accept failed", zap.Error(err), zap.Duration("retry_in", backoff))
			select {
			case <-time.After(backoff):
			case <-s.done:
				return nil
			}
			continue
		}
		backoff = 0
		s.accept(conn)
	}
}

// accept hands conn to a connection goroutine, or refuses it.
func (s *Server) accept(conn net.Conn) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		conn.Close()
		return
	case s.active >= s.cfg.MaxConns:
		s.mu.Unlock()
		s.reject(conn)
		return
	}
	s.conns[conn] = true
	s.active++
	s.wg.Add(1)
	s.mu.Unlock()
	go s.handle(conn)
}

// reject answers "ERR busy" on a connection over the limit and closes it.
func (s *Server) reject(conn net.Conn) {
	select {
	case s.rejecters <- struct{}{}:
	default:
		// Flooded: an answer costs a goroutine, closing costs nothing.
		conn.Close()
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.rejecters
		conn.Close()
		return
	}
	s.conns[conn] = false
	s.wg.Add(1)
	s.mu.Unlock()
	s.log.Warn("rtdriver connection refused: too many connections",
		zap.Stringer("remote", conn.RemoteAddr()), zap.Int("max", s.cfg.MaxConns))

	go func() {
		defer s.wg.Done()
		defer func() { <-s.rejecters }()
		defer s.forget(conn)
		conn.SetDeadline(time.Now().Add(rejectLinger))
		r := errReply(replyBusy, fmt.Errorf("too many connections (%d); try again later", s.cfg.MaxConns))
		if _, err := io.WriteString(conn, r.String()+"\n"); err != nil {
			return
		}
		// Half-close, then drain what the client already sent: closing a
		// socket with unread input makes the kernel send RST, which can
		// destroy the reply before the client has read it.
		if tcp, ok := conn.(*net.TCPConn); ok {
			tcp.CloseWrite()
		}
		io.Copy(io.Discard, io.LimitReader(conn, int64(s.cfg.MaxLine)))
	}()
}

// forget closes conn and drops it from the server's books.
func (s *Server) forget(conn net.Conn) {
	s.mu.Lock()
	if counted, ok := s.conns[conn]; ok {
		delete(s.conns, conn)
		if counted {
			s.active--
		}
	}
	s.mu.Unlock()
	conn.Close()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close stops the server: it closes the listener and every connection and
// waits for the connection goroutines, except one inside a Controller call,
// which cannot be interrupted; it finishes on its own and no Controller
// call starts after Close returns. Close may be called more than once and
// from a Controller method.
func (s *Server) Close() error {
	err := s.stop()
	s.wg.Wait()
	s.mu.Lock()
	serving := s.serving
	s.mu.Unlock()
	if serving {
		<-s.acceptDone
	}
	return err
}

// stop closes the listener and the connections without waiting, so that a
// connection goroutine can call it (shutdown).
func (s *Server) stop() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		conns := make([]net.Conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()

		if err := s.ln.Close(); err != nil {
			s.stopErr = fmt.Errorf("rtdriver close: %w", err)
		}
		for _, c := range conns {
			c.Close()
		}
		// Wake queued lines last, when their connections are already
		// closed: nothing is answered after Close.
		close(s.done)
		s.log.Info("rtdriver closed", zap.Stringer("addr", s.ln.Addr()), zap.Int("connections_closed", len(conns)))
	})
	return s.stopErr
}
