package control

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{Controller: newFake()}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", c.Host)
	assert.Equal(t, 0, c.Port)
	assert.Equal(t, 8888, c.FirstPort)
	assert.Equal(t, 8895, c.LastPort)
	assert.Equal(t, DefaultMaxConns, c.MaxConns)
	assert.Equal(t, DefaultMaxLine, c.MaxLine)
	assert.Equal(t, DefaultIdleTimeout, c.IdleTimeout)
	assert.Equal(t, DefaultQueueTimeout, c.QueueTimeout)
	assert.Equal(t, DefaultLineTimeout, c.LineTimeout)
	assert.NotNil(t, c.Logger)

	// A begun line never gets longer than an idle connection.
	c, err = Config{Controller: newFake(), IdleTimeout: time.Second}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, time.Second, c.LineTimeout)
}

func TestConfigErrors(t *testing.T) {
	ok := func(c Config) Config { c.Controller = newFake(); return c }
	tests := []struct {
		name string
		cfg  Config
		err  string
	}{
		{"no controller", Config{}, "no Controller"},
		{"port too big", ok(Config{Port: 65536}), "port 65536 out of range"},
		{"port negative", ok(Config{Port: -2}), "out of range"},
		{"range reversed", ok(Config{FirstPort: 9000, LastPort: 8999}), "bad port range"},
		{"range zero start", ok(Config{FirstPort: 0, LastPort: 10}), "bad port range"},
		{"token comma", ok(Config{Token: "a,b"}), "token"},
		{"token blank", ok(Config{Token: "a b"}), "token"},
		{"token control", ok(Config{Token: "a\nb"}), "token"},
		{"token long", ok(Config{Token: strings.Repeat("x", 257)}), "longer than"},
		{"max line small", ok(Config{MaxLine: 10}), "MaxLine"},
		{"beyond loopback without token", ok(Config{Host: "0.0.0.0"}), "a TOKEN is required"},
		{"no channel", ok(Config{NoTCP: true}), "neither a socket nor TCP"},
		{"max conns negative", ok(Config{MaxConns: -1}), "MaxConns"},
		{"negative timeout", ok(Config{IdleTimeout: -1}), "negative"},
		{"negative line timeout", ok(Config{LineTimeout: -1}), "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			assert.ErrorContains(t, err, tt.err)
			_, err = Listen(tt.cfg)
			assert.ErrorContains(t, err, tt.err)
		})
	}
}

func TestListenPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port

	_, err = Listen(Config{Controller: newFake(), Port: port})
	assert.ErrorContains(t, err, "address already in use")

	// A range whose only port is taken.
	_, err = Listen(Config{Controller: newFake(), FirstPort: port, LastPort: port})
	assert.ErrorContains(t, err, "no free port in "+strconv.Itoa(port))
}

func TestListenRangeSkipsTakenPort(t *testing.T) {
	// Find p taken by us with p+1 free; retry a few times since other
	// processes take ports too.
	for attempt := 0; attempt < 10; attempt++ {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := taken.Addr().(*net.TCPAddr).Port
		if port == 65535 {
			taken.Close()
			continue
		}
		s, err := Listen(Config{Controller: newFake(), FirstPort: port, LastPort: port + 1})
		taken.Close()
		if err != nil {
			continue // port+1 was not free either
		}
		assert.Equal(t, port+1, s.Addr().(*net.TCPAddr).Port)
		require.NoError(t, s.Close())
		return
	}
	t.Skip("no pair of adjacent free ports found")
}

func TestListenBadHost(t *testing.T) {
	// Not EADDRINUSE: the range search must stop at once.
	_, err := Listen(Config{Controller: newFake(), Host: "192.0.2.1", Token: "t"})
	assert.ErrorContains(t, err, "rtdriver listen")
	assert.NotContains(t, err.Error(), "no free port")
}

func TestListenLoopbackDefault(t *testing.T) {
	s, err := Listen(Config{Controller: newFake(), Port: AnyPort})
	require.NoError(t, err)
	defer s.Close()
	assert.True(t, s.Addr().(*net.TCPAddr).IP.IsLoopback())
}
