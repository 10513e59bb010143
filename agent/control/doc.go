// Package control implements rtdriver, the socket protocol that drives a
// running libjprof agent, on both sides: the Server the agent embeds and the
// Client the rtdriver command uses.
//
// The agent implements Controller (start, flush, reset, end, status, force
// GC, shutdown) and hands it to Listen. The Server owns everything about the
// socket: it listens on loopback, on the first free port of 8888–8895 unless
// told otherwise, parses and validates command lines, runs the Controller
// calls one at a time, and answers. Nothing here needs a JVM.
//
// # Protocol
//
// The protocol is line-based ASCII text over TCP; a line ends with "\n"
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
//	shutdown        stop profiling, then the server closes
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
//	ERR auth: <reason>   token missing or wrong; the connection is closed
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
