// Package attach speaks HotSpot's dynamic attach protocol on Linux, so
// that jprof can load libjprof into a running JVM without a JDK's jcmd.
// Open (or List) describes a JVM by its host PID; Stage makes the agent's
// files reachable from inside the JVM's mount namespace; Execute runs one
// attach operation and LoadAgent the "load" operation.
//
// The protocol, as JDK 17 and JDK 25 implement it (HotSpot's attach
// listener and the JDK's sun.tools.attach.VirtualMachineImpl for Linux):
//
//   - The JVM listens on the UNIX socket /tmp/.java_pid<pid> (always /tmp,
//     not java.io.tmpdir; <pid> is the pid in the JVM's own PID namespace),
//     mode 0600 and owned by the JVM's effective uid and gid.
//   - The listener starts lazily: a client creates .attach_pid<pid> in the
//     JVM's working directory (else in its /tmp), owned by the JVM's
//     effective uid or by root, then sends SIGQUIT. Without that file a
//     SIGQUIT only prints a thread dump; a JVM that does not catch SIGQUIT
//     yet (still starting, or -Xrs) would die of it, so none is sent then.
//   - A request (protocol version 1, which both JDKs accept) is
//     "1\0<cmd>\0<arg0>\0<arg1>\0<arg2>\0": always three arguments, empty
//     ones as empty strings; a command name of at most 16 bytes and
//     arguments of at most 1024.
//   - The reply is the operation's status as a decimal line ("0\n" on
//     success; 101 means the version was refused), then text, up to the
//     JVM closing the connection.
//   - The JVM reads SO_PEERCRED and serves a peer whose effective uid is
//     root, or whose effective uid and gid both equal its own, as seen in
//     the JVM's user namespace; anything else is closed unanswered. Root
//     in the JVM's user namespace therefore needs nothing more; root
//     outside it (a JVM in a user-namespaced container) is the overflow
//     uid there, so it connects, and writes files for the JVM, from a
//     thread that has taken the JVM's uid and gid (see asIDs).
//
// A JVM in another PID and mount namespace (a container, unshare) is
// reached by its host PID through /proc/<pid>/root and /proc/<pid>/cwd.
package attach
