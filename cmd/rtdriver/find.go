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
	"github.com/libjprof/libjprof/internal/attach"
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
	var gone []control.Agent // removed: their JVMs died without removing them
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
				gone = append(gone, a)
			}
		case errors.Is(err, fs.ErrNotExist):
			// Its JVM ended meanwhile.
		default:
			fmt.Fprintf(d.env.stderr, "rtdriver: pid %d: %v\n", a.PID, err)
		}
	}
	// One line, however many: killed JVMs (test suites, OOM kills) can
	// leave hundreds.
	switch len(gone) {
	case 0:
	case 1:
		fmt.Fprintf(d.env.stderr, "rtdriver: removed %s: its JVM (pid %d) is gone\n", gone[0].Path, gone[0].PID)
	default:
		fmt.Fprintf(d.env.stderr, "rtdriver: removed %d control sockets whose JVMs are gone (%s, pid %d, and others in %s)\n",
			len(gone), gone[0].Path, gone[0].PID, filepath.Dir(gone[0].Path))
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
		return nil, fmt.Errorf("rtdriver: pid %d has no libjprof control socket (%s): is it a JVM with the agent, started without NORTDRIVER, or one still starting (the socket opens at VM init)? rtdriver -l lists yours",
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
	if m := attach.MainClass(args); m != "" {
		return m
	}
	return "-"
}
