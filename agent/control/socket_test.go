package control

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// socketTestBase is an empty directory for the sockets of one test.
func socketTestBase(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "ctl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	return base
}

// The UNIX socket: in a private directory, mode 0600, served, found by
// FindAgents, removed by Close; a stale one is replaced, a live one is not.
func TestUnixSocket(t *testing.T) {
	base := socketTestBase(t)
	uid := os.Geteuid()
	path := SocketPath(base, uid, 4242)
	assert.Equal(t, filepath.Join(base, ".libjprof-"+strconv.Itoa(uid), "4242.sock"), path)

	// A socket a killed JVM of the same PID left behind: nothing listens,
	// so it is not an agent of the process that has the PID now.
	require.NoError(t, os.Mkdir(filepath.Dir(path), 0o700))
	old, err := net.Listen("unix", path)
	require.NoError(t, err)
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	assert.Empty(t, AgentsOfPID(base, 4242), "a stale socket")

	f := newFake()
	s, err := Listen(Config{Controller: f, Socket: path, NoTCP: true})
	require.NoError(t, err)
	go s.Serve()
	assert.Len(t, s.Addrs(), 1)
	assert.Equal(t, path, s.Addr().String())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Lstat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	agents, err := FindAgents(base, uid)
	require.NoError(t, err)
	assert.Equal(t, []Agent{{PID: 4242, UID: uid, Path: path}}, agents)
	assert.Equal(t, []Agent{{PID: 4242, UID: uid, Path: path, HostPID: 4242}}, AgentsOfPID(base, 4242))

	c, err := DialSocket(context.Background(), path, "")
	require.NoError(t, err)
	replies, err := c.Do(context.Background(), "ping")
	require.NoError(t, err)
	assert.Equal(t, "OK ping: pong", replies[0].String())
	c.Close()

	// A second agent of the same PID (another PID namespace sharing
	// /tmp) must not take the live socket away.
	_, err = Listen(Config{Controller: newFake(), Socket: path, NoTCP: true})
	assert.ErrorContains(t, err, "another agent listens on it")

	require.NoError(t, s.Close())
	_, err = os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "socket left behind after Close")
}

// Both channels at once: the UNIX socket first, then TCP.
func TestUnixAndTCP(t *testing.T) {
	base := socketTestBase(t)
	s, err := Listen(Config{Controller: newFake(), Socket: SocketPath(base, os.Geteuid(), 7), Port: AnyPort})
	require.NoError(t, err)
	go s.Serve()
	defer s.Close()
	addrs := s.Addrs()
	require.Len(t, addrs, 2)
	assert.Equal(t, "unix", addrs[0].Network())
	assert.Equal(t, "tcp", addrs[1].Network())
	for _, a := range addrs {
		c, err := DialNet(context.Background(), a.Network(), a.String(), "")
		require.NoError(t, err)
		replies, err := c.Do(context.Background(), "ping")
		require.NoError(t, err, a)
		assert.True(t, replies[0].OK, a)
		c.Close()
	}
}

// A server without its UNIX socket (on TCP alone: its directory was not
// usable when it started), or whose socket file was removed, opens it
// again while it serves (ListenUnix): reachable through it, TCP kept;
// the listener it replaces is retired without unlinking the new file,
// and Close still removes the socket and returns.
func TestListenUnixAgain(t *testing.T) {
	base := socketTestBase(t)
	path := SocketPath(base, os.Geteuid(), 9)
	s, err := Listen(Config{Controller: newFake(), Port: AnyPort})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	assert.True(t, s.SocketMissing(), "TCP alone")
	ping := func(network, addr string) {
		t.Helper()
		c, err := DialNet(context.Background(), network, addr, "")
		require.NoError(t, err, addr)
		defer c.Close()
		replies, err := c.Do(context.Background(), "ping")
		require.NoError(t, err, addr)
		assert.True(t, replies[0].OK, addr)
	}
	tcp := s.Addr().String()
	for i := 0; i < 2; i++ {
		require.NoError(t, s.ListenUnix(path))
		assert.False(t, s.SocketMissing())
		addrs := s.Addrs()
		require.Len(t, addrs, 2)
		assert.Equal(t, "unix:"+path, addrs[0].Network()+":"+addrs[0].String())
		ping("unix", path)
		ping("tcp", tcp)
		// Removed with its directory, as a /tmp cleaner would.
		require.NoError(t, os.RemoveAll(filepath.Dir(path)))
		assert.True(t, s.SocketMissing(), "its file removed")
	}
	require.NoError(t, s.ListenUnix(path))
	require.Len(t, s.Addrs(), 2, "the listener of the removed file is retired")
	ping("unix", path)
	closeWithin(t, s, testTimeout)
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatal("Serve did not return after Close")
	}
	_, err = os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "socket left behind after Close")
}

