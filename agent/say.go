package main

// What the agent tells its user: lines on the JVM's stderr, where a user
// who started the JVM looks. Loaded into a running program by jprof
// (QUIET), the JVM's stderr is the program's own log, not the user's: the
// lines of the load are left for jprof to print instead, and every line
// goes to log-msg.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/libjprof/libjprof/agent/control"
	"github.com/libjprof/libjprof/internal/atomicfile"
)

// sayer is where say writes. Its zero value writes to stderr.
type sayer struct {
	mu sync.Mutex
	// quiet: the agent's QUIET; loadQuiet: that of the load under way
	// (a second load's options do not change the agent's).
	quiet, loadQuiet, loading bool
	log                       *zap.Logger
	// held: an attach's lines, for the command that loaded the agent;
	// dropped: those past maxHeld.
	held    []string
	hold    bool
	dropped int
}

// maxHeld bounds an attach's held lines (a load says a few).
const maxHeld = 64

var said sayer

// warn says a warning where the user looks and in log-msg.
func (a *agent) warn(msg string) {
	say("libjprof: warning: %s", msg)
	a.log.Warn(msg)
}

// say writes one line (format without its newline) for the user.
func say(format string, args ...any) {
	said.line(fmt.Sprintf(format, args...))
}

func (s *sayer) line(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.quiet
	if s.loading {
		q = s.loadQuiet
	}
	// Without log-msg (not open yet, or LOGPATH not writable) a line
	// not held for the loader would be said nowhere: stderr then.
	if !q || (s.log == nil && !s.hold) {
		fmt.Fprintln(os.Stderr, l)
		return
	}
	if s.log != nil {
		s.log.Info("not on stderr (QUIET)", zap.String("line", l))
	}
	if s.hold {
		if len(s.held) < maxHeld {
			s.held = append(s.held, l)
		} else {
			s.dropped++
		}
	}
}

// beginLoad starts a load (Agent_OnLoad, or Agent_OnAttach when first
// says it is the agent's first) with QUIET or not; an attach's quiet lines
// are held for endLoad.
func (s *sayer) beginLoad(quiet, first, attach bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if first {
		s.quiet = quiet
	}
	// A later load's options are not the agent's, but its QUIET says
	// where its loader looks; the agent's QUIET holds for it too.
	s.loading, s.loadQuiet = true, quiet || s.quiet
	s.hold, s.held, s.dropped = quiet && attach, nil, 0
}

// setLog gives the lines not said a place in log-msg; nil when it is
// closed or could not be opened.
func (s *sayer) setLog(log *zap.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = log
}

// endLoad leaves a quiet load's lines where the command that loaded the
// agent reads them (jprof prints and removes the file): in the JVM user's
// private socket directory, beside an attach's error, whole or not at all.
func (s *sayer) endLoad() {
	s.mu.Lock()
	held := s.held
	if s.dropped > 0 {
		held = append(held, fmt.Sprintf("libjprof: … %d more lines in log-msg", s.dropped))
	}
	s.loading, s.hold, s.held, s.dropped = false, false, nil, 0
	s.mu.Unlock()
	if len(held) > 0 {
		leaveForLoader(".attach-msg", strings.Join(held, "\n")+"\n")
	}
}

// sayAttachError leaves why an attach failed where the command that
// loaded the agent looks (jprof reads and removes it): the JVM's stderr is
// not the caller's, and the attach protocol carries only a return code.
// In the JVM user's private socket directory, whole or not at all.
// Said on the JVM's stderr too, unless the load is QUIET.
func sayAttachError(err error) {
	said.mu.Lock()
	quiet := said.loadQuiet
	said.mu.Unlock()
	if !quiet {
		fmt.Fprintf(os.Stderr, "libjprof: attach: %v\n", err)
	}
	leaveForLoader(".attach-error", err.Error()+"\n")
}

// leaveForLoader writes text to <pid><suffix> in the JVM user's socket
// directory, whole or not at all.
func leaveForLoader(suffix, text string) {
	dir := control.SocketDir(control.SocketBase, os.Geteuid())
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return
	}
	// Not into a directory another user made under that name: they
	// would read what the load said, and could write what its loader
	// reads.
	if control.CheckPrivateDir(dir, os.Geteuid()) != nil {
		return
	}
	path := filepath.Join(dir, strconv.Itoa(os.Getpid())+suffix)
	_ = atomicfile.Write(path, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

// quietAsked says whether the options ask for QUIET, before they are
// parsed: a load says why options are bad on stderr unless told not to.
func quietAsked(opts ...string) bool {
	q := false
	for _, o := range opts {
		for _, raw := range strings.Split(o, ",") {
			switch strings.ToUpper(strings.TrimSpace(raw)) {
			case "QUIET":
				q = true
			case "NOQUIET":
				q = false
			}
		}
	}
	return q
}
