package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/libjprof/libjprof/jvmti"
)

// bciCacheCap bounds BCICACHE's directory: past it, runs read the
// classes it holds and add none.
const (
	bciCacheCap     = 256 << 20
	bciCacheCapText = "256 MiB"
)

// defaultBCICache is BCICACHE's directory when none is given.
func defaultBCICache() string {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "libjprof", "bci")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "libjprof", "bci")
	}
	return ""
}

// checkBCICache makes BCICACHE's directory (this user's only) if it is
// missing, and checks it: a directory, this user's, not writable by
// group or others, since the classes in it run in the JVM. It returns
// whether the directory is full (at bciCacheCap): then it is only read.
func checkBCICache(dir string) (full bool, err error) {
	if dir == "" {
		return false, errors.New("no directory (no $XDG_CACHE_HOME or home directory)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return false, err
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return false, fmt.Errorf("%s is not a directory", abs)
	case !ok || int(st.Uid) != os.Geteuid():
		return false, fmt.Errorf("%s is not this user's (uid %d)", abs, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return false, fmt.Errorf("%s is writable by others (mode %v)", abs, fi.Mode().Perm())
	}
	var size int64
	filepath.WalkDir(abs, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if i, err := d.Info(); err == nil {
				size += i.Size()
			}
		}
		return nil
	})
	return size >= bciCacheCap, nil
}

// bciCache sets BCICACHE up in cfg, or says why it is not used: a
// cache that cannot be used costs the run its speed-up, never the run.
func (a *agent) bciCache(cfg *jvmti.BCIConfig, live bool) {
	dir := a.opts.BCICache
	if dir == "" {
		return
	}
	why := ""
	full, err := false, error(nil)
	switch {
	case a.opts.Roots != "":
		why = "not with ROOTS (the classes rewritten depend on the run)"
	case a.opts.JLM:
		why = "not with JLM (lock sites are numbered by the run)"
	case live:
		why = "not when attached (classes loaded before are retransformed, which the cache does not hold)"
	default:
		if full, err = checkBCICache(dir); err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		msg := "BCICACHE not used: " + why
		fmt.Fprintf(os.Stderr, "libjprof: warning: %s\n", msg)
		a.log.Warn(msg)
		a.notes = append(a.notes, msg)
		a.opts.BCICache = ""
		return
	}
	abs, _ := filepath.Abs(dir)
	a.opts.BCICache = abs
	cfg.Cache, cfg.CacheReadOnly = abs, full
	note := "BCI: BCICACHE " + abs + ": classes rewritten in earlier runs with the same transformer, settings and JVM are read from it instead of rewritten"
	if full {
		note += "; it holds " + bciCacheCapText + " or more, so this run adds none"
	}
	a.notes = append(a.notes, note)
	a.log.Info(note)
}
