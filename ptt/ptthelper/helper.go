// Package ptthelper lets JVMs without CAP_BPF use the eBPF PTT backend:
// a privileged helper loads the programs once (pttbpf.Load) and hands
// the two map FDs to each agent that connects to its unix socket
// (SCM_RIGHTS), with an owner token of its own; the agent passes them to
// ptt.SetupFromFDs. Holding the FDs needs no privilege.
//
// All clients share one work area. Each claims slots in it under its
// token (ptt_slot.h), and keeps its connection open for as long as it
// uses them: when the connection closes (the client exited or crashed),
// the helper frees every slot still held under that token
// (pttbpf.Objects.Reclaim), so dead clients never leak the area.
//
// An FD holder can write any slot: the socket's file permissions (and
// Server.Allow) decide who is trusted with every client's readings.
package ptthelper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/internal/peercred"
	"github.com/libjprof/libjprof/ptt/pttbpf"
)

// DefaultSocket is where jprof pttd listens, and where an agent that
// cannot load the eBPF programs itself looks for it.
const DefaultSocket = "/run/libjprof-pttd.sock"

// hello starts the payload sent with the FDs and versions the
// protocol; the client's owner token follows (4 bytes, little-endian).
const hello = "JPPTT2"

// Server hands out the map FDs of Objects.
type Server struct {
	Objects *pttbpf.Objects
	// Allow, if set, vets each client by its SO_PEERCRED credentials.
	Allow func(*unix.Ucred) bool
	// Reclaimed, if set, is told how many slots a departed client
	// left behind (for the helper's log), or why they could not be
	// freed.
	Reclaimed func(owner uint32, slots int, err error)

	mu      sync.Mutex
	ln      *net.UnixListener
	clients map[*net.UnixConn]bool
	next    uint32 // last owner token handed out
	wg      sync.WaitGroup
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
// (the FDs and its owner token) and stays open until the client closes
// it; then the slots still held under its token are freed.
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
		owner, err := s.answer(c)
		if err != nil { // refused, or went away: nothing handed out
			c.Close()
			continue
		}
		s.mu.Lock()
		if s.clients == nil {
			s.clients = map[*net.UnixConn]bool{}
		}
		s.clients[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.watch(c, owner)
	}
}

// watch waits for the client to close its connection (a client sends
// nothing more), then frees its slots.
func (s *Server) watch(c *net.UnixConn, owner uint32) {
	defer s.wg.Done()
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	c.Close()
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	n, err := s.Objects.Reclaim(owner)
	if s.Reclaimed != nil {
		s.Reclaimed(owner, n, err)
	}
}

func (s *Server) answer(c *net.UnixConn) (uint32, error) {
	if s.Allow != nil {
		cred, err := peercred.Of(c)
		if err != nil {
			return 0, fmt.Errorf("ptthelper: peer credentials: %w", err)
		}
		if !s.Allow(cred) {
			return 0, fmt.Errorf("ptthelper: pid %d uid %d refused", cred.Pid, cred.Uid)
		}
	}
	s.mu.Lock()
	s.next++
	if s.next < firstToken { // first use, or wrapped
		s.next = firstToken
	}
	owner := s.next
	s.mu.Unlock()
	msg := binary.LittleEndian.AppendUint32([]byte(hello), owner)
	rights := unix.UnixRights(s.Objects.Slots.FD(), s.Objects.Tids.FD())
	_, _, err := c.WriteMsgUnix(msg, rights, nil)
	return owner, err
}

// firstToken is the first owner token handed out: 0 marks a free slot
// and 1 is JP_PTT_OWNER_SELF, a process's own private work area.
const firstToken = 2

// Close stops Serve, removes the socket, and drops the clients'
// connections (freeing their slots: without the helper's programs
// attached the work area no longer counts anyway).
func (s *Server) Close() error {
	s.mu.Lock()
	if s.ln == nil {
		s.mu.Unlock()
		return nil
	}
	err := s.ln.Close() // also unlinks the path
	for c := range s.clients {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Lease is what a client gets from the helper: the work area and
// tid->slot map FDs (owned by the caller, for ptt.SetupFromFDs), and the
// owner token to claim slots under. The helper frees the slots held
// under Owner when the lease's connection closes: keep the Lease open
// for as long as any thread uses the work area (process exit closes it).
type Lease struct {
	SlotsFD, TidsFD int
	Owner           uint32
	conn            *net.UnixConn
}

// Close ends the lease; the helper frees the slots still held under
// Owner. It does not close the FDs.
func (l *Lease) Close() error { return l.conn.Close() }

// FetchTimeout bounds Fetch's wait for the helper's answer: a JVM at
// start waits for it, and something that accepts at the socket without
// answering must not stall it.
const FetchTimeout = 3 * time.Second

// Fetch connects to a helper at path and returns a Lease.
func Fetch(path string) (*Lease, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("ptthelper: connect %s: %w", path, err)
	}
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(2*4))
	_ = c.SetReadDeadline(time.Now().Add(FetchTimeout))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	_ = c.SetReadDeadline(time.Time{}) // the lease's connection lives on
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ptthelper: read from %s: %w", path, err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	msg := buf[:n]
	if len(msg) != len(hello)+4 || string(msg[:len(hello)]) != hello || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		c.Close()
		return nil, fmt.Errorf("ptthelper: %s: unexpected answer %q with %d FDs (refused, an older helper, or not a PTT helper)", path, msg, len(fds))
	}
	return &Lease{SlotsFD: fds[0], TidsFD: fds[1], Owner: binary.LittleEndian.Uint32(msg[len(hello):]), conn: c}, nil
}
