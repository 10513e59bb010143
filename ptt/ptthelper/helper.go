// Package ptthelper lets JVMs without CAP_BPF use the eBPF PTT backend:
// a privileged helper loads the programs once (pttbpf.Load) and hands
// the two map FDs to each agent that connects to its unix socket
// (SCM_RIGHTS); the agent passes them to ptt.SetupFromFDs. Holding the
// FDs needs no privilege.
//
// All clients share one work area, and an FD holder can write any slot:
// the socket's file permissions (and Server.Allow) decide who is trusted
// with every client's readings.
package ptthelper

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/ptt/pttbpf"
)

// DefaultSocket is where jprof pttd listens, and where an agent that
// cannot load the eBPF programs itself looks for it.
const DefaultSocket = "/run/libjprof-pttd.sock"

// hello is the payload sent with the FDs; it versions the protocol.
const hello = "JPPTT1"

// Server hands out the map FDs of Objects.
type Server struct {
	Objects *pttbpf.Objects
	// Allow, if set, vets each client by its SO_PEERCRED credentials.
	Allow func(*unix.Ucred) bool

	mu sync.Mutex
	ln *net.UnixListener
}

// Listen binds the unix socket at path (which must not exist).
func (s *Server) Listen(path string) error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("ptthelper: listen %s: %w", path, err)
	}
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	return nil
}

// Serve answers clients until Close. Each connection gets one message
// and is closed.
func (s *Server) Serve() error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return errors.New("ptthelper: Serve before Listen")
	}
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("ptthelper: accept: %w", err)
		}
		// One short write per client: no need for a goroutine each.
		err = s.answer(c)
		c.Close()
		_ = err // a client that went away is not the server's failure
	}
}

func (s *Server) answer(c *net.UnixConn) error {
	if s.Allow != nil {
		raw, err := c.SyscallConn()
		if err != nil {
			return err
		}
		var cred *unix.Ucred
		var credErr error
		if err := raw.Control(func(fd uintptr) {
			cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		}); err != nil {
			return err
		}
		if credErr != nil {
			return fmt.Errorf("ptthelper: peer credentials: %w", credErr)
		}
		if !s.Allow(cred) {
			return fmt.Errorf("ptthelper: pid %d uid %d refused", cred.Pid, cred.Uid)
		}
	}
	rights := unix.UnixRights(s.Objects.Slots.FD(), s.Objects.Tids.FD())
	_, _, err := c.WriteMsgUnix([]byte(hello), rights, nil)
	return err
}

// Close stops Serve and removes the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Close() // also unlinks the path
}

// Fetch connects to a helper at path and returns the work area and
// tid->slot map FDs, owned by the caller (for ptt.SetupFromFDs).
func Fetch(path string) (slotsFD, tidsFD int, err error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return -1, -1, fmt.Errorf("ptthelper: connect %s: %w", path, err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return -1, -1, fmt.Errorf("ptthelper: read from %s: %w", path, err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	if string(buf[:n]) != hello || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, -1, fmt.Errorf("ptthelper: %s: unexpected answer %q with %d FDs (refused, or not a PTT helper)", path, buf[:n], len(fds))
	}
	return fds[0], fds[1], nil
}