// A socket directory someone else could have made, or others may enter,
// is refused with the reason.
func TestSocketDirChecked(t *testing.T) {
	base := socketTestBase(t)
	uid := os.Geteuid()
	dir := SocketDir(base, uid)
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := Listen(Config{Controller: newFake(), Socket: SocketPath(base, uid, 1), NoTCP: true})
	assert.ErrorContains(t, err, "others may enter it")

	require.NoError(t, os.Chmod(dir, 0o700))
	_, err = Listen(Config{Controller: newFake(), Socket: SocketPath(base, uid, 1), NoTCP: true, Owner: uid + 4242})
	assert.ErrorContains(t, err, "not to this JVM's uid")

	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.Symlink(base, dir))
	_, err = Listen(Config{Controller: newFake(), Socket: SocketPath(base, uid, 1), NoTCP: true})
	assert.ErrorContains(t, err, "not a directory")
}

// The owner of a loopback TCP peer is found in /proc/net/tcp: this
// process's user, for a connection this process made.
func TestTCPPeerUID(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Logf("%s: %v", host, err)
			continue
		}
		client, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		server, err := ln.Accept()
		require.NoError(t, err)
		uid, err := peerUID(server)
		require.NoError(t, err, host)
		assert.Equal(t, os.Geteuid(), uid, host)
		assert.NoError(t, checkPeer(server, os.Geteuid(), false))
		client.Close()
		server.Close()
		ln.Close()
	}
}

// The peer of a UNIX socket is known from the kernel; a peer of another
// user than the owner (nor root) is refused with the reason.
func TestCheckPeerUnix(t *testing.T) {
	base := socketTestBase(t)
	path := filepath.Join(base, "s")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	client, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer client.Close()
	server, err := ln.Accept()
	require.NoError(t, err)
	defer server.Close()
	uid, err := peerUID(server)
	require.NoError(t, err)
	assert.Equal(t, os.Geteuid(), uid)
	if uid != 0 {
		assert.ErrorContains(t, checkPeer(server, uid+1, false), "may not control a JVM of uid")
	}
}

func TestParseProcAddr(t *testing.T) {
	// 127.0.0.1:8888 and [::1]:8888 as a little-endian machine shows them.
	if !littleEndian() {
		t.Skip("addresses below are in little-endian words")
	}
	a, ok := parseProcAddr("0100007F:22B8")
	require.True(t, ok)
	assert.Equal(t, "127.0.0.1:8888", a.String())
	a, ok = parseProcAddr("00000000000000000000000001000000:22B8")
	require.True(t, ok)
	assert.Equal(t, "[::1]:8888", a.String())
	a, ok = parseProcAddr("0000000000000000FFFF00000100007F:0050")
	require.True(t, ok)
	assert.True(t, a.IP.Equal(net.ParseIP("127.0.0.1")))
	for _, bad := range []string{"", "0100007F", "0100007F:", "XX00007F:0050", "0100007F:10000"} {
		_, ok := parseProcAddr(bad)
		assert.False(t, ok, bad)
	}
}

func littleEndian() bool {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], 1)
	return b[0] == 1
}

// Another user can make a socket directory of their own and a socket in
// it named by any PID: it is never taken for the agent of a JVM that runs
// as someone else, nor is a socket whose owner is not its directory's
// user; and a client checks who listens before it sends anything.
func TestForeignSocketsIgnored(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make another user's files")
	}
	base := socketTestBase(t)
	me := os.Getpid() // runs as root
	const other = 4321
	listen := func(dir, name string, owner int) net.Listener {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := filepath.Join(dir, name)
		ln, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		require.NoError(t, os.Lchown(p, owner, owner))
		return ln
	}
	// The other user's directory, with a socket named by this process's PID.
	foreign := filepath.Join(base, ".libjprof-"+strconv.Itoa(other))
	listen(foreign, strconv.Itoa(me)+".sock", other)
	require.NoError(t, os.Chown(foreign, other, other))
	// root's directory with a socket the other user owns.
	listen(filepath.Join(base, ".libjprof-0"), "77.sock", other)
	assert.Empty(t, AgentsOfPID(base, me), "a socket of another user named by a root process's PID")
	agents, err := FindAgents(base, 0)
	require.NoError(t, err)
	assert.Equal(t, []Agent{{PID: me, UID: other, Path: filepath.Join(foreign, strconv.Itoa(me)+".sock")}}, agents,
		"root lists the other user's own socket, not one in root's directory that root does not own")

	// A socket that claims to be another user's but is served by a
	// process of a third user is not trusted: here the listener is this
	// (root) process, which DialAgent accepts (root may serve any); one
	// that claims uid other while served by uid 65534 would be refused.
	c, err := DialAgent(context.Background(), agents[0], "")
	require.NoError(t, err, "served by root")
	c.Close()
}

// A socket asked for by PID is used only if the process listening is
// that PID: two JVMs of the same PID in PID namespaces that share /tmp
// name one socket, the first one's.
func TestDialAgentChecksPID(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "1.sock")
	ln, err := net.Listen("unix", p)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	me := os.Getpid()
	c, err := DialAgent(context.Background(), Agent{PID: 1, UID: os.Getuid(), Path: p, HostPID: me}, "")
	require.NoError(t, err, "the listener is this process")
	c.Close()
	c, err = DialAgent(context.Background(), Agent{PID: 1, UID: os.Getuid(), Path: p}, "")
	require.NoError(t, err, "no PID asked for: a listing")
	c.Close()
	_, err = DialAgent(context.Background(), Agent{PID: 1, UID: os.Getuid(), Path: p, HostPID: me + 1}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("is the agent of pid %d, not of pid %d", me, me+1))
}
