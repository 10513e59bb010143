package attach

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Errors that Open's errors wrap, for errors.Is.
var (
	ErrNoProcess  = errors.New("no such process")
	ErrNotJVM     = errors.New("not a HotSpot JVM")
	ErrPermission = errors.New("not permitted")
	// ErrOtherJVM: the JVM's attach socket is another JVM's (one of the
	// same PID in another PID namespace sharing /tmp).
	ErrOtherJVM = errors.New("attach socket of another JVM")
)

// procRoot is where procfs is mounted; tests never change it, but one
// name keeps the paths readable.
const procRoot = "/proc"

// Target is a JVM as the caller sees it.
type Target struct {
	PID   int // in the caller's PID namespace
	NSPid int // in the JVM's own PID namespace (the last NSpid field)
	UID   int // effective uid, as the caller's user namespace sees it
	GID   int // effective gid, likewise
	// SameMountNS says the JVM shares the caller's mount namespace.
	SameMountNS bool
	// MainClass is what the JVM runs: the main class, the jar after
	// -jar, the module (or module/class) after -m, or the source file;
	// empty when the command line does not say.
	MainClass string
	Cmdline   []string // the JVM's argv
	// NoAttach: the JVM's hsperfdata says it does not support the
	// attach mechanism (-XX:+DisableAttachMechanism); see perfdata.go.
	// False when it cannot be told (-XX:-UsePerfData).
	NoAttach bool

	groups   []int  // effective gid and supplementary groups
	start    uint64 // start time in clock ticks, against pid reuse
	sameRoot bool   // same mount namespace and same root directory
	// sharedTmp: not sameRoot, but the JVM's /tmp is the caller's, the
	// same directory (device and inode): a JVM in a PID namespace of
	// its own that kept the host's /tmp (unshare -fp --mount-proc).
	sharedTmp  bool
	sameUserNS bool // shares the caller's user namespace
	noSwitch   bool // tests: never connect with the JVM's ids
	perf       perfMapping
}

// Open describes the JVM with host PID pid. It fails, without touching
// the process, when the process does not exist (ErrNoProcess), when the
// caller is neither root nor the JVM's effective uid (ErrPermission) or
// when it is not a HotSpot JVM (ErrNotJVM).
func Open(pid int) (*Target, error) {
	if pid <= 0 {
		return nil, &openError{fmt.Sprintf("invalid pid %d", pid), ErrNoProcess}
	}
	t, err := readStatus(pid)
	if err != nil {
		return nil, err
	}
	if me := os.Geteuid(); me != 0 && me != t.UID {
		return nil, &openError{fmt.Sprintf("pid %d runs as uid %d (%s); only that user or root can profile it",
			pid, t.UID, userName(t.UID)), ErrPermission}
	}
	if err := t.readRest(); err != nil {
		return nil, err
	}
	return t, nil
}

// Exited describes a JVM of host PID pid, run by uid and gid, that has
// exited, for reading what it left in the caller's own file system (a
// container's /tmp went with it): its Path is the caller's.
func Exited(pid, uid, gid int) *Target {
	return &Target{PID: pid, NSPid: pid, UID: uid, GID: gid, SameMountNS: true, sameRoot: true, sameUserNS: true}
}

