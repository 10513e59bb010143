package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/libjprof/libjprof/agent/control"
)

// found is a JVM whose control socket answered.
type found struct {
	agent  control.Agent
	client *control.Client
}

// findMine dials every control socket the caller may use (its own JVMs',
// or everyone's for root) and returns those that answered. A socket whose
// JVM is gone (the connection is refused) is removed, which only its
// owner or root may do.
func (d *driver) findMine(ctx context.Context) ([]found, error) {
	agents, err := control.FindAgents(d.env.socketBase, d.env.uid)
	if err != nil {
		return nil, fmt.Errorf("rtdriver: looking for JVMs: %w", err)
	}
	var live []found
	for _, a := range agents {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := control.DialAgent(dctx, a, d.opts.token)
		cancel()
		switch {
		case err == nil:
			live = append(live, found{a, c})
		case errors.Is(err, syscall.ECONNREFUSED):
			// Its JVM died without removing it (killed, crashed).
			if rerr := os.Remove(a.Path); rerr == nil {
				fmt.Fprintf(d.env.stderr, "rtdriver: removed %s: its JVM (pid %d) is gone\n", a.Path, a.PID)
			}
		case errors.Is(err, fs.ErrNotExist):
			// Its JVM ended meanwhile.
		default:
			fmt.Fprintf(d.env.stderr, "rtdriver: pid %d: %v\n", a.PID, err)
		}
	}
	return live, nil
}

// dialPID connects to the JVM of pid through its control socket.
func (d *driver) dialPID(ctx context.Context, pid int) (*control.Client, error) {
	agents := control.AgentsOfPID(d.env.socketBase, pid)
	if owner, ok := control.ProcOwner(pid); len(agents) == 0 && ok && owner != d.env.uid && d.env.uid != 0 {
		// Its socket, if any, is in a directory only its owner may enter.
		return nil, fmt.Errorf("rtdriver: pid %d runs as uid %d: only the JVM's owner or root may control it", pid, owner)
	}
	if len(agents) == 0 {
		return nil, fmt.Errorf("rtdriver: pid %d has no libjprof control socket (%s): is it a JVM with the agent, started without NORTDRIVER? rtdriver -l lists yours",
			pid, control.SocketPath(d.env.socketBase, d.env.uid, pid))
	}
	var errs []string
	for _, a := range agents {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := control.DialAgent(dctx, a, d.opts.token)
		cancel()
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, fs.ErrPermission):
			errs = append(errs, fmt.Sprintf("%s belongs to uid %d: only the JVM's owner or root may control it (%v)", a.Path, a.UID, err))
		case errors.Is(err, syscall.ECONNREFUSED):
			errs = append(errs, fmt.Sprintf("%s: no agent listens on it any more (its JVM is gone?)", a.Path))
		default:
			errs = append(errs, err.Error())
		}
	}
	return nil, fmt.Errorf("rtdriver: pid %d: %s", pid, strings.Join(errs, "; "))
}

// listJVMs prints one line per JVM: pid, user, what runs, socket.
func listJVMs(w io.Writer, jvms []found) {
	for _, j := range jvms {
		fmt.Fprintf(w, "  pid %-8d uid %-6d %-40s %s\n", j.agent.PID, j.agent.UID, mainOf(j.agent.PID, j.agent.UID), j.agent.Path)
	}
}

// mainOf names what the JVM of pid runs, from its command line: the main
// class, the jar of -jar or the module of -m. "-" when /proc does not
// show that process, or shows another user's or a program other than java
// under that PID (a JVM in another PID namespace).
func mainOf(pid, uid int) string {
	if owner, ok := control.ProcOwner(pid); !ok || owner != uid {
		return "-"
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "-"
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if !strings.Contains(filepath.Base(args[0]), "java") {
		// Not a JVM: the socket's PID is one of another PID namespace.
		return "-"
	}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-jar" || a == "-m" || a == "--module":
			if i+1 < len(args) {
				return args[i+1]
			}
		case a == "-cp" || a == "-classpath" || a == "--class-path" || a == "-p" || a == "--module-path" ||
			a == "--add-modules" || a == "--add-opens" || a == "--add-exports" || a == "--add-reads":
			i++ // its value follows
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return "-"
}
