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
	// goodbyeLinger bounds the time spent saying a last reply (ERR busy,
	// ERR line) before closing a connection.
	goodbyeLinger = 500 * time.Millisecond
	// goodbyeDrain bounds what is read, and thrown away, from a connection
	// being closed after its last reply.
	goodbyeDrain = 64 << 10
	// maxRejecters bounds goroutines answering refused connections; beyond
	// it, the accept loop answers them itself, which slows accepting down
	// instead of dropping connections without an answer.
	maxRejecters = 32
	// maxAcceptBackoff caps the pause after a failed Accept.
	maxAcceptBackoff = time.Second
)

// Server is the agent side of rtdriver. Create it with Listen, run Serve in a
// goroutine of its own, and Close it when the agent stops.
type Server struct {
	cfg Config
	ctl Controller
	log *zap.Logger
	// lns are the listeners: the UNIX socket first, when there is one,
	// then TCP. Guarded by mu: ListenUnix adds or replaces the UNIX one
	// while the server runs.
	lns []net.Listener
	// sock is the UNIX listener's socket file, nil without one.
	sock *unixSock
	// loops counts Serve's accept loops, ListenUnix's included.
	loops sync.WaitGroup

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
	// acceptDone is closed when Serve's accept loops have ended.
	acceptDone chan struct{}

	mu sync.Mutex
	// conns holds every open connection so that stop can close them.
	conns map[net.Conn]*connEntry
	// active counts the connections that hold one of the MaxConns places.
	active  int
	closed  bool
	serving bool
	// wg counts connection goroutines, except while one is inside a
	// Controller call, and rejecters. Close waits for it; not waiting for
	// Controller calls keeps Close prompt and lets a Controller close the
	// server without deadlock.
	wg sync.WaitGroup
}

// connEntry is the server's record of one open connection, guarded by
// Server.mu.
type connEntry struct {
	// counted: the connection holds one of the MaxConns places.
	counted bool
	// waiting: its goroutine is waiting for the next line (idle or with a
	// partial line), so it may be evicted. since is when it connected or
	// its last line was read.
	waiting bool
	since   time.Time
	// evicted: it gave its place to a newer connection; its goroutine
	// answers "ERR busy" and closes it.
	evicted bool
}

// errEvicted ends a connection that gave its place to a newer one.
var errEvicted = errors.New("evicted for a new connection")

// Listen validates cfg and opens the listening sockets: the UNIX socket
// when cfg.Socket is set, TCP unless cfg.NoTCP. Commands are not accepted
// until Serve runs.
func Listen(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("rtdriver config: %w", err)
	}
	var lns []net.Listener
	var sock *unixSock
	if cfg.Socket != "" {
		ln, err := listenUnix(cfg.Socket, cfg.Owner)
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		sock = newUnixSock(ln, cfg.Socket)
	}
	if !cfg.NoTCP {
		ln, err := listen(cfg)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	s := &Server{
		cfg:        cfg,
		ctl:        cfg.Controller,
		log:        cfg.Logger.Named("rtdriver"),
		lns:        lns,
		sock:       sock,
		slot:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		rejecters:  make(chan struct{}, maxRejecters),
		acceptDone: make(chan struct{}),
		conns:      make(map[net.Conn]*connEntry),
	}
	var addrs []string
	beyond := false
	for _, ln := range lns {
		addrs = append(addrs, ln.Addr().Network()+":"+ln.Addr().String())
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
			beyond = true
		}
	}
	fields := []zap.Field{zap.Strings("addrs", addrs), zap.Bool("token", cfg.Token != ""),
		zap.Int("owner_uid", cfg.Owner)}
	if beyond {
		s.log.Warn("rtdriver listening beyond loopback", fields...)
	} else {
		s.log.Info("rtdriver listening", fields...)
	}
	return s, nil
}

// listen opens the TCP socket on cfg.Port, or on the first free port of
// the range.
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

// Addr returns the address the server listens on: its UNIX socket when
// it has one, else its TCP address.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lns[0].Addr()
}

// Addrs returns every address the server listens on, the UNIX socket first.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs := make([]net.Addr, len(s.lns))
	for i, ln := range s.lns {
		addrs[i] = ln.Addr()
	}
	return addrs
}