// List returns the HotSpot JVMs that the caller may profile (its own
// uid's; every one for root), sorted by PID. Processes that exit or
// cannot be read while it looks are left out.
func List() ([]Target, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	me, self := os.Geteuid(), os.Getpid()
	var out []Target
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		t, err := readStatus(pid)
		if err != nil || (me != 0 && me != t.UID) {
			continue
		}
		if t.readRest() != nil {
			continue
		}
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// Path returns p, an absolute path inside the JVM's mount namespace, as
// the caller can reach it: through /proc/<pid>/root when the JVM's
// namespace or root directory differs from the caller's, but for a path
// under a /tmp that is the caller's own (TmpShared): that one stays
// reachable by its name once the JVM has exited and /proc/<pid>/root is
// gone, as the final log-rt its agent writes at VM death must be.
func (t *Target) Path(p string) string {
	p = path.Clean("/" + p)
	if t.sameRoot || (t.sharedTmp && (p == "/tmp" || strings.HasPrefix(p, "/tmp/"))) {
		return p
	}
	return fmt.Sprintf("%s/%d/root%s", procRoot, t.PID, p)
}

// TmpShared says whether the JVM, in a mount namespace or root of its
// own, has the caller's /tmp (the same directory, by device and inode,
// as Open saw it while the JVM ran).
func (t *Target) TmpShared() bool { return t.sharedTmp }

// String names the JVM for messages: "pid 1234 (Main)".
func (t *Target) String() string {
	if t.MainClass != "" {
		return fmt.Sprintf("pid %d (%s)", t.PID, t.MainClass)
	}
	return fmt.Sprintf("pid %d", t.PID)
}

type openError struct {
	msg  string
	kind error
}

func (e *openError) Error() string        { return e.msg }
func (e *openError) Is(target error) bool { return target == e.kind }

func procPath(pid int, name string) string {
	return fmt.Sprintf("%s/%d/%s", procRoot, pid, name)
}

// readStatus reads what /proc/<pid>/status says (anyone may read it).
func readStatus(pid int) (*Target, error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil, &openError{fmt.Sprintf("pid %d does not exist", pid), ErrNoProcess}
		}
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	t := &Target{PID: pid, NSPid: pid, UID: -1, GID: -1}
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "Uid":
			if len(f) > 1 {
				t.UID, _ = strconv.Atoi(f[1])
			}
		case "Gid":
			if len(f) > 1 {
				t.GID, _ = strconv.Atoi(f[1])
			}
		case "Groups":
			for _, g := range f {
				if n, err := strconv.Atoi(g); err == nil {
					t.groups = append(t.groups, n)
				}
			}
		case "NSpid":
			if len(f) > 0 {
				t.NSPid, _ = strconv.Atoi(f[len(f)-1])
			}
		}
	}
	if t.UID < 0 || t.GID < 0 {
		return nil, fmt.Errorf("pid %d: no Uid/Gid in %s", pid, procPath(pid, "status"))
	}
	t.groups = append(t.groups, t.GID)
	return t, nil
}

// readRest fills in what needs more than status: whether it is a
// HotSpot JVM, its namespaces, command line and start time.
func (t *Target) readRest() error {
	pid := t.PID
	raw, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil {
		return t.gone(err)
	}
	if len(raw) > 0 {
		t.Cmdline = strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	}
	kind, perf, err := vmKind(pid, t.NSPid)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("cannot tell whether pid %d is a JVM: %w", pid, err)
		}
		return t.gone(err)
	}
	switch kind {
	case "":
		return &openError{fmt.Sprintf("pid %d (%s) is not a HotSpot JVM: no libjvm.so in %s",
			pid, t.name(), procPath(pid, "maps")), ErrNotJVM}
	case "openj9":
		return &openError{fmt.Sprintf("pid %d (%s) is an OpenJ9 JVM, whose attach protocol differs from HotSpot's",
			pid, t.name()), ErrNotJVM}
	}
	if t.start, err = startTime(pid); err != nil {
		return t.gone(err)
	}
	mnt, err := sameFile("/proc/self/ns/mnt", procPath(pid, "ns/mnt"))
	if err != nil {
		return t.gone(err)
	}
	root, err := sameFile("/proc/self/root", procPath(pid, "root"))
	if err != nil {
		return t.gone(err)
	}
	if t.sameUserNS, err = sameFile("/proc/self/ns/user", procPath(pid, "ns/user")); err != nil {
		return t.gone(err)
	}
	t.SameMountNS, t.sameRoot = mnt, mnt && root
	if !t.sameRoot {
		// Read now: /proc/<pid>/root goes with the process. (A JVM
		// without a /tmp of its own to stat shares none.)
		t.sharedTmp, _ = sameFile("/tmp", procPath(pid, "root/tmp"))
	}
	t.MainClass = MainClass(t.Cmdline)
	t.perf = perf
	t.NoAttach = t.attachDisabled()
	return nil
}

// gone turns a failed read of /proc/<pid> into an error that says the
// process exited when it did.
func (t *Target) gone(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return &openError{fmt.Sprintf("pid %d does not exist (any more)", t.PID), ErrNoProcess}
	}
	return fmt.Errorf("pid %d: %w", t.PID, err)
}

// name is the program's name for messages.
func (t *Target) name() string {
	if len(t.Cmdline) > 0 && t.Cmdline[0] != "" {
		return filepath.Base(t.Cmdline[0])
	}
	if b, err := os.ReadFile(procPath(t.PID, "comm")); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "?"
}

