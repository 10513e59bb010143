package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/libjprof/libjprof/jvmti"
)

// bciCacheCap bounds BCICACHE's directory: past it, the least recently
// written contexts are removed (bciCacheEvict), and a run adds no more
// than what is left.
const (
	bciCacheCap     = 256 << 20
	bciCacheCapText = "256 MiB"
)

// defaultBCICache is BCICACHE's directory when none is given, "" if
// there is no home to put it in.
func defaultBCICache() string {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "libjprof", "bci")
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Join(h, ".cache", "libjprof", "bci")
	}
	return ""
}

// defaultBase checks where the default directory goes: $XDG_CACHE_HOME,
// or the home directory (its .cache may be made), must exist and be this
// user's. A root process with another user's HOME (sudo keeping it)
// must not make root's directories in that user's home, nor a missing
// home.
func defaultBase(dir string) error {
	base := filepath.Dir(filepath.Dir(dir)) // <base>/libjprof/bci
	if !filepath.IsAbs(os.Getenv("XDG_CACHE_HOME")) {
		base = filepath.Dir(base) // <home>/.cache/libjprof/bci
	}
	var st unix.Stat_t
	if err := unix.Stat(base, &st); err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is not this user's (uid %d)", base, os.Geteuid())
	}
	return nil
}

// openBCICache makes BCICACHE's directory (this user's only) if it is
// missing, opens it and checks what it opened: a directory (not a
// symbolic link), this user's, not writable by group or others, since
// the classes in it run in the JVM. The agent works from the descriptor
// from then on, so the path cannot be swapped for another after the
// check. It also returns how many bytes a run may add (bciCacheCap less
// what the contexts hold, after evicting old ones).
func openBCICache(dir string) (fd int, budget int64, evicted []string, err error) {
	if dir == "" {
		return -1, 0, nil, errors.New("no directory to put it in (no $XDG_CACHE_HOME or home directory): give BCICACHE=dir")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return -1, 0, nil, err
	}
	fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, nil, fmt.Errorf("%s: %w (a directory, not a symbolic link)", dir, err)
	}
	var st unix.Stat_t
	switch err = unix.Fstat(fd, &st); {
	case err != nil:
	case int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("%s is not this user's (uid %d)", dir, os.Geteuid())
	case st.Mode&0o022 != 0:
		err = fmt.Errorf("%s is writable by others (mode %o)", dir, st.Mode&0o7777)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, nil, err
	}
	size, evicted := bciCacheEvict(dir)
	return fd, max(bciCacheCap-size, 0), evicted, nil
}

// bciCacheEvict measures the contexts' packs (ctx-*/p-*.jpk: nothing
// else in the directory counts, so that BCICACHE=$HOME costs no walk of
// it) and, past bciCacheCap, removes the least recently written
// contexts until they hold three quarters of it. A run that has a pack
// mapped keeps reading it. It returns the size left and what it removed.
func bciCacheEvict(dir string) (int64, []string) {
	type ctx struct {
		path  string
		size  int64
		mtime int64
	}
	var all []ctx
	var size int64
	dirs, _ := filepath.Glob(filepath.Join(dir, "ctx-*"))
	for _, d := range dirs {
		c := ctx{path: d}
		packs, _ := filepath.Glob(filepath.Join(d, "p-*.jpk"))
		for _, p := range packs {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
				c.size += fi.Size()
				c.mtime = max(c.mtime, fi.ModTime().UnixNano())
			}
		}
		size += c.size
		all = append(all, c)
	}
	if size < bciCacheCap {
		return size, nil
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mtime < all[j].mtime })
	var gone []string
	for _, c := range all {
		if size <= bciCacheCap*3/4 {
			break
		}
		if err := os.RemoveAll(c.path); err == nil {
			size -= c.size
			gone = append(gone, filepath.Base(c.path))
		}
	}
	return size, gone
}

// bciCache sets BCICACHE up in cfg, or says why it is not used: a
// cache that cannot be used costs the run its speed-up, never the run.
func (a *agent) bciCache(cfg *jvmti.BCIConfig, live bool) {
	if !a.opts.BCICacheOn {
		return
	}
	dir := a.opts.BCICache
	if abs, err := filepath.Abs(dir); err == nil && dir != "" {
		dir = abs
	}
	why := ""
	fd, budget := -1, int64(0)
	var evicted []string
	switch {
	case a.opts.Roots != "":
		why = "not with ROOTS (the classes rewritten depend on the run)"
	case a.opts.JLM:
		why = "not with JLM (lock sites are numbered by the run)"
	case live:
		why = "not when attached (classes loaded before are retransformed, which the cache does not hold)"
	default:
		var err error
		if dir != "" && a.opts.BCICache == defaultBCICache() {
			err = defaultBase(dir)
		}
		if err == nil {
			fd, budget, evicted, err = openBCICache(dir)
		}
		if err != nil {
			why = err.Error()
		}
	}
	if why != "" {
		msg := "BCICACHE not used: " + why
		a.warn(msg)
		a.notes = append(a.notes, msg)
		a.opts.BCICacheOn = false
		return
	}
	a.opts.BCICache = dir
	cfg.CacheFD, cfg.CacheBudget, cfg.CacheDir = fd, budget, dir
	note := "BCI: BCICACHE " + dir + ": classes rewritten in earlier runs with the same transformer, settings and JVM are read from it instead of rewritten"
	if budget == 0 {
		note += "; it holds " + bciCacheCapText + " or more, so this run adds none"
	}
	if len(evicted) > 0 {
		note += "; past " + bciCacheCapText + ", the oldest contexts were removed: " + strings.Join(evicted, ", ")
	}
	a.notes = append(a.notes, note)
	a.log.Info(note)
}
