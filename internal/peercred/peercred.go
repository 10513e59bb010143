// Package peercred reads who is at the other end of a UNIX socket: the
// kernel's credentials of the connecting process (SO_PEERCRED), which it
// cannot forge. The agent's control channel and the PTT helper both
// admit a peer by them.
package peercred

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Of returns the credentials (pid, uid, gid) of c's peer as of connect.
func Of(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred, nil
}
