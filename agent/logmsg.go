package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// openLogMsg opens log-msg_<pid>, the agent's own log. If LOGPATH cannot be
// written, the agent says so on stderr, logs to stderr instead and returns
// why: nothing is collected then (no report could be written, and a JVM
// under method events runs interpreted), but the JVM runs on.
func openLogMsg(o *Options, pid int) (*zap.Logger, func(), error) {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	var sink zapcore.WriteSyncer
	closeFn := func() {}
	path := fmt.Sprintf("%s/%s-msg_%d", o.LogPath, o.LogPrefix, pid)
	err := os.MkdirAll(o.LogPath, 0o755)
	var f *os.File
	if err == nil {
		f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "libjprof: LOGPATH %q is not writable (%v): no log-rt or other file can be written, so nothing is collected (START ignored, rtdriver start refused); log-msg goes to stderr\n", o.LogPath, err)
		sink = zapcore.Lock(os.Stderr)
	} else {
		sink = zapcore.Lock(f)
		closeFn = func() { _ = f.Sync(); _ = f.Close() }
	}
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), sink, zap.DebugLevel)
	log := zap.New(core).With(zap.Int("pid", pid))
	if err != nil {
		log.Error("LOGPATH not writable", zap.String("logpath", o.LogPath), zap.Error(err))
	}
	if err != nil {
		err = fmt.Errorf("LOGPATH %s is not writable: %w", o.LogPath, err)
	}
	return log, func() { _ = log.Sync(); closeFn() }, err
}