// unixSock is a UNIX listener and the socket file it made, by device and
// inode: a file of that name made later (after the directory was
// removed, say) is not the one it listens on.
type unixSock struct {
	ln       net.Listener
	path     string
	dev, ino uint64
}

func newUnixSock(ln net.Listener, path string) *unixSock {
	u := &unixSock{ln: ln, path: path}
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) == nil {
		u.dev, u.ino = uint64(st.Dev), st.Ino
	}
	return u
}

// there says whether the listener's socket file is still at its path.
func (u *unixSock) there() bool {
	var st syscall.Stat_t
	return syscall.Lstat(u.path, &st) == nil && uint64(st.Dev) == u.dev && st.Ino == u.ino
}

// SocketMissing says whether no client can reach the server through its
// UNIX socket: it has none (its directory could not be used when it
// started, and it listens on TCP alone), or its socket file is gone from
// its path (removed with its directory) or is another's.
func (s *Server) SocketMissing() bool {
	s.mu.Lock()
	u := s.sock
	s.mu.Unlock()
	return u == nil || !u.there()
}

// ListenUnix opens the UNIX socket at path (as Listen does, for the
// server's owner) and serves it too, in place of one whose file is gone
// (SocketMissing): a server that could not make its socket when it
// started, or whose socket was removed, becomes reachable through it
// again without a restart of its program.
func (s *Server) ListenUnix(path string) error {
	ln, err := listenUnix(path, s.cfg.Owner)
	if err != nil {
		return err
	}
	u := newUnixSock(ln, path)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return errors.New("rtdriver: the server is closed")
	}
	old := s.sock
	s.sock = u
	if old != nil {
		for i, l := range s.lns {
			if l == old.ln {
				s.lns = append(s.lns[:i], s.lns[i+1:]...)
				break
			}
		}
	}
	s.lns = append([]net.Listener{ln}, s.lns...)
	s.cfg.Socket = path
	if s.serving {
		// Under mu, with closed false: Serve's Wait cannot have
		// returned (its loops end only once the server is closed).
		s.startLoop(ln)
	}
	s.mu.Unlock()
	if old != nil {
		// Its file is gone or another's: closing must not unlink
		// whatever has the name now.
		if ul, ok := old.ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		old.ln.Close()
	}
	s.log.Info("rtdriver listening again on its UNIX socket", zap.String("addr", "unix:"+path))
	return nil
}

// startLoop runs an accept loop on ln, counted in s.loops.
func (s *Server) startLoop(ln net.Listener) {
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.acceptLoop(ln)
	}()
}

// listening says whether ln is still one of the server's listeners (not
// replaced by ListenUnix).
func (s *Server) listening(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lns {
		if l == ln {
			return true
		}
	}
	return false
}

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
	for _, ln := range s.lns {
		s.startLoop(ln)
	}
	s.mu.Unlock()
	defer close(s.acceptDone)
	s.loops.Wait()
	return nil
}

// acceptLoop accepts connections on ln until the server is closed.
func (s *Server) acceptLoop(ln net.Listener) {
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.isClosed() || !s.listening(ln) {
				return
			}
			// Accept fails transiently when the process runs out of file
			// descriptors, which a JVM can: pause and retry rather than
			// spin or give up on control of the agent.
			backoff = min(max(2*backoff, 5*time.Millisecond), maxAcceptBackoff)
			s.log.Warn("rtdriver accept failed", zap.Stringer("addr", ln.Addr()), zap.Error(err), zap.Duration("retry_in", backoff))
			select {
			case <-time.After(backoff):
			case <-s.done:
				return
			}
			continue
		}
		backoff = 0
		s.accept(conn)
	}
}

