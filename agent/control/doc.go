// Package control implements rtdriver, the socket protocol that drives a
// running libjprof agent, on both sides: the Server the agent embeds and the
// Client the rtdriver command uses.
//
// The agent implements Controller (start, flush, reset, end, status, force
// GC, shutdown) and hands it to Listen. The Server owns everything about the
// channels: it listens on a UNIX socket and, when asked, on TCP, checks who
// connects, parses and validates command lines, runs the Controller calls
// one at a time, across every channel, and answers. Nothing here needs a
// JVM.
//
// # Channels and who may use them
//
// Only the user the JVM runs as, or root, may drive its agent, as with the
// JDK's attach mechanism: another user could otherwise start collection in
// a JVM that is not theirs and have it write files as its owner.
//
// The agent's channel is a UNIX socket, /tmp/.libjprof-<uid>/<pid>.sock
// (SocketPath): a directory per user, mode 0700 and checked to be the
// user's own, holding one socket per JVM, mode 0600, named by the PID the
// JVM sees. In a container that is its PID in the container's namespace,
// and the socket is under the container's /tmp, which the host reaches as
// /proc/<host pid>/root/tmp (AgentsOfPID looks there). /tmp and not $TMPDIR,
// so that rtdriver finds it whatever either environment says. A socket
// whose JVM died without removing it is replaced by the next agent of that
// PID, and removed by a client that finds it refusing connections; a live
// one is never taken over. Closing the server removes its socket.
//
// Every connection's peer is checked before anything is read from it: on
// the UNIX socket by the kernel's credentials (SO_PEERCRED), on TCP by the
// owner of the peer's socket in /proc/net/tcp and tcp6, which lists every
// socket of this network namespace, so any peer on loopback. A peer of
// another user than the JVM's, nor root, is answered
//
//	ERR auth: uid 65534 may not control a JVM of uid 0 (only its owner or root may)
//
// and the connection is closed, whatever the token. A peer on another
// machine has no user to check: TCP listens beyond loopback only with a
// token (Listen refuses otherwise), and the token decides.
//
// TCP is opt-in (the agent's PORT=): on loopback unless Host says
// otherwise, on one port or the first free of a range.
//
// # Protocol
//
// The protocol is line-based ASCII text over either channel; a line ends
// with "\n"
// (a preceding "\r" is ignored). A line holds one or more commands separated
// by commas; names are case-insensitive and blanks around commands are
// ignored:
//
//	start[=N]       start collecting now, or after N seconds (N may also be
//	                a Go duration such as 500ms; at most 24h)
//	flush           write the next log-rt.N_<pid>; the reply names the file
//	reset           discard the data collected so far
//	end             stop + flush + reset; the reply names the file
//	status          one line of agent state
//	ping            liveness check: "OK ping: pong"
//	fgc             force a garbage collection
//	shutdown        detach and stop profiling for good, then the server closes
//	exit_rtdriver   close this connection after replying
//	help            list the commands
//
// A command with nothing to do (start while collecting, flush with nothing
// collected since the last reset) is answered OK with what happened as the
// detail: the Controller returns a Noop.
//
// Every command is answered with exactly one reply line, in order:
//
//	OK <cmd>
//	OK <cmd>: <detail>
//	ERR <cmd>: <reason>
//
// A line is validated as a whole before any of it runs: when one command is
// unknown or has a bad argument, it gets its own ERR reply and every other
// command on the line gets "ERR <cmd>: not run: ...", so nothing changes.
// shutdown and exit_rtdriver must be the last command of their line. When a
// command fails while running, the rest of the line is not run (like && in a
// shell) and is answered "ERR <cmd>: not run: <failed cmd> failed".
//
// Problems with the line itself are answered with a single reply that stands
// for the whole line, whose name is never a command name:
//
//	ERR line: <reason>   non-printable bytes, over-long line (the rest of the
//	                     line is discarded), empty command between commas
//	ERR auth: <reason>   the peer's user may not drive this JVM (sent on
//	                     connect), or the token is missing or wrong; the
//	                     connection is closed
//	ERR busy: <reason>   sent on connect when too many connections are open,
//	                     or to the connection that waited longest for its
//	                     next line when it gives its place to a new one;
//	                     the connection is closed
//
// Blank lines are ignored and get no reply. A client therefore reads one
// reply per comma-separated element it sent (not counting the token), or
// stops early at a line, auth or busy reply.
//
// # Token
//
// When the server is configured with a token, every line must begin with
// "token=<T>," followed by the commands, for example
//
//	token=s3cret,start,flush
//
// The token is compared in constant time and is case-sensitive. A line
// without it, or with a wrong one, runs nothing, is answered "ERR auth: ..."
// and the connection is closed, so a guesser pays a connection per guess.
// A server without a token accepts and ignores a token element, so one
// client configuration works against both.
//
// # Robustness
//
// The server runs inside a customer's JVM, so it assumes hostile or broken
// peers: lines are bounded (4 KiB by default, the excess is discarded while
// reading, never buffered), connections are bounded (16 by default), time out
// when idle (15 minutes) and must finish a begun line quickly (5 s), every
// connection recovers from panics, Controller calls are serialized and a line
// waits a bounded time for its turn, and replies are written after the
// execution slot is released, so a client that stops reading cannot hold up
// others. When all places are taken, a new connection evicts the one that has
// waited longest for its next line, so idle or half-line clients cannot lock
// others out; it is refused only when every place is running a command. A
// refused or evicted connection always reads "ERR busy" before the close:
// the server half-closes and drains it rather than close with unread input,
// which would reset the connection and could destroy the reply.
package control
