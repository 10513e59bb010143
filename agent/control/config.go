package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
)

// The ports JProf's rtdriver used: a server told to listen on TCP without
// a port takes the first free one, so that several JVMs on one machine
// can each be driven. The agent listens on TCP only on the port PORT=
// names; its own channel is the UNIX socket.
const (
	DefaultFirstPort = 8888
	DefaultLastPort  = 8895
	DefaultHost      = "127.0.0.1"
)

// AnyPort as Config.Port lets the kernel choose a free port. Tests use it;
// Addr tells which port was chosen.
const AnyPort = -1

// Defaults for the limits of Config.
const (
	DefaultMaxConns     = 16
	DefaultMaxLine      = 4096
	DefaultIdleTimeout  = 15 * time.Minute
	DefaultLineTimeout  = 5 * time.Second
	DefaultQueueTimeout = 30 * time.Second
)

// maxTokenLen bounds the token; it is typed by people and sent per line.
const maxTokenLen = 256

// Config configures a Server. The zero value, plus a Controller, listens on
// the first free port of 8888–8895 on 127.0.0.1 without a token; the agent
// sets Socket and, unless told to listen on TCP, NoTCP.
type Config struct {
	// Controller runs the commands. Required.
	Controller Controller
	// Socket, when not empty, is the path of a UNIX socket to listen on
	// (see SocketPath); its directory is made private to Owner.
	Socket string
	// NoTCP: listen on Socket only.
	NoTCP bool
	// Owner is the only user, beside root, whose connections are served:
	// the JVM's. Zero means this process's effective uid.
	Owner int
	// Host is the address to listen on; empty means 127.0.0.1. Anything
	// else exposes the agent beyond this machine: use it only when told
	// to, preferably with a Token.
	Host string
	// Port is the one port to listen on (the agent's PORT= option), or
	// AnyPort. Zero means the first free port of FirstPort..LastPort.
	Port int
	// FirstPort and LastPort bound the search when Port is zero; zero
	// means 8888 and 8895.
	FirstPort, LastPort int
	// Token, when not empty, must begin every line as "token=<Token>,".
	// It may not contain commas, blanks or control characters.
	Token string
	// Logger receives connection and command events (the agent's log-msg).
	// Nil means no logging.
	Logger *zap.Logger

	// MaxConns bounds open connections. When all are open, a new one
	// takes the place of the connection that has waited longest for its
	// next line, which is answered "ERR busy" and closed; when every open
	// connection is running or answering a command, the new one is
	// answered "ERR busy" and closed. Zero means 16.
	MaxConns int
	// MaxLine bounds a line in bytes, without its terminator; longer lines
	// are answered "ERR line" and discarded. Zero means 4096.
	MaxLine int
	// IdleTimeout closes a connection that sends nothing for this long.
	// Zero means 15 minutes.
	IdleTimeout time.Duration
	// LineTimeout bounds the time from the first byte of a line to its
	// end; a connection that takes longer is answered "ERR line" and
	// closed, so that partial lines cannot hold connections. Zero means
	// 5 s; it is never longer than IdleTimeout.
	LineTimeout time.Duration
	// QueueTimeout bounds how long a line waits while another connection's
	// command runs before it is answered "ERR <cmd>: busy". Zero means 30 s.
	QueueTimeout time.Duration
}

// withDefaults returns c with zero fields filled in, or an error naming the
// first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.Controller == nil {
		return c, errors.New("no Controller")
	}
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Owner == 0 {
		c.Owner = os.Geteuid()
	}
	if c.NoTCP && c.Socket == "" {
		return c, errors.New("neither a socket nor TCP to listen on")
	}
	if !c.NoTCP && c.Token == "" && !IsLoopback(c.Host) {
		// Only a local peer can be told by its user; one from another
		// host has only the token to show.
		return c, fmt.Errorf("host %s is not loopback: a TOKEN is required to listen beyond this machine", c.Host)
	}
	if c.FirstPort == 0 && c.LastPort == 0 {
		c.FirstPort, c.LastPort = DefaultFirstPort, DefaultLastPort
	}
	switch {
	case c.Port < AnyPort || c.Port > 65535:
		return c, fmt.Errorf("port %d out of range", c.Port)
	case c.Port == 0 && (c.FirstPort < 1 || c.LastPort > 65535 || c.FirstPort > c.LastPort):
		return c, fmt.Errorf("bad port range %d-%d", c.FirstPort, c.LastPort)
	}
	if err := checkToken(c.Token); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxLine == 0 {
		c.MaxLine = DefaultMaxLine
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.LineTimeout == 0 {
		c.LineTimeout = DefaultLineTimeout
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout = DefaultQueueTimeout
	}
	switch {
	case c.MaxConns < 0:
		return c, fmt.Errorf("MaxConns %d < 0", c.MaxConns)
	case c.MaxLine < 64:
		// Below this even "token=<T>,start" may not fit.
		return c, fmt.Errorf("MaxLine %d < 64", c.MaxLine)
	case c.IdleTimeout < 0 || c.QueueTimeout < 0 || c.LineTimeout < 0:
		return c, errors.New("negative timeout")
	}
	c.LineTimeout = min(c.LineTimeout, c.IdleTimeout)
	return c, nil
}

// checkToken rejects tokens that could not be sent on a line intact.
func checkToken(t string) error {
	if len(t) > maxTokenLen {
		return fmt.Errorf("token longer than %d bytes", maxTokenLen)
	}
	for i := 0; i < len(t); i++ {
		if b := t[i]; b <= ' ' || b > 0x7e || b == ',' {
			return fmt.Errorf("token has a comma, blank or non-printable byte at %d", i)
		}
	}
	return nil
}

// IsLoopback says whether host names only this machine: a loopback
// address or "localhost".
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