// accept hands conn to a connection goroutine, or refuses it.
func (s *Server) accept(conn net.Conn) {
	// Who the peer is, before it may take a place or make another
	// connection give up its own: a user who may not drive the agent
	// must not knock the owner's sessions out either. (A peer on another
	// machine, known by its token only, is checked at its first line.)
	if err := checkPeer(conn, s.cfg.Owner, s.cfg.Token != ""); err != nil {
		s.log.Warn("rtdriver connection refused", zap.Stringer("remote", conn.RemoteAddr()), zap.Error(err))
		s.reject(conn, errReply(replyAuth, err))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	if s.active >= s.cfg.MaxConns && !s.evictLocked() {
		s.mu.Unlock()
		s.log.Warn("rtdriver connection refused: too many connections",
			zap.Stringer("remote", conn.RemoteAddr()), zap.Int("max", s.cfg.MaxConns))
		s.reject(conn, s.busyReply())
		return
	}
	e := &connEntry{counted: true, waiting: true, since: time.Now()}
	s.conns[conn] = e
	s.active++
	s.wg.Add(1)
	s.mu.Unlock()
	go s.handle(conn, e)
}

// evictLocked frees a place for a new connection: of the connections
// waiting for their next line, idle or in the middle of one, the one whose
// last line (or connection) is oldest gives up its place. Without this,
// MaxConns clients that connect and send nothing, or half a line, lock
// every other client out until they time out. It reports false when every
// connection is busy with a command. s.mu is held.
func (s *Server) evictLocked() bool {
	var victim net.Conn
	var oldest *connEntry
	for c, e := range s.conns {
		if e.counted && e.waiting && !e.evicted && (oldest == nil || e.since.Before(oldest.since)) {
			victim, oldest = c, e
		}
	}
	if victim == nil {
		return false
	}
	oldest.evicted = true
	oldest.counted = false
	s.active--
	// Wake its goroutine out of its read. Under s.mu, so that the
	// goroutine cannot set a later deadline over this one (see setWait).
	victim.SetReadDeadline(time.Unix(1, 0))
	s.log.Warn("rtdriver connection evicted for a new one: too many connections",
		zap.Stringer("remote", victim.RemoteAddr()), zap.Int("max", s.cfg.MaxConns),
		zap.Duration("waited", time.Since(oldest.since)))
	return true
}

// busyReply is the answer to a connection that gets no place.
func (s *Server) busyReply() Reply {
	return errReply(replyBusy, fmt.Errorf("too many connections (%d); try again later", s.cfg.MaxConns))
}

// reject answers r (ERR busy to a connection over the limit, ERR auth to
// a peer that may not drive the agent) and closes the connection. Every
// refused connection is answered: one closed without a word reads as an
// empty reply or a reset, which says nothing to the user.
func (s *Server) reject(conn net.Conn, r Reply) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.conns[conn] = &connEntry{}
	// The token and wg.Add under s.mu, with closed checked: Close must not
	// be waiting on wg while it grows from zero.
	helper := false
	select {
	case s.rejecters <- struct{}{}:
		helper = true
		s.wg.Add(1)
	default:
	}
	s.mu.Unlock()
	if !helper {
		// Flooded: answer here. Accepting slows down meanwhile, and the
		// kernel's backlog holds the next connections, so none is dropped.
		s.goodbye(conn, r)
		return
	}
	go func() {
		defer s.wg.Done()
		defer func() { <-s.rejecters }()
		s.goodbye(conn, r)
	}()
}

// goodbye sends a last reply on conn and closes it, within goodbyeLinger.
func (s *Server) goodbye(conn net.Conn, r Reply) {
	defer s.forget(conn)
	conn.SetDeadline(time.Now().Add(goodbyeLinger))
	if _, err := io.WriteString(conn, r.String()+"\n"); err != nil {
		return
	}
	// Half-close, then drain what the client sent until it closes too:
	// closing a socket with unread input makes the kernel send RST, which
	// can destroy the reply before the client has read it.
	if hc, ok := conn.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(conn, goodbyeDrain))
}

// forget closes conn and drops it from the server's books.
func (s *Server) forget(conn net.Conn) {
	s.mu.Lock()
	if e, ok := s.conns[conn]; ok {
		delete(s.conns, conn)
		if e.counted {
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
		lns := append([]net.Listener(nil), s.lns...)
		s.mu.Unlock()

		// Closing the UNIX listener also removes its socket file.
		for _, ln := range lns {
			if err := ln.Close(); err != nil && s.stopErr == nil {
				s.stopErr = fmt.Errorf("rtdriver close: %w", err)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		// Wake queued lines last, when their connections are already
		// closed: nothing is answered after Close.
		close(s.done)
		s.log.Info("rtdriver closed", zap.Stringer("addr", s.Addr()), zap.Int("connections_closed", len(conns)))
	})
	return s.stopErr
}