// vmKind reads /proc/<pid>/maps: "hotspot" when libjvm.so is mapped,
// "openj9" when OpenJ9's libj9vm is too (OpenJ9 also has a libjvm.so),
// "" for no JVM; and the JVM's own hsperfdata file, named by nspid, its
// PID in its namespace, if it has it mapped (perfMappingOf).
func vmKind(pid, nspid int) (string, perfMapping, error) {
	var perf perfMapping
	f, err := os.Open(procPath(pid, "maps"))
	if err != nil {
		return "", perf, err
	}
	defer f.Close()
	jvm, j9 := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		// The path is the sixth field; a replaced library ends in
		// " (deleted)".
		i := bytes.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		if m, ok := perfMappingOf(line, nspid); ok && perf.path == "" {
			perf = m
		}
		p := strings.TrimSuffix(string(line[i:]), " (deleted)")
		base := path.Base(p)
		switch {
		case base == "libjvm.so":
			jvm = true
		case strings.HasPrefix(base, "libj9vm"):
			j9 = true
		}
	}
	if err := sc.Err(); err != nil {
		return "", perf, err
	}
	switch {
	case j9:
		return "openj9", perf, nil
	case jvm:
		return "hotspot", perf, nil
	}
	return "", perf, nil
}

// startTime is field 22 of /proc/<pid>/stat.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed %s", procPath(pid, "stat"))
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed %s", procPath(pid, "stat"))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// StartTicks is the process's start time as Open read it (field 22 of
// /proc/<pid>/stat, clock ticks since boot): what tells it from an
// earlier or later process of the same pid.
func (t *Target) StartTicks() uint64 { return t.start }

// alive says whether t.PID is still the process that Open saw.
func (t *Target) alive() bool {
	st, err := startTime(t.PID)
	return err == nil && st == t.start
}

// exitedSoon says whether the JVM is gone, or a zombie, now or within a
// second: a JVM killed while it served a request closes its sockets as
// it exits, just before the kernel makes it a zombie, so a reader that
// saw the connection close may look a moment too early.
func (t *Target) exitedSoon() bool { return t.exited(20) }

// exited says whether the JVM is gone (or a zombie, or another process
// has its pid), looking again every 50 ms, tries times more.
func (t *Target) exited(tries int) bool {
	for i := 0; ; i++ {
		b, err := os.ReadFile(procPath(t.PID, "stat"))
		if err != nil {
			return true
		}
		j := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[j+1:]))
		if j < 0 || len(f) < 20 {
			return false
		}
		if f[0] == "Z" || f[0] == "X" || f[19] != strconv.FormatUint(t.start, 10) {
			return true
		}
		if i >= tries {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// peerAccepted says whether HotSpot's peer check (root, or the JVM's own
// effective uid and gid) passes for this process's connection: it
// connects with the JVM's ids when it switches to them (asJVM), and with
// its own otherwise, which the JVM sees as they are only in the same
// user namespace.
func (t *Target) peerAccepted() bool {
	if t.switches() {
		return true
	}
	if !t.sameUserNS {
		return false
	}
	return os.Geteuid() == 0 || (os.Geteuid() == t.UID && os.Getegid() == t.GID)
}

// sameFile compares two paths' files by device and inode (for
// namespaces: by namespace).
func sameFile(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, &fs.PathError{Op: "stat", Path: a, Err: err}
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, &fs.PathError{Op: "stat", Path: b, Err: err}
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return "no name"
}

// launcher options whose value is the next argument.
var optWithValue = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true,
	"-p": true, "--module-path": true, "--upgrade-module-path": true,
	"--add-modules": true, "--limit-modules": true, "--add-reads": true,
	"--add-exports": true, "--add-opens": true, "--patch-module": true,
	"--source": true, "--enable-native-access": true,
	"--describe-module": true, "-d": true,
}

// MainClass finds what a java command line runs: the first argument
// after the JVM's options, the jar after -jar, or the module after
// -m/--module. It returns "" when there is none (e.g. -version). A
// process not started by the java launcher (a JDK tool such as javac,
// whose main class is built into its launcher, or a program that embeds
// the JVM) has arguments of its own, not the java launcher's: it is named
// by its program instead.
func MainClass(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	if base := filepath.Base(argv[0]); base != "java" && base != "javaw" {
		return base
	}
	if len(argv) < 2 {
		return ""
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-jar" || a == "-m" || a == "--module":
			if i+1 < len(argv) {
				return argv[i+1]
			}
			return ""
		case strings.HasPrefix(a, "--module="):
			return strings.TrimPrefix(a, "--module=")
		case optWithValue[a]:
			i++
		case strings.HasPrefix(a, "-"), strings.HasPrefix(a, "@"):
			// A one-word option, or an @argfile (whose contents, which
			// may name the class, are not read).
		default:
			return a
		}
	}
	return ""
}
