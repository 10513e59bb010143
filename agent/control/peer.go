package control

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/libjprof/libjprof/internal/peercred"
)

// Who may drive the agent: the user the JVM runs as, or root, as with the
// JDK's own attach mechanism. Another user of the machine could otherwise
// start collection in, or write files from, a JVM that is not theirs.

// errPeerUnknown: the peer's user cannot be told, which is the case of a
// peer on another machine (TCP beyond loopback): the token decides.
var errPeerUnknown = errors.New("peer user unknown")

// checkPeer says whether the peer of conn may drive this agent: nil when it
// runs as owner or as root, or when it is on another machine and the
// server requires a token (checked on its first line). The error is the
// reason given to the peer.
func checkPeer(conn net.Conn, owner int, token bool) error {
	uid, err := peerUID(conn)
	switch {
	case errors.Is(err, errPeerUnknown) && token:
		return nil
	case errors.Is(err, errPeerUnknown):
		return fmt.Errorf("cannot tell which user connected from %s, and this agent has no TOKEN=", conn.RemoteAddr())
	case err != nil:
		return fmt.Errorf("cannot tell which user connected: %v", err)
	case uid != owner && uid != 0:
		return fmt.Errorf("uid %d may not control a JVM of uid %d (only its owner or root may)", uid, owner)
	}
	return nil
}

// peerUID is the user of the process at the other end of conn: from the
// kernel's credentials for a UNIX socket, from the socket table for TCP.
func peerUID(conn net.Conn) (int, error) {
	switch c := conn.(type) {
	case *net.UnixConn:
		cred, err := peercred.Of(c)
		if err != nil {
			return 0, err
		}
		return int(cred.Uid), nil
	case *net.TCPConn:
		local, _ := c.LocalAddr().(*net.TCPAddr)
		remote, _ := c.RemoteAddr().(*net.TCPAddr)
		if local == nil || remote == nil {
			return 0, errors.New("no TCP addresses")
		}
		return tcpPeerUID(local, remote)
	}
	return 0, fmt.Errorf("unsupported connection %T", conn)
}

// tcpPeerUID finds the owner of the peer's socket of a TCP connection
// accepted at local from remote. A local peer, in this network
// namespace (always so over loopback), has a socket whose local address
// is remote and whose remote address is local, listed with its owner's
// uid in /proc/net/tcp or tcp6; a peer on another machine has none.
func tcpPeerUID(local, remote *net.TCPAddr) (int, error) {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, err := findSocketUID(f, remote, local)
		if err == nil {
			return uid, nil
		}
		if !errors.Is(err, errPeerUnknown) && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	if remote.IP.IsLoopback() {
		// Over loopback the peer is here: its socket is gone already
		// (it closed) or the table could not be read.
		return 0, fmt.Errorf("the socket of the peer %s is not in /proc/net/tcp (closed already?)", remote)
	}
	return 0, errPeerUnknown
}

// findSocketUID scans one /proc/net/tcp* table, line by line so that a
// busy machine's table costs no memory, for the socket from src to dst.
func findSocketUID(table string, src, dst *net.TCPAddr) (int, error) {
	f, err := os.Open(table)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the column titles
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		l, ok1 := parseProcAddr(fields[1])
		r, ok2 := parseProcAddr(fields[2])
		if !ok1 || !ok2 || l.Port != src.Port || r.Port != dst.Port || !l.IP.Equal(src.IP) || !r.IP.Equal(dst.IP) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return 0, fmt.Errorf("%s: bad uid %q", table, fields[7])
		}
		return uid, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", table, err)
	}
	return 0, errPeerUnknown
}

// parseProcAddr parses an address of /proc/net/tcp*: the IP as 32-bit
// words in hex, each in the host's byte order, a colon and the port in hex.
func parseProcAddr(s string) (net.TCPAddr, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok || (len(ipHex) != 8 && len(ipHex) != 32) {
		return net.TCPAddr{}, false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return net.TCPAddr{}, false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil {
		return net.TCPAddr{}, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return net.TCPAddr{IP: ip, Port: int(port)}, true
}
