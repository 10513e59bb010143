package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/libjprof/libjprof/internal/peercred"
)

// maxReplyLine bounds a reply line the client accepts; the server's replies
// are far shorter, so more means the peer is not an agent.
const maxReplyLine = 64 << 10

// Client is one rtdriver connection to one agent. It is not safe for
// concurrent use.
type Client struct {
	conn  net.Conn
	r     *bufio.Reader
	token string
	// broken is set after an error that may leave replies in flight: the
	// next reply read could belong to the previous line.
	broken error
}

// Dial connects to the agent at addr ("host:port") over TCP. token, when
// not empty, is sent at the start of every line.
func Dial(ctx context.Context, addr, token string) (*Client, error) {
	return DialNet(ctx, "tcp", addr, token)
}

// DialSocket connects to the agent's UNIX socket at path.
func DialSocket(ctx context.Context, path, token string) (*Client, error) {
	return DialNet(ctx, "unix", path, token)
}

// ErrOtherJVM is DialAgent's answer for a socket another JVM listens on
// than the one asked for.
var ErrOtherJVM = errors.New("another JVM's socket")

// DialAgent connects to a found agent's socket and, before anything is
// sent (the token above all), checks that the process listening is of
// the user the socket belongs to, or root, and, when a PID was asked
// for, is that process: a socket that merely names a PID is not trusted
// with the commands.
func DialAgent(ctx context.Context, a Agent, token string) (*Client, error) {
	c, err := DialSocket(ctx, a.Path, token)
	if err != nil {
		return nil, err
	}
	uc, ok := c.conn.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("rtdriver: %s is not a UNIX socket", a.Path)
	}
	cred, err := peercred.Of(uc)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rtdriver: %s: %w", a.Path, err)
	}
	if int(cred.Uid) != a.UID && cred.Uid != 0 {
		c.Close()
		return nil, fmt.Errorf("rtdriver: %s: the process listening runs as uid %d, not as the socket's owner %d: not an agent's socket, not used", a.Path, cred.Uid, a.UID)
	}
	if a.HostPID > 0 && int(cred.Pid) != a.HostPID {
		c.Close()
		if cred.Pid == 0 {
			return nil, fmt.Errorf("rtdriver: %s: the process listening is not in this PID namespace, so not pid %d: not used: %w", a.Path, a.HostPID, ErrOtherJVM)
		}
		return nil, fmt.Errorf("rtdriver: %s is the agent of pid %d, not of pid %d (two JVMs of PID %d in PID namespaces that share /tmp: the second has no control socket; give each its own /tmp, or PORT=): not used: %w",
			a.Path, cred.Pid, a.HostPID, a.PID, ErrOtherJVM)
	}
	return c, nil
}

// DialNet connects to the agent at addr on network "tcp" or "unix".
func DialNet(ctx context.Context, network, addr, token string) (*Client, error) {
	if err := checkToken(token); err != nil {
		return nil, fmt.Errorf("rtdriver: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("rtdriver: %w", err)
	}
	return &Client{conn: conn, r: bufio.NewReaderSize(conn, maxReplyLine), token: token}, nil
}

// RemoteAddr returns the agent's address.
func (c *Client) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Do sends one line of comma-chained commands and returns the replies, one
// per command, or fewer when the agent answered the line as a whole (see
// Reply.LineLevel). ERR replies are not errors; the error reports a
// connection or protocol failure, with the replies read before it.
func (c *Client) Do(ctx context.Context, line string) ([]Reply, error) {
	if c.broken != nil {
		return nil, fmt.Errorf("rtdriver: connection unusable: %w", c.broken)
	}
	line = strings.TrimSpace(line)
	switch {
	case line == "":
		return nil, errors.New("rtdriver: empty command")
	case strings.ContainsAny(line, "\r\n"):
		return nil, errors.New("rtdriver: command contains a line break")
	}
	want := countCommands(line)
	if c.token != "" {
		line = tokenKey + "=" + c.token + "," + line
	}

	dl, _ := ctx.Deadline()
	c.conn.SetDeadline(dl)
	// Cancellation unblocks the read or write in progress.
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	replies, err := c.exchange(line, want)
	if err != nil {
		ctxErr := ctx.Err()
		if ctxErr == nil && !dl.IsZero() && !time.Now().Before(dl) {
			// The socket deadline can fire just before the context's.
			ctxErr = context.DeadlineExceeded
		}
		if ctxErr != nil {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		c.broken = err
		return replies, fmt.Errorf("rtdriver %s: %w", c.conn.RemoteAddr(), err)
	}
	return replies, nil
}

// exchange writes line and reads up to want replies.
func (c *Client) exchange(line string, want int) ([]Reply, error) {
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	replies := make([]Reply, 0, want)
	for len(replies) < want {
		b, err := c.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return replies, fmt.Errorf("reply longer than %d bytes: not an rtdriver agent?", maxReplyLine)
		case errors.Is(err, io.EOF) && len(b) == 0:
			return replies, fmt.Errorf("connection closed by the agent after %d of %d replies", len(replies), want)
		case err != nil && !errors.Is(err, io.EOF):
			return replies, fmt.Errorf("read reply: %w", err)
		}
		r, err := ParseReply(string(b))
		if err != nil {
			return replies, err
		}
		replies = append(replies, r)
		if r.LineLevel() {
			break
		}
	}
	return replies, nil
}

// countCommands counts the replies a line asks for, as the server splits
// it: one per comma-separated element, except a leading token.
func countCommands(line string) int {
	parts := strings.Split(line, ",")
	n := len(parts)
	if key, _, ok := strings.Cut(parts[0], "="); ok && strings.EqualFold(strings.TrimSpace(key), tokenKey) && n > 1 {
		n--
	}
	return n
}
