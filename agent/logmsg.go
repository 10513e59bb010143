package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// openLogMsg opens log-msg_<pid>, the agent's own log, creating LOGPATH
// if it is missing. If LOGPATH cannot be written it returns the error and a
// logger that writes nowhere: the caller says it in one line (the log's
// structured lines are no part of the program's stderr).
func openLogMsg(o *Options, pid int) (*zap.Logger, func(), error) {
	path := logMsgPath(o, pid)
	if err := os.MkdirAll(o.LogPath, 0o755); err != nil {
		return zap.NewNop(), func() {}, mkdirError{err}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return zap.NewNop(), func() {}, err
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(f), zap.DebugLevel)
	var zopts []zap.Option
	if o.Quiet {
		// zap says on stderr that a write failed (a full disk).
		zopts = append(zopts, zap.ErrorOutput(zapcore.AddSync(io.Discard)))
	}
	log := zap.New(core, zopts...).With(zap.Int("pid", pid))
	return log, func() { _ = log.Sync(); _ = f.Sync(); _ = f.Close() }, nil
}

// logMsgPath is where log-msg is: LOGPATH/LOGPREFIX-msg_<pid>.
func logMsgPath(o *Options, pid int) string {
	return fmt.Sprintf("%s/%s-msg_%d", o.LogPath, o.LogPrefix, pid)
}

// logPathError decides what an unwritable LOGPATH does. One given with
// LOGPATH= is an option that cannot be honoured, like a METRICS= metric
// the machine cannot count: the JVM does not start, and the error says
// which option and why. The default one (the current directory) is
// like an implied default that cannot be had: one line on stderr, and
// the JVM runs on without collecting (START ignored, rtdriver start
// refused), since no report could be written and method events would
// slow the program for nothing; log-msg is not written either.
func logPathError(o *Options, err error) (outErr, stop error) {
	what := "is not writable: " + errnoText(err)
	if errors.As(err, new(mkdirError)) {
		what = "cannot be created: " + errnoText(err)
	}
	if o.LogPathFrom != "" {
		return nil, fmt.Errorf("LOGPATH %s (from %s) %s; no profile could be written, so the JVM does not start: give a writable directory", o.LogPath, o.LogPathFrom, what)
	}
	say("libjprof: warning: LOGPATH %s (the default: the current directory) %s; no profile will be written (START ignored, rtdriver start refused): give LOGPATH=dir", o.LogPath, what)
	return fmt.Errorf("LOGPATH %s %s", o.LogPath, what), nil
}

// mkdirError is a LOGPATH that could not be made (a path through a file,
// a read-only or special file system), as opposed to one that exists but
// takes no file.
type mkdirError struct{ error }

func (e mkdirError) Unwrap() error { return e.error }
